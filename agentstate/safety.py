"""Content checks shared by every write path: secrets (refuse) and injected instructions.

Secrets are refused before anything is stored: callers must check text *before* it reaches a
table, a history row or a log line. Messages name the kind of secret, never its value.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from typing import Any

from agentstate.errors import Refused
from agentstate.lazy_re import LazyPattern

# redact_secrets lives with the scanner so errors.py can redact messages without importing
# this module (which raises errors.Refused): no cycle between the two.
from agentstate.secret_formats import by_rarest_character
from agentstate.secret_scan import (
    Finding,
    Scanned,
    find_secrets,
    redact_secrets,
    remove_invisible,
    shannon_entropy,
)

__all__ = ["Finding", "Scanned", "find_injection", "find_secrets", "redact_secrets",
           "refuse_secrets", "refuse_secrets_in_meta", "remove_invisible", "scannable_text",
           "shannon_entropy"]


def refuse_secrets(text: str, what: str = "text") -> None:
    """Raise Refused (exit 3) naming the kinds of secret found; never echo the value."""
    findings = find_secrets(text)
    if findings:
        kinds = sorted({f.kind for f in findings})
        raise Refused(
            f"{what} looks like it contains a secret ({', '.join(kinds)}); nothing was stored",
            details={"secret_kinds": kinds},
        )


def refuse_secrets_in_meta(meta: dict[str, Any], meta_json: str, what: str = "the meta"
                           ) -> None:
    """refuse_secrets on a meta as stored (`meta_json`, its JSON), leaving out its top-level
    values the scanner has already found clean (`Scanned`: a tool event's excerpt, command
    and path, most of its meta). Their keys and every other value are still scanned."""
    if any(isinstance(value, Scanned) for value in meta.values()):
        meta_json = json.dumps({key: "" if isinstance(value, Scanned) else value
                                for key, value in meta.items()},
                               ensure_ascii=False, sort_keys=True)
    refuse_secrets(meta_json, what)


# Compiled on first use: most commands (context, recall, trace) never check for injection.
# Matched on text with invisible characters removed and whitespace runs collapsed to one
# space, so every pattern can use single spaces. Every repeat is bounded (linear time).
_SHELLS = (r"(?:sudo (?:-\S{1,20} ){0,3})?(?:ba|z|da|k|fi|c|tc)?sh|python[0-9.]{0,5}|perl|ruby"
           r"|node|php|pwsh|powershell|iex|osascript|source")
_FETCH = r"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c|http|lynx)"
_INJECTION_SOURCES = (
    # "ignore / disregard / forget the previous instructions", "ignore the instructions above"
    r"\b(?:ignore|disregard|forget|skip|override|bypass|discard|drop) (?:all |any |of |the |your "
    r"|my |these |those |every ){0,3}(?:(?:previous|prior|above|earlier|preceding|foregoing|"
    r"former|original|initial|system|existing|current|other) ){0,2}(?:instructions?|prompts?|"
    r"rules|directions|directives|guidelines|guidance|context|messages?|commands|orders|"
    r"constraints|safety|policies)\b",
    r"\b(?:ignore|disregard|forget) (?:all |any |the |everything |what(?:ever)? )?(?:(?:was |is |"
    r"you (?:were|have been) )?(?:said|told|written|given) )?(?:above|before|previously|earlier)\b",
    r"\bdisregard (?:all |any |the )?(?:previous|prior|above|earlier|your) ",
    r"\byou are now\b",
    r"\bfrom now on,? you (?:are|will|must)\b",
    r"\bnew instructions? ?:",
    r"\bsystem prompt\b",
    r"\b(?:run|execute) (?:this|the following)\b",
    r"\b(?:send|post|upload|exfiltrate|forward)\b.{0,60}\b(?:to|at) (?:https?://|\S{1,256}@"
    r"\S{1,256}|this (?:url|address|server))",
    # Pipe-to-shell: `curl URL | sh`, `wget -qO- URL | sudo bash`, `curl URL | python3 -`.
    rf"\b{_FETCH}\b[^\n|]{{0,500}}\| ?(?:{_SHELLS})\b",
    # Process substitution and command substitution of a download: `bash <(curl …)`,
    # `source <(wget …)`, `sh -c "$(curl …)"`, `eval "$(curl …)"`.
    rf"(?:\b(?:{_SHELLS})|\.) ?<\( ?{_FETCH}\b",
    rf"\b(?:eval|(?:{_SHELLS}) -c) ?[\"']?\$\( ?{_FETCH}\b",
    rf"\b(?:{_SHELLS}) ?<<< ?[\"']?\$\( ?{_FETCH}\b",
    r"\b(?:publish|approve|install) (?:this|the following|a new) skill\b",
    r"\bas an ai (?:agent|assistant),? you must\b",
    r"\bdo not (?:tell|inform) the user\b",
    r"\b(?:forget|override|bypass) (?:all |any |your |the )?(?:previous |prior )?"
    r"(?:instructions|rules|guidelines|safety)\b",
    # Chinese and Japanese forms of "ignore the previous instructions" / "you are now".
    r"(?:忽略|无视|忽視|無視)(?:掉)?(?:之前|以上|上面|前面|先前|所有|全部)?的?(?:所有|全部)?"
    r"(?:指令|指示|提示|规则|規則)",
    r"(?:以前|前)の(?:指示|命令)を(?:無視|忘れ)",
    r"你现在是|你現在是",
    # More Chinese and Japanese: "forget the previous instructions", "from now on you are",
    # "ignore all instructions" with the verb last.
    r"(?:忘记|忘掉|忘記)(?:之前|以上|上面|前面|先前|所有|全部)?的?(?:所有|全部)?(?:指令|指示|规则|規則)",
    r"(?:从现在开始|從現在開始|从现在起)(?:，|,)? ?你(?:是|要|必须|必須)",
    r"系统提示|系統提示|システムプロンプト",
    r"(?:指示|命令|ルール|プロンプト)を(?:すべて|全て|全部)?(?:無視|忘れ)",
    r"(?:今から|これから)(?:は)?あなたは",
    # French, German, Spanish: "ignore / forget the previous instructions", "you are now",
    # "from now on you must".
    r"\b(?:ignore[rz]?|oublie[rz]?|n'?obéis plus à) (?:toutes |tous )?(?:les |tes |vos |des )?"
    r"(?:instructions|consignes|règles|directives|ordres)(?: (?:précédentes|précédents|"
    r"ci-dessus|antérieures|d'avant|initiales|du système))?\b",
    r"\b(?:tu es|vous êtes) (?:maintenant|désormais|dorénavant)\b",
    r"\b(?:à partir de maintenant|désormais|dorénavant),? (?:tu|vous) (?:es|êtes|dois|devez)\b",
    r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen sie|missachte) (?:bitte )?(?:alle |die |deine "
    r"|ihre ){0,2}(?:vorherigen |obigen |bisherigen |vorigen |früheren |ursprünglichen )?"
    r"(?:anweisungen|instruktionen|regeln|vorgaben|befehle)\b",
    r"\b(?:du bist|sie sind) (?:jetzt|ab jetzt|nun|ab sofort)\b",
    r"\b(?:ab jetzt|von nun an|ab sofort),? (?:bist|musst|wirst|sollst) du\b",
    r"\b(?:ignora|ignore|ignorar|olvida|olvide|olvidar|omite) (?:todas |todos )?(?:las |los |tus "
    r"|sus )?(?:instrucciones|reglas|indicaciones|órdenes|directrices)(?: (?:anteriores|previas|"
    r"de arriba|del sistema))?\b",
    r"\b(?:ahora eres|ahora usted es)\b",
    r"\b(?:a partir de ahora|de ahora en adelante),? (?:eres|debes|vas a|tienes que)\b",
)

# Rules aimed at the agent ("from now on, always skip the tests", "never run the linter"):
# ordinary in what the user says, an injection in data that is not the user's (tool output,
# files, imported records). Checked only when the caller says the text is not the user's.
_RULE_SOURCES = (
    r"\b(?:from now on|going forward|henceforth|from this point on)\b,? (?:you )?(?:should |must "
    r"|will |shall )?(?:always|never|do not|don't|skip|ignore|stop|only|run|use|disable|bypass|"
    r"treat|trust|approve|push|delete|remove|send)\b",
    r"(?:^|[.!;:\n] ?|\byou (?:should |must |will )?)(?:always|never) (?:skip|bypass|disable|"
    r"ignore|run|push|commit|delete|remove|approve|publish|trust|tell|send|force|merge|deploy|"
    r"answer|reply|obey|follow|execute|use|mention|report)\b",
    r"\b(?:don't|do not) (?:ever )?(?:run|execute) (?:the )?(?:tests?|linters?|checks?|"
    r"test suite|ci)\b",
    r"\b(?:à partir de maintenant|désormais|dorénavant),? (?:il faut )?(?:toujours|jamais|ne "
    r"(?:lance|exécute|fais)|ignore|saute)",
    r"\b(?:ab jetzt|von nun an|ab sofort|künftig),? (?:immer|nie|niemals|keine?|überspringe|"
    r"ignoriere)",
    r"\b(?:a partir de ahora|de ahora en adelante|en adelante),? (?:siempre|nunca|no (?:ejecutes|"
    r"corras|hagas)|omite|ignora|salta)",
    r"(?:从现在开始|從現在開始|从现在起|今后|以后)(?:，|,)? ?(?:请)?"
    r"(?:总是|始终|永远|一律|不要|别|跳过|忽略)",
    r"(?:今後は|これからは|今後|以後)(?:、)?(?:常に|必ず|決して|絶対に|テストを(?:スキップ|飛ばし))",
)
_RULE_ANCHORS: tuple[tuple[str, ...], ...] = (
    ("from now on", "going forward", "henceforth", "from this point on"),
    ("always", "never"), ("don't", "do not"),
    ("maintenant", "désormais", "dorénavant"), ("ab jetzt", "von nun an", "ab sofort", "künftig"),
    ("a partir de ahora", "adelante"), ("现在", "現在", "今后", "以后"),
    ("今後", "これから", "以後"),
)
_SPACES = LazyPattern(r"\s+")


# A pattern runs only when one of its words is in the lower-cased text (as for secrets: a
# substring test is far cheaper than a regex pass over a long text).
_INJECTION_ANCHORS: tuple[tuple[str, ...], ...] = (
    ("ignore", "disregard", "forget", "skip", "override", "bypass", "discard", "drop"),
    ("ignore", "disregard", "forget"), ("disregard",), ("you are now",), ("from now on",),
    ("instruction",), ("system prompt",), ("run", "execute"),
    ("send", "post", "upload", "exfiltrate", "forward"), ("|",), ("<(",), ("$(",), ("<<<",),
    ("publish", "approve", "install"), ("as an ai",), ("do not",),
    ("forget", "override", "bypass"), ("忽", "无视", "無視"), ("無視", "忘れ"), ("你",),
    ("忘",), ("现在", "現在"), ("提示", "プロンプト"), ("無視", "忘れ"), ("あなた",),
    ("ignore", "oublie", "obéis"), ("maintenant", "désormais", "dorénavant"),
    ("maintenant", "désormais", "dorénavant"),
    ("ignorier", "vergiss", "vergessen", "missachte"), ("du bist", "sie sind"),
    ("ab jetzt", "von nun an", "ab sofort"),
    ("ignora", "ignore", "olvid", "omite"), ("ahora",), ("ahora", "adelante"),
)


_AnchorGroups = tuple[tuple[str, tuple[tuple[str, tuple[int, ...]], ...]], ...]


def _anchor_table(groups: tuple[tuple[str, ...], ...]) -> _AnchorGroups:
    """(anchor, indexes of the patterns it lets run), each distinct word once (not once per
    pattern naming it), grouped under the word's rarest character as the secret scanner's
    anchors are: a text without that character skips the group's substring searches for one
    character test (issue 24: a sync import checks every record it inserts)."""
    table: dict[str, list[int]] = {}
    for index, anchors in enumerate(groups):
        for anchor in anchors:
            table.setdefault(anchor, []).append(index)
    return by_rarest_character(tuple((anchor, tuple(indexes))
                                      for anchor, indexes in table.items()))


def _to_run(table: _AnchorGroups, lower: str) -> list[int]:
    """Indexes of the patterns one of whose anchors is in `lower`, in the patterns' order."""
    return sorted({i for char, members in table if char in lower
                   for anchor, indexes in members if anchor in lower for i in indexes})


