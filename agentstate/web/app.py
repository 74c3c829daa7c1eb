"""The ui's ASGI application: routes, the guard in front of them, errors as pages.

Each request opens the store afresh (so what other processes wrote is seen, as the MCP
server does), runs one view in Starlette's thread pool, and closes it. A store locked by a
writer answers a page that says so and reloads itself; a domain error (not found, invalid
input, refused by a gate) answers a page with its message and the CLI's exit-code family as
the HTTP status; nothing ever shows a traceback.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agentstate.errors import AgentStateError, NotFound, Refused
from agentstate.web import views
from agentstate.web.security import Guard

HERE = Path(__file__).parent
# How long a page waits for a writer's lock before it says the store is locked (the CLI
# waits longer: a page that answers, then retries, beats one that hangs).
BUSY_MS = 750
RETRY_SECONDS = 2
# Stored text longer than this is cut on list pages, with a link to the whole.
CUT_CHARS = 600
WHOLE_CHARS = 20_000  # the event page, before ?whole=1
REF = re.compile(r"\b(?:evt|mem|pack|run):[A-Za-z0-9_-]+(?:@v\d+)?|\bskill:[A-Za-z0-9_.-]+"
                 r"(?:@v\d+)?")
# What the browser may load: only this server's files; no inline script runs even if a
# stored text ever reached the page unescaped.
# connect-src: the page's script fetches the previews of "what the model saw" from here.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def ref_url(ref: str) -> str:
    """Where a ref is shown: its own page (a skill's page for a skill version)."""
    kind, _, rest = ref.partition(":")
    ident = rest.split("@", 1)[0]
    if kind == "evt":
        return f"/events/{ident}"
    if kind == "run":
        return f"/runs/{ident}"
    if kind == "pack":
        return f"/packs/{ident}"
    if kind == "mem":
        return f"/memory/{rest}"
    if kind == "skill":
        return f"/skills/{ident}"
    return f"/trace/{ref}"


def _show(text: Any) -> str:
    """Stored text as a person should see it: control characters and escape sequences
    written out (output.visible, the CLI's rule); autoescape then escapes the HTML."""
    from agentstate.output import visible

    return visible("" if text is None else str(text))


def _reflink(ref: Any) -> Markup:
    ref = "" if ref is None else str(ref)
    if not REF.fullmatch(ref):
        return Markup(escape(_show(ref)))
    return Markup(f'<a class="ref" href="{escape(ref_url(ref))}">{escape(ref)}</a>')


def _linkrefs(text: Any) -> Markup:
    """Escape the text, then make every ref in it a link (refs hold no character that
    escaping changes, so they are found in the escaped text as written)."""
    safe = str(escape(_show(text)))
    return Markup(REF.sub(lambda m: str(_reflink(m.group(0))), safe))


def _cut(text: Any, limit: int = CUT_CHARS) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit]


def _with_param(request: Request, key: str, value: str) -> str:
    """This page's query string with `key` set to `value` (the other parameters kept)."""
    kept = [(k, v) for k, v in request.query_params.multi_items() if k != key]
    return urlencode([*kept, (key, value)])


def environment(guard: Guard) -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(show=_show, reflink=_reflink, linkrefs=_linkrefs, cut=_cut)
    env.globals.update(csrf=guard.csrf, ref_url=ref_url, CUT_CHARS=CUT_CHARS,
                       urlencode=urlencode, with_param=_with_param)
    return env


def create_app(store_dir: str | Path, guard: Guard) -> _Guarded:
    pages = _Pages(environment(guard), store_dir, guard)
    return _Guarded(Starlette(routes=_routes(pages)), guard)


def _q(request: Request, name: str) -> str:
    return request.query_params.get(name, "").strip()


def _before(request: Request) -> int | None:
    return _number(request, "before", 0) or None


def _number(request: Request, name: str, default: int) -> int:
    raw = _q(request, name)
    if not raw:
        return default
    if not raw.isdigit():
        from agentstate.errors import InvalidInput

        raise InvalidInput(f"{name} must be a number, not {raw!r}")
    return int(raw)


class _Pages:
    """What every page shares: the templates, a store opened per request, one failure page."""

    def __init__(self, env: Any, store_dir: str | Path, guard: Guard) -> None:
        from agentstate.store.db import DB_NAME
        from agentstate.web.previews import Previews

        self.env, self.store_dir, self.guard = env, store_dir, guard
        self.previews = Previews(Path(store_dir) / DB_NAME)

    def render(self, request: Request, template: str, http_status: int = 200, **context: Any
               ) -> HTMLResponse:
        body = self.env.get_template(template).render(request=request, path=request.url.path,
                                                      **context)
        return HTMLResponse(body, status_code=http_status)

    def with_store(self, view: Callable[..., Any]) -> Any:
        from agentstate.store.db import open_store

        store = open_store(self.store_dir, migrate=False)
        try:
            store.set_busy_timeout(BUSY_MS)
            return view(store)
        finally:
            store.close()

    def page(self, template: str, view: Callable[[Any, Request], dict[str, Any]]
             ) -> Callable[[Request], Any]:
        def endpoint(request: Request) -> Response:
            try:
                data = self.with_store(lambda store: {"queue": views.review_counts(store),
                                                      **view(store, request)})
                return self.render(request, template, **data)
            except Exception as exc:  # every failure becomes a page (see failure)
                return self.failure(request, exc)
        return endpoint

    def failure(self, request: Request, exc: Exception) -> Response:
        if _locked(exc):
            # A page retries by itself; a form is not sent twice behind the user's back.
            retry = RETRY_SECONDS if request.method == "GET" else None
            return self.render(request, "locked.html", http_status=503, retry=retry)
        if isinstance(exc, AgentStateError):
            status = 404 if isinstance(exc, NotFound) else 403 if isinstance(exc, Refused) \
                else 400
            return self.render(request, "error.html", http_status=status, message=str(exc))
        import traceback

        from agentstate.output import warn

        # The terminal gets the whole story (it is the developer's); the page, one line.
        warn(f"ui: {request.url.path}: {type(exc).__name__}: {exc}\n"
             + "".join(traceback.format_exception(exc)))
        return self.render(request, "error.html", http_status=500,
                           message=f"internal error ({type(exc).__name__}); see the terminal")

    async def memory_post(self, request: Request) -> Response:
        form = await request.form()
        if not self.guard.csrf_ok(str(form.get("csrf") or "")):
            return PlainTextResponse("refused: the form's CSRF token is missing or wrong", 403)
        action = request.path_params["action"]
        ref = request.path_params["ref"]
        from starlette.concurrency import run_in_threadpool

        def act(store: Any) -> str:
            return views.memory_action(store, action, ref, reason=str(form.get("reason") or ""),
                                       evidence=str(form.get("evidence") or ""))
        try:
            said = await run_in_threadpool(self.with_store, act)
        except Exception as exc:
            return self.failure(request, exc)
        return RedirectResponse("/memory?" + urlencode({"done": said}), status_code=303)


