"""The ui server over plain HTTP: who is refused, what a page escapes, a locked store, a
port in use, bad input. A real `agentstate ui` process on a loopback port."""

from __future__ import annotations

import http.client
import socket
import sqlite3
from urllib.parse import urlencode, urlsplit

from tests.web.conftest import HOSTILE, free_port, start_server, stop


def request(server, method: str, path: str, *, headers: dict | None = None,
            body: str | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    sent = {"Host": f"127.0.0.1:{server.port}", **(headers or {})}
    conn.request(method, path, body=body, headers=sent)
    response = conn.getresponse()
    response.body = response.read().decode()  # type: ignore[attr-defined]
    conn.close()
    return response


def login(server) -> str:
    """The first visit: the token in the URL becomes a cookie; returns the Cookie header."""
    token_path = urlsplit(server.url)
    response = request(server, "GET", f"/?{token_path.query}")
    assert response.status == 303
    cookie = response.getheader("set-cookie")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert response.getheader("location") == "/"  # the token leaves the address bar
    return cookie.split(";", 1)[0]


def test_refused_without_token_from_other_hosts_and_origins(server):
    assert request(server, "GET", "/runs").status == 403
    assert request(server, "GET", "/runs?token=wrong").status == 403
    assert request(server, "GET", "/static/app.css").status == 403
    cookie = login(server)
    assert request(server, "GET", "/runs", headers={"Cookie": cookie}).status == 200
    # A rebound DNS name pointing at 127.0.0.1 sends its own Host.
    rebound = request(server, "GET", "/runs", headers={"Cookie": cookie,
                                                       "Host": f"evil.example:{server.port}"})
    assert rebound.status == 403 and "Host" in rebound.body
    other = request(server, "GET", "/runs", headers={"Cookie": cookie,
                                                     "Origin": "http://evil.example"})
    assert other.status == 403
    # The other loopback name is this server too.
    assert request(server, "GET", "/runs", headers={
        "Cookie": cookie, "Host": f"localhost:{server.port}"}).status == 200


def test_every_response_forbids_inline_script(server):
    cookie = login(server)
    response = request(server, "GET", "/runs", headers={"Cookie": cookie})
    policy = response.getheader("content-security-policy")
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "default-src 'none'" in policy


def test_post_needs_csrf_token_and_same_origin(server, seeded, cli):
    cookie = login(server)
    path = f"/memory/{seeded['candidate']}/confirm"
    form = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded",
            "Origin": server.base}
    page = request(server, "GET", "/memory", headers={"Cookie": cookie}).body
    assert 'name="csrf"' in page, page
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    assert request(server, "POST", path, headers=form, body="evidence=user").status == 403
    assert request(server, "POST", path, headers=form,
                   body=urlencode({"csrf": "x" + csrf})).status == 403
    foreign = {**form, "Origin": "http://evil.example"}
    assert request(server, "POST", path, headers=foreign,
                   body=urlencode({"csrf": csrf})).status == 403
    no_origin = {k: v for k, v in form.items() if k != "Origin"}
    assert request(server, "POST", path, headers=no_origin,
                   body=urlencode({"csrf": csrf})).status == 403
    # Nothing was confirmed by the refused posts.
    assert cli.json("memory", "show", seeded["candidate"])["current"]["status"] == "candidate"
    done = request(server, "POST", path, headers=form, body=urlencode({"csrf": csrf}))
    assert done.status == 303
    assert cli.json("memory", "show", seeded["candidate"])["current"]["status"] == "active"


def test_stored_text_is_escaped_on_every_page(server, seeded):
    cookie = login(server)
    run_id = seeded["run"].removeprefix("run:")
    pages = ["/runs", f"/runs/{run_id}", f"/events/{seeded['question'].removeprefix('evt:')}",
             f"/saw/{run_id}?" + urlencode({"query": "locale " + HOSTILE, "why": HOSTILE}),
             f"/packs/{seeded['pack'].removeprefix('pack:')}", f"/trace/{seeded['run']}",
             "/memory", f"/memory/{seeded['rival']}", f"/memory/{seeded['gone']}",
             "/memory?status=all"]
    for path in pages:
        response = request(server, "GET", path, headers={"Cookie": cookie})
        body = response.body
        assert response.status == 200, (path, body[:500])
        assert "<script>window" not in body and "<img src=x" not in body, path
        assert "\x1b" not in body, path
    timeline = request(server, "GET", f"/runs/{run_id}", headers={"Cookie": cookie}).body
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in timeline
    assert "\\x1b[2J" in timeline  # the escape shown as text, as the CLI shows it


