"""The first layer of the secret detector (agentstate.secret_scan): known formats — fixed
prefixes (`ghp_`, `AKIA`, `xoxb-`, `sk_live_` …), shapes (JWTs, webhooks, credentials in
URLs, CLI password flags) and private key blocks.

Each format lists the anchors a text must hold for its pattern to be worth running, so a text
pays only for the patterns whose anchors it holds; the table is data, the scan that combines
it with the other layers lives in secret_scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from agentstate.lazy_re import LazyPattern


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int




# Token characters: a look-behind on these keeps a pattern from starting mid-token.
_T = r"A-Za-z0-9_\-"

# (kind, pattern, anchors): a pattern runs only when one of its anchors is in the text (in
# the lower-cased text for a case-insensitive pattern): a substring test costs far less than
# a regex pass, so most patterns never run on a given text.
KNOWN_FORMATS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("AWS access key", r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"
                       r"(?![A-Z0-9])",
     ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA")),
    ("GitHub token", r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,255}",
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("GitHub token", r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,255}",
     ("github_pat_",)),
    ("GitLab token", r"(?<![A-Za-z0-9_])gl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_\-]{20,255}",
     ("gl",)),
    ("Bitbucket token", r"(?<![A-Za-z0-9_])ATBB[A-Za-z0-9_\-]{24,255}",
     ("ATBB",)),
    ("OpenAI-style API key", rf"(?<![{_T}])sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-)?"
                             r"[A-Za-z0-9_\-]{20,255}",
     ("sk-",)),
    ("Slack token", r"(?<![A-Za-z0-9_])xox[abposre]-[A-Za-z0-9\-]{10,255}",
     ("xox",)),
    ("Slack token", r"(?<![A-Za-z0-9_])xapp-\d-[A-Za-z0-9\-]{10,255}",
     ("xapp-",)),
    ("Slack webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{16,255}",
     ("hooks.slack.com",)),
    ("Discord webhook", r"discord(?:app)?\.com/api/webhooks/\d{5,30}/[A-Za-z0-9_\-]{20,255}",
     ("discord",)),
    ("Microsoft Teams webhook", r"\.webhook\.office\.com/webhookb2/[A-Za-z0-9@\-]{20,255}",
     ("webhook.office.com",)),
    ("Google API key", r"(?<![A-Za-z0-9_])AIza[0-9A-Za-z_\-]{35}",
     ("AIza",)),
    ("Google OAuth token", r"(?<![A-Za-z0-9_])ya29\.[0-9A-Za-z_\-]{20,255}",
     ("ya29.",)),
    ("npm token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}",
     ("npm_",)),
    ("PyPI token", r"(?<![A-Za-z0-9_])pypi-AgE[A-Za-z0-9_\-]{40,255}",
     ("pypi-AgE",)),
    ("Hugging Face token", r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,255}",
     ("hf_",)),
    ("Stripe key", r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,255}",
     ("_live_", "_test_")),
    ("Stripe webhook secret", r"(?<![A-Za-z0-9_])whsec_[0-9A-Za-z]{24,255}",
     ("whsec_",)),
    ("Square token", r"(?<![A-Za-z0-9_])sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,255}",
     ("sq0",)),
    ("Shopify token", r"(?<![A-Za-z0-9_])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
     ("shp",)),
    ("SendGrid key", r"(?<![A-Za-z0-9_])SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}",
     ("SG.",)),
    ("Twilio key", r"(?<![A-Za-z0-9_])SK[0-9a-fA-F]{32}(?![0-9a-fA-F])",
     ("SK",)),
    ("Mailgun key", r"(?<![A-Za-z0-9_])key-[0-9a-zA-Z]{32}(?![0-9a-zA-Z])",
     ("key-",)),
    ("Mailchimp key", r"(?<![A-Za-z0-9_])[0-9a-f]{32}-us\d{1,2}(?!\d)",
     ("-us",)),
    ("DigitalOcean token", r"(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}",
     ("_v1_",)),
    ("Databricks token", r"(?<![A-Za-z0-9_])dapi[a-f0-9]{32}",
     ("dapi",)),
    ("Artifactory token", r"(?<![A-Za-z0-9])AKC[a-zA-Z0-9]{60,90}(?![A-Za-z0-9])",
     ("AKC",)),
    ("Discord bot token", r"(?<![A-Za-z0-9_\-])[MNO][a-zA-Z0-9_\-]{23,25}\.[a-zA-Z0-9_\-]{6}"
                          r"\.[a-zA-Z0-9_\-]{27,38}(?![A-Za-z0-9_\-])",
     ("M", "N", "O")),
    ("Telegram bot token", r"(?<![A-Za-z0-9_:])\d{8,10}:AA[A-Za-z0-9_\-]{33,64}",
     (":AA",)),
    ("Azure storage key", r"(?i)(?<![a-z0-9])(?:AccountKey|SharedAccessKey|SharedAccessSignature)"
                          r"[ \t]{0,4}=[ \t]{0,4}[A-Za-z0-9+/%]{16,512}",
     ("accountkey", "sharedaccess")),
    ("JSON web token", rf"(?<![{_T}])eyJ[A-Za-z0-9_\-]{{8,4096}}\.eyJ[A-Za-z0-9_\-]{{8,8192}}"
                       r"\.[A-Za-z0-9_\-]{8,4096}",
     ("eyJ",)),
    ("bearer token", r"(?i)(?<![a-z0-9])bearer[ \t]{1,8}[A-Za-z0-9._~+/=\-]{20,4096}",
     ("bearer",)),
    ("basic auth header", r"(?i)\bauthorization:[ \t]{0,8}basic[ \t]{1,8}[A-Za-z0-9+/=]{8,512}",
     ("authorization",)),
    # `scheme://user:pass@` and `redis://:pass@`: userinfo may not hold `/`, so each attempt
    # stops at the next `//`.
    ("credential in URL", r"(?i)(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]{0,31}://[^\s/:@]{0,256}:"
                          r"[^\s/@]{1,256}@",
     ("://",)),
    # mysql -pPASS (the value is glued to -p), and --password=…/--token … on any command.
    ("password on the command line", r"(?<![A-Za-z0-9_\-])(?:mysql|mysqldump|mysqladmin|"
     r"mariadb|mysqlimport|mysqlshow|mysqlcheck)(?![A-Za-z0-9_\-])[^\n|;&]{0,200}?[ \t]-p"
     r"(?![ \t\-])[^\s\"']{2,256}",
     ("mysql", "mariadb")),
    ("password on the command line", r"(?i)(?<![a-z0-9])--(?:[a-z0-9]{1,20}-){0,3}"
     r"(?:password|passwd|pass|token|api-?key|secret|access-key|client-secret|auth-token)"
     r"(?:=|[ \t]{1,4})[\"']?(?![\-$<{])[^\s\"']{4,256}",
     ("--",)),
    ("sshpass password", r"(?<![A-Za-z0-9_])sshpass[ \t]{1,8}-p[ \t]{0,8}[\"']?[^\s\"']{2,256}",
     ("sshpass",)),
    ("age secret key", r"(?<![A-Za-z0-9_])AGE-SECRET-KEY-1[0-9A-Za-z]{20,100}",
     ("AGE-SECRET-KEY-",)),
    # Prefixes a provider puts before its tokens. The body may use any alphabet (hex-only,
    # lower-case only, upper-case only): the prefix alone says what it is.
    ("known token prefix", r"(?<![A-Za-z0-9_\-])(?:pul-|sbp_|rubygems_|PMAK-|NRAK-|NRJS-|NRII-|"
     r"glsa_|glc_|hvs\.|hvb\.|dckr_pat_|lin_api_|figd_|pscale_(?:pw|tkn|oauth)_|"
     r"dp\.(?:pt|st|sa|ct)\.|xkeysib-|FLWSECK(?:_TEST)?-|sntry[su]_|ntn_|CFPAT-|ATATT3)"
     r"[A-Za-z0-9_\-=]{16,512}",
     ("pul-", "sbp_", "rubygems_", "PMAK-", "NRAK-", "NRJS-", "NRII-", "glsa_", "glc_", "hvs.",
      "hvb.", "dckr_pat_", "lin_api_", "figd_", "pscale_", "dp.", "xkeysib-", "FLWSECK",
      "sntry", "ntn_", "CFPAT-", "ATATT3")),
    # .netrc (one line or several): `machine h login ci password VALUE`.
    ("password in .netrc form", r"(?i)(?<![a-z0-9_\-])(?:login|user)\s{1,20}[^\s]{1,256}"
     r"\s{1,20}(?:password|passwd)\s{1,20}(?=[^\s]{4,256})(?!\$|<|\{)[^\s]{4,256}",
     ("password", "passwd")),
)

def anchor_table(case_insensitive: bool) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(anchor, indexes in KNOWN_FORMATS of the patterns it lets run), for the patterns matched
    case-insensitively (anchors looked for in the lower-cased text) or the others. Built
    once: walking KNOWN_FORMATS with a generator per pattern was most of a short text's scan."""
    table: dict[str, list[int]] = {}
    for index, (_, source, anchors) in enumerate(KNOWN_FORMATS):
        if source.startswith("(?i)") == case_insensitive:
            for anchor in anchors:
                table.setdefault(anchor, []).append(index)
    return tuple((anchor, tuple(indexes)) for anchor, indexes in table.items())


