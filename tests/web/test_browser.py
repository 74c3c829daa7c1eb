"""The ui in a real headless Chromium (the distribution's, /usr/bin/chromium, driven by
Playwright; no browser is downloaded): click through runs → what the model saw → manifest →
trace → memory review → confirm, and check each page against the CLI's --json for the same
store. Hostile text must not run, the console must stay clean, and every page is
photographed into test-artifacts/ui/ (git-ignored)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

CHROMIUM = os.environ.get("AGENTSTATE_TEST_CHROMIUM", "/usr/bin/chromium")
if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
    pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the playwright package is not installed (the dev extra)")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = ROOT / "test-artifacts" / "ui"


@pytest.fixture
def browser_page(request):
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.problems = problems  # type: ignore[attr-defined]
        try:
            yield page
        finally:
            context.close()
            browser.close()


def shoot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def no_script_ran(page) -> None:
    assert page.evaluate("window.__pwned === undefined"), page.url
    # Only our own script element; the stored <script> is text.
    assert page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))") == [
        "/static/app.js"]


def rows(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.dataset.ref)")


def follow(page, selector: str) -> None:
    """Click a link and wait for the page it leads to: a click returns once the navigation
    has started, and a list read before the new page is parsed reads the blank one between."""
    with page.expect_navigation():
        page.click(selector)


def test_click_through_against_the_cli(server, seeded, cli, browser_page):
    page = browser_page
    page.goto(server.url)
    assert page.url == f"{server.base}/runs"
    runs = [r["ref"] for r in cli.json("run", "list")]
    assert rows(page, "#runs tbody tr") == runs
    assert page.locator("#queue-notice").is_visible()  # a candidate and a contested fact wait
    no_script_ran(page)
    shoot(page, "runs")

    follow(page, f"#runs a.ref[href='/runs/{seeded['run'][4:]}']")
    events = cli.json("events", "--run", seeded["run"])
    assert rows(page, "#timeline li.event") == [e["ref"] for e in reversed(events)]
    assert "\\x1b[2J" in page.inner_text("#timeline")  # the terminal escape, as text
    no_script_ran(page)
    shoot(page, "timeline")

    page.click("#saw-link")
    page.fill("input[name=budget]", "1500")
    page.fill("input[name=query]", "locale")
    page.click("#pack-form button")
    # The first paint shows the last recorded pack; the preview at 1500 replaces it.
    page.wait_for_selector("#preview[data-state=ready] #manifest")
    page.wait_for_selector("#resume[data-state=ready] #resume-text")
    shown = page.eval_on_selector_all(
        "#manifest tbody tr", "els => els.map(e => [e.dataset.ref, e.dataset.decision])")
    pack = cli.json("context", "--run", seeded["run"], "--budget", "1500", "--query", "locale")
    assert shown == [[e["ref"], e["decision"]] for e in pack["manifest"]]
    assert f"{pack['tokens']} / 1500 tokens" in page.inner_text("h2")
    resume = cli.json("resume", seeded["run"])
    assert page.inner_text("#resume-text").strip() == resume["text"].strip()
    assert "memory review queue" in resume["text"]  # the queue is named in resume too
    no_script_ran(page)
    shoot(page, "what-the-model-saw")

    # Why not X: a memory that was forgotten never becomes a candidate of a pack.
    page.fill("input[name=why]", seeded["gone"])
    page.click("#why-form button")
    page.wait_for_selector("#preview[data-state=ready] #why-answer")
    assert "not a candidate in this pack" in page.inner_text("#why-answer")

    stored = page.locator(f"#stored-packs a.ref[href='/packs/{seeded['pack'][5:]}']")
    stored.click()
    page.wait_for_selector("#manifest")
    trace_pack = cli.json("trace", seeded["pack"])
    assert len(rows(page, "#manifest tbody tr")) == len(trace_pack["children"])
    no_script_ran(page)
    shoot(page, "pack")

    page.locator(f"#manifest tr[data-ref='{seeded['failing']}'] a.trace-link").first.click()
    page.wait_for_selector("#trace")
    traced = cli.json("trace", seeded["failing"])
    assert rows(page, "#trace > li") == [c["ref"] for c in traced["children"]]
    no_script_ran(page)
    shoot(page, "trace")

    follow(page, "nav a[href='/memory']")
    queue = [m["ref"] for s in ("contested", "candidate")
             for m in cli.json("memory", "list", "--status", s)]
    assert rows(page, "#review li") == queue
    no_script_ran(page)
    shoot(page, "memory")
    item = page.locator(f"#review li[data-ref='{seeded['candidate']}']")
    item.locator("form.confirm button").click()
    page.wait_for_selector("#done")
    assert cli.json("memory", "show", seeded["candidate"])["current"]["status"] == "active"
    rival = page.locator(f"#review li[data-ref='{seeded['rival']}']")
    rival.locator("form.reject input[name=reason]").fill("CI's image is C-locale")
    rival.locator("form.reject button").click()
    page.wait_for_selector("#done")
    shown = cli.json("memory", "show", seeded["rival"])["current"]
    assert shown["status"] == "forgotten"
    history = cli.json("memory", "history", seeded["rival"])
    assert any(h["reason"] == "CI's image is C-locale" for h in history)
    assert page.locator("#queue-empty").is_visible()

    for path, name in (("/skills", "skills"), ("/eval", "eval"),
                       (f"/memory/{seeded['rival']}", "memory-detail")):
        page.goto(server.base + path)
        no_script_ran(page)
        shoot(page, name)
    catalog = cli.json("skill", "list", "--all")
    page.goto(server.base + "/skills")
    assert rows(page, "#skills tbody tr") == [e["ref"] for e in catalog]
    assert page.problems == []  # type: ignore[attr-defined]


def test_runs_page_pages_a_long_run(server, seeded, cli, browser_page, initialised):
    """150 more events: the first page shows the newest 100, `older` the rest."""
    from agentstate.runs.log import append_event
    from agentstate.store.db import open_store

    store = open_store(initialised / ".agentstate")
    try:
        for n in range(150):
            append_event(store, seeded["run"], "note", f"step {n}")
    finally:
        store.close()
    page = browser_page
    page.goto(server.url)
    page.goto(f"{server.base}/runs/{seeded['run'][4:]}?kind=note")
    first = rows(page, "#timeline li.event")
    notes = [e["ref"] for e in cli.json("events", "--run", seeded["run"], "--kind", "note")]
    assert first == list(reversed(notes))[:100]
    follow(page, "#older")
    assert rows(page, "#timeline li.event") == list(reversed(notes))[100:]
    follow(page, "#newer")
    assert rows(page, "#timeline li.event") == first
    assert page.problems == []  # type: ignore[attr-defined]


def plotted(page, kind: str, metric: str) -> dict[tuple[str, int], float]:
    """(arm, budget) → value of every point drawn in one panel of the Eval page."""
    points = page.eval_on_selector_all(
        f"#eval-{kind} svg[data-metric={metric}] circle",
        "els => els.map(c => [c.closest('g').dataset.arm, +c.dataset.budget, "
        "+c.dataset.value])")
    return {(arm, budget): value for arm, budget, value in points}


def test_eval_page_draws_the_kept_reports_as_the_cli_printed_them(server, cli, browser_page):
    """Each `eval` run keeps its report; the Eval page draws the newest of each kind as
    --plot does (scenarios: recall and leakage; LoCoMo: recall), offline, in inline SVG."""
    page = browser_page
    page.goto(server.url)
    follow(page, "nav a[href='/eval']")
    assert page.locator("#eval-none").is_visible()
    scenarios = cli.json("eval", "scenarios", "--scenarios", "1", "--budget", "1000",
                         "--budget", "4000", "--arm", "full", "--arm", "no-memory")
    locomo = cli.json("eval", "locomo", str(ROOT / "tests" / "fixtures" / "locomo" /
                                            "tiny.json"), "--budget", "500", "--budget",
                      "1000", "--arm", "full", "--arm", "raw-history")
    page.reload()
    for kind, data, metrics in (("scenarios", scenarios, ("recall", "leak")),
                                ("locomo", locomo, ("recall",))):
        for metric in metrics:
            expected = {(r["arm"], r["budget"]): r[metric] for r in data["results"]
                        if r[metric] is not None}
            assert expected  # the run measured something to draw
            assert plotted(page, kind, metric) == pytest.approx(expected)
        legend = page.eval_on_selector_all(f"#eval-{kind} .legend li",
                                           "els => els.map(e => e.textContent.trim())")
        assert legend == data["arms"]
    # Nothing but this server's own files was asked for (no CDN, no web font).
    assert page.evaluate("performance.getEntriesByType('resource')"
                         ".every(e => e.name.startsWith(location.origin))")
    no_script_ran(page)
    shoot(page, "eval")
    assert page.problems == []  # type: ignore[attr-defined]


def test_what_the_model_saw_without_javascript(server, seeded, cli):
    """The first paint holds the newest stored pack's manifest; without the script that
    fetches the preview, a link assembles it in the page."""
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_context(java_script_enabled=False).new_page()
            page.goto(server.url)
            page.goto(f"{server.base}/saw/{seeded['run'][4:]}?budget=1500&query=locale")
            assert page.get_attribute("#preview", "data-state") == "loading"
            newest = cli.json("trace", seeded["pack2"])  # recorded after seeded["pack"]
            assert rows(page, "#preview #manifest tbody tr") == [
                c["ref"] for c in newest["children"]][:len(rows(page, "#manifest tbody tr"))]
            assert seeded["pack2"] in page.inner_text("#preview h2")
            page.click("#preview-wait a")
            assert page.get_attribute("#preview", "data-state") == "ready"
            pack = cli.json("context", "--run", seeded["run"], "--budget", "1500", "--query",
                            "locale")
            assert rows(page, "#preview #manifest tbody tr") == [
                e["ref"] for e in pack["manifest"]]
            resume = cli.json("resume", seeded["run"])
            assert page.inner_text("#resume-text").strip() == resume["text"].strip()
            shoot(page, "what-the-model-saw-no-js")
        finally:
            browser.close()