@cache
def _injection_pattern(index: int) -> re.Pattern[str]:
    return re.compile(_INJECTION_SOURCES[index], re.IGNORECASE)


@cache
def _rule_pattern(index: int) -> re.Pattern[str]:
    return re.compile(_RULE_SOURCES[index], re.IGNORECASE)


_INJECTION_TABLE = _anchor_table(_INJECTION_ANCHORS)
_RULE_TABLE = _anchor_table(_RULE_ANCHORS)


def _flatten(text: str) -> str:
    """The text the patterns read: invisible characters removed, NFKC (full-width letters,
    `ｉｇｎｏｒｅ`, read as the words they spell), each whitespace run one space. A text with
    no run to collapse is left as it is: every whitespace character but the space is
    unprintable (a test checks every code point), so a printable text without two spaces in
    a row has none, and the substitution, most of this check's time on a short text, is
    skipped (issue 24)."""
    flat = unicodedata.normalize("NFKC", remove_invisible(text))
    if "  " not in flat and flat.isprintable():
        return flat
    return _SPACES.sub(" ", flat)


def find_injection(text: str, *, from_user: bool = True) -> list[str]:
    """Phrases that read as instructions aimed at the agent. With `from_user=False` (tool
    output, files, records from elsewhere) rules for the agent ("from now on, always skip the
    tests") count too: only the user sets those."""
    flat = _flatten(text)
    lower = flat.lower()
    found = []
    for index in _to_run(_INJECTION_TABLE, lower):
        m = _injection_pattern(index).search(flat)
        if m:
            found.append(m.group(0))
    if not from_user:
        for index in _to_run(_RULE_TABLE, lower):
            m = _rule_pattern(index).search(flat)
            if m:
                found.append(m.group(0))
    return found


# ---------------------------------------------------------------- files of any encoding

_PRINTABLE_RUN = LazyPattern(rb"[\x20-\x7e\t]{4,}")
_UTF16LE_RUN = LazyPattern(rb"(?:[\x20-\x7e]\x00){4,}")
_UTF16BE_RUN = LazyPattern(rb"(?:\x00[\x20-\x7e]){4,}")


def scannable_text(data: bytes) -> tuple[str, bool]:
    """The text a scanner should read in a file of any encoding, and whether it was text.

    UTF-8 (with or without BOM) and UTF-16/32 with a BOM are decoded; anything else is binary,
    read like `strings` does: its printable ASCII runs and its UTF-16 runs, one per line.
    """
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32"),
                       (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"),
                       (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(codec), True
            except UnicodeDecodeError:
                break
    else:
        try:
            return data.decode("utf-8"), True
        except UnicodeDecodeError:
            pass
    runs = [m.group(0).decode("ascii") for m in _PRINTABLE_RUN.finditer(data)]
    runs += [m.group(0).decode("utf-16-le") for m in _UTF16LE_RUN.finditer(data)]
    runs += [m.group(0).decode("utf-16-be") for m in _UTF16BE_RUN.finditer(data)]
    return "\n".join(runs), False