def _routes(pages: _Pages) -> list[Route | Mount]:
    page, q, before, keep = pages.page, _q, _before, pages.previews.get
    return [
        Route("/", lambda r: RedirectResponse("/runs", status_code=302)),
        # Browsers ask for it on every site; no icon, and no 404 in the console.
        Route("/favicon.ico", lambda r: Response(status_code=204)),
        Route("/runs", page("runs.html", lambda s, r: views.runs_page(s))),
        Route("/runs/{run_id}", page("timeline.html", lambda s, r: views.timeline_page(
            s, r.path_params["run_id"], kind=q(r, "kind"), session=q(r, "session"),
            before=before(r)))),
        Route("/events/{event_id}", page("event.html", lambda s, r: {
            **views.event_view(s, r.path_params["event_id"]),
            "whole": q(r, "whole") == "1", "limit": WHOLE_CHARS})),
        Route("/saw/{run_id}", page("saw.html", lambda s, r: views.saw_page(
            s, r.path_params["run_id"], budget=q(r, "budget"), query=q(r, "query"),
            why=q(r, "why"), all_rows=q(r, "rows") == "all", now=q(r, "now") == "1",
            remember=keep))),
        # The previews the page's script fetches (HTML fragments, no page around them).
        Route("/saw/{run_id}/pack", page("_saw_pack.html", lambda s, r: views.saw_pack(
            s, r.path_params["run_id"], budget=q(r, "budget"), query=q(r, "query"),
            why=q(r, "why"), all_rows=q(r, "rows") == "all", remember=keep))),
        Route("/saw/{run_id}/resume", page("_saw_resume.html", lambda s, r: views.saw_resume(
            s, r.path_params["run_id"], remember=keep))),
        Route("/packs/{pack_id}", page("pack.html", lambda s, r: views.pack_page(
            s, r.path_params["pack_id"], why=q(r, "why"), all_rows=q(r, "rows") == "all"))),
        Route("/trace", lambda r: RedirectResponse(
            "/trace/" + quote(q(r, "ref"), safe=":@"), status_code=303)),
        Route("/trace/{ref:path}", page("trace.html", lambda s, r: views.trace_page(
            s, r.path_params["ref"]))),
        Route("/memory", page("memory.html", lambda s, r: {**views.memory_page(
            s, status=q(r, "status"), scope=q(r, "scope"), page=_number(r, "page", 1)),
            "done": q(r, "done")})),
        Route("/memory/{ref:path}/{action}", pages.memory_post, methods=["POST"]),
        Route("/memory/{ref:path}", page("memory_detail.html", lambda s, r: views.memory_detail(
            s, r.path_params["ref"]))),
        Route("/skills", page("skills.html", lambda s, r: views.skills_page(s))),
        Route("/skills/{name}", page("skill.html", lambda s, r: views.skill_page(
            s, r.path_params["name"], a=q(r, "a"), b=q(r, "b")))),
        Route("/eval", page("eval.html", lambda s, r: views.eval_page(s, report=q(r, "report")))),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]


def _locked(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, (sqlite3.OperationalError, AgentStateError)) and (
        "locked" in text or "busy" in text)


class _Guarded:
    """The guard as plain ASGI middleware, in front of every route (static files too)."""

    def __init__(self, app: Any, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        headers = request.headers
        why = self.guard.refusal(
            method=request.method, host=headers.get("host"), origin=headers.get("origin"),
            referer=headers.get("referer"), client=request.client.host if request.client
            else None)
        given = request.query_params.get("token")
        if why is None and not self.guard.token_ok(request.cookies.get(self.guard.cookie)) \
                and not self.guard.token_ok(given):
            why = "this page needs the token printed by `agentstate ui` (open its URL)"
        if why is not None:
            await PlainTextResponse(f"refused: {why}", status_code=403)(scope, receive, send)
            return
        if given is not None:
            # First visit: keep the token in a cookie and drop it from the address bar (and
            # from the history and Referer headers).
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + ("?" + urlencode(rest) if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(self.guard.cookie, self.guard.token, httponly=True,
                                samesite="strict", path="/")
            await response(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"cache-control", b"no-store"),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)