# Characters from the most to the least frequent in what agents log (prose, code, test
# output, diffs), roughly; a character not listed counts as rarer than all of them.
_BY_FREQUENCY = (" etaoinsrlcdhupmfgy_.bw/-:=v,k0123456789xESTARIOCNLDPFjMqBzHGUKWVYJXQZ")
_AnchorGroups = tuple[tuple[str, tuple[tuple[str, tuple[int, ...]], ...]], ...]


def by_rarest_character(table: tuple[tuple[str, tuple[int, ...]], ...]) -> _AnchorGroups:
    """The anchors grouped under their rarest character: a text holds an anchor only if it
    holds each of its characters, so a group is looked at only when the text holds its
    character — a one-character test (memchr), where each anchor's own is a substring
    search. Any character would be exact; the rarest skips the most groups."""
    def rarity(char: str) -> int:
        return _BY_FREQUENCY.find(char) if char in _BY_FREQUENCY else len(_BY_FREQUENCY)

    groups: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for anchor, indexes in table:
        groups.setdefault(max(anchor, key=rarity), []).append((anchor, indexes))
    return tuple((char, tuple(members)) for char, members in groups.items())


_ANCHORS = by_rarest_character(anchor_table(case_insensitive=False))
_ANCHORS_LOWER = by_rarest_character(anchor_table(case_insensitive=True))