def test_locked_store_says_so_and_retries(server, seeded, cli, initialised):
    cookie = login(server)
    db = initialised / ".agentstate" / "state.db"
    # A writer in exclusive locking mode (as a long maintenance job may be) keeps even WAL
    # readers out: the page says so and reloads itself.
    holder = sqlite3.connect(db, timeout=1)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        response = request(server, "GET", "/runs", headers={"Cookie": cookie})
    finally:
        holder.rollback()
        holder.close()
    assert response.status == 503, response.body[:500]
    assert "The store is locked" in response.body
    assert 'http-equiv="refresh"' in response.body
    assert "Traceback" not in response.body
    assert request(server, "GET", "/runs", headers={"Cookie": cookie}).status == 200
    # An owner action while another process writes: refused with the same page, no
    # automatic resend, nothing changed.
    page = request(server, "GET", "/memory", headers={"Cookie": cookie}).body
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    writer = sqlite3.connect(db, timeout=1)
    try:
        writer.execute("BEGIN IMMEDIATE")
        refused = request(server, "POST", f"/memory/{seeded['candidate']}/confirm",
                          headers={"Cookie": cookie, "Origin": server.base,
                                   "Content-Type": "application/x-www-form-urlencoded"},
                          body=urlencode({"csrf": csrf}))
    finally:
        writer.rollback()
        writer.close()
    assert refused.status == 503 and "your action was not applied" in refused.body
    assert 'http-equiv="refresh"' not in refused.body
    assert cli.json("memory", "show", seeded["candidate"])["current"]["status"] == "candidate"


def test_bad_input_answers_a_page_not_a_traceback(server, seeded):
    cookie = login(server)
    run_id = seeded["run"].removeprefix("run:")
    cases = {
        "/runs/nosuchrun": 404,
        f"/runs/{run_id}?kind=nonsense": 400,
        f"/runs/{run_id}?before=abc": 400,
        f"/saw/{run_id}?budget=-5": 400,  # the page checks the number before any assembly
        f"/saw/{run_id}/pack?budget=-5": 400,
        # Below the pinned floor: refused (exit 3's family) where the pack is assembled.
        f"/saw/{run_id}/pack?budget=3": 403,
        f"/saw/{run_id}?budget=3&now=1": 403,
        "/saw/nosuchrun/resume": 404,
        "/memory?page=0": 400,
        "/memory?page=x": 400,
        "/eval?report=nope": 404,
        "/trace/nonsense": 400,
        "/memory/mem:nope": 404,
        "/skills/no-such-skill": 404,
        "/packs/nope": 404,
    }
    for path, status in cases.items():
        response = request(server, "GET", path, headers={"Cookie": cookie})
        assert response.status == status, (path, response.status, response.body[:300])
        assert "Traceback" not in response.body and 'id="error"' in response.body


def test_port_in_use_moves_to_the_next_and_says_so(seeded, initialised):
    taken = free_port()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", taken))
        blocker.listen(1)
        running = start_server(initialised, taken)
        try:
            assert running.port != taken
            assert any(f"port {taken} is in use" in line for line in running.said)
            assert request(running, "GET", "/runs").status == 403
        finally:
            stop(running)


def test_huge_texts_are_cut_with_a_link_to_the_whole(server, seeded, cli):
    cookie = login(server)
    run_id = seeded["run"].removeprefix("run:")
    diagnosis = cli.json("events", "--run", seeded["run"], "--kind", "diagnosis")[0]
    assert len(diagnosis["text"]) > 600
    timeline = request(server, "GET", f"/runs/{run_id}", headers={"Cookie": cookie}).body
    link = f'href="/events/{diagnosis["ref"].removeprefix("evt:")}">cut at 600 of ' \
           f'{len(diagnosis["text"])} characters'
    assert link in timeline
    assert diagnosis["text"] not in timeline and diagnosis["text"][:600] in timeline
    whole = request(server, "GET", f"/events/{diagnosis['ref'].removeprefix('evt:')}",
                    headers={"Cookie": cookie}).body
    assert diagnosis["text"] in whole


def test_why_not_finds_what_words_match_and_where_each_went(server, seeded, cli):
    cookie = login(server)
    run_id = seeded["run"].removeprefix("run:")
    # The preview the page's script fetches, and the same inline (now=1, no JavaScript).
    body = request(server, "GET", f"/saw/{run_id}/pack?budget=1500&why=LANG+locale",
                   headers={"Cookie": cookie}).body
    inline = request(server, "GET", f"/saw/{run_id}?budget=1500&why=LANG+locale&now=1",
                     headers={"Cookie": cookie}).body
    assert body.split('id="why-answer"', 1)[1] in inline
    answer = body.split('id="why-answer"', 1)[1].split("</section>", 1)[0]
    # The fact matches the words; the forgotten preference does not and is not listed.
    assert seeded["fact"] in answer and seeded["gone"] not in answer
    pack = cli.json("context", "--run", seeded["run"], "--budget", "1500")
    decisions = [e["decision"] for e in pack["manifest"] if e["ref"] == seeded["fact"]]
    said = next(item for item in answer.split("<li>") if seeded["fact"] in item)
    if decisions:
        assert f"<strong>{decisions[0]}</strong>" in said
    else:
        assert "not a candidate in this pack" in said