def formats_to_run(text: str, lower: str) -> list[int]:
    """Indexes of the formats one of whose anchors is in the text, in KNOWN_FORMATS order."""
    wanted = {i for char, members in _ANCHORS if char in text
              for anchor, indexes in members if anchor in text for i in indexes}
    wanted.update(i for char, members in _ANCHORS_LOWER if char in lower
                  for anchor, indexes in members if anchor in lower for i in indexes)
    return sorted(wanted)


@cache
def compiled_format(source: str) -> re.Pattern[str]:
    """Patterns compile on first use: a command pays only for the ones its text needs."""
    return re.compile(source)


_PRIVATE_KEY = LazyPattern(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PUTTY_KEY = LazyPattern(r"PuTTY-User-Key-File-\d: ")


def private_key_blocks(text: str) -> list[Finding]:
    """A key block from its BEGIN line to its END line (or the end of the text when cut)."""
    found = []
    for pattern, marker in ((_PRIVATE_KEY, "-----BEGIN"), (_PUTTY_KEY, "PuTTY-User-Key-File-")):
        if marker not in text:  # what every match starts with: most texts compile neither
            continue
        pos = 0
        while True:
            m = pattern.search(text, pos)
            if m is None:
                break
            end_marker = text.find("-----END", m.end()) if pattern is _PRIVATE_KEY else -1
            if end_marker < 0:
                end = len(text)
            else:
                close = text.find("-----", end_marker + 8)
                end = close + 5 if close >= 0 else len(text)
            found.append(Finding("private key", m.start(), end))
            pos = end
    return found
