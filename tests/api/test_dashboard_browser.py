"""The dashboard in a real headless Chromium against a running stack with jobs in flight.

Chromium (Debian's `chromium`) is driven over the DevTools protocol (a websocket). The test
loads the page with the admin key in the URL fragment, waits for it to auto-refresh, reads
the numbers and charts it drew, compares them with /v1/ops/queues, and saves a screenshot
as test-artifacts/dashboard.png.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from infra.db.audit import AuditEvent
from infra.settings import Settings
from tests.api.ops_fixtures import (
    OpsStack,
    Work,
    add_audit,
    add_reembed_run,
    make_jobs,
    ops_stack,
    run_pings,
    run_searches,
    wait_deliveries_settled,
    wait_worker_seen,
)
from tests.api.support import wait_until, webhook_receiver
from tests.support.services import ARTIFACTS

CHROMIUM = os.environ.get("TURNOUT_TEST_CHROMIUM", "/usr/bin/chromium")
VIEWPORT = {"width": 1440, "height": 900}  # a common laptop screen


class DevTools:
    """A minimal DevTools-protocol client: one page target, request/response by id."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.ids = itertools.count(1)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self.ids)
        self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv(timeout=30))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
        raise TimeoutError(f"no reply to {method}")

    def evaluate(self, expression: str) -> Any:
        reply = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"page script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")


@pytest.fixture(scope="module")
def browser() -> Iterator[DevTools]:
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} not found: install Debian's chromium (`apt-get install -y chromium`; "
                           ".ci/run does) or set TURNOUT_TEST_CHROMIUM")
    profile = tempfile.mkdtemp(prefix="turnout-chromium-")
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-extensions",
         "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-port=0",
         "--remote-debugging-address=127.0.0.1",
         f"--window-size={VIEWPORT['width']},{VIEWPORT['height']}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        wait_until(lambda: port_file.exists() and port_file.read_text().strip(), timeout=30,
                   what="chromium's DevTools port")
        port = int(port_file.read_text().splitlines()[0])
        targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = next(t for t in targets if t["type"] == "page")
        with connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=10) as ws:
            tools = DevTools(ws)
            tools.send("Page.enable")
            tools.send("Emulation.setDeviceMetricsOverride", deviceScaleFactor=1, mobile=False, **VIEWPORT)
            yield tools
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def busy_stack(test_environment: None, settings: Settings) -> Iterator[tuple[OpsStack, Work]]:
    """A stack with work done and jobs in flight: queued jobs wait in the router queue."""
    with ops_stack(settings, "dashboard") as stack:
        wait_worker_seen(stack)
        stack.wait_quiet()
        work = Work()
        run_pings(stack, work, 6)
        run_searches(stack, work, ok=4, failing=1)
        with webhook_receiver(200) as ok, webhook_receiver(503) as flaky:
            deliveries = make_jobs(stack, work, queued=4, running=2, succeeded=9, failed=1, cancelled=1,
                                   webhook_urls=(ok.url, ok.url, flaky.url))
            wait_deliveries_settled(stack, deliveries)
        # LLM spend over the last quarter hour (ages avoid the 5-minute window's edge).
        events: list[tuple[AuditEvent, float]] = []
        for minutes_ago, calls in ((0, 3), (2, 5), (3, 2), (7, 4), (9, 6), (12, 3), (13, 2)):
            for i in range(calls):
                events.append((AuditEvent("llm_round", model="router-model", input_tokens=900 + 40 * i,
                                          output_tokens=60 + 5 * i, latency_ms=800), minutes_ago * 60 + 10))
            events.append((AuditEvent("rag_answer", model="answer-model", input_tokens=2400, output_tokens=220),
                           minutes_ago * 60 + 20))
        events += [(AuditEvent("rate_limit_wait", latency_ms=ms), 30) for ms in (120, 480, 900)]
        add_audit(stack, events)
        add_reembed_run(stack, run_id="run-dashboard", batches=12, batch_size=100, completed=7, started_s_ago=420)
        stack.wait_quiet()
        yield stack, work


def _page_state(tools: DevTools) -> dict[str, Any]:
    """What the page shows; an empty dict while it is still loading."""
    state: dict[str, Any] | None = tools.evaluate("""(() => {
        if (document.readyState !== 'complete' || !document.getElementById('key-dialog')) return null;
        const metrics = {};
        for (const n of document.querySelectorAll('[data-metric]')) metrics[n.dataset.metric] = n.dataset.value;
        const charts = {};
        for (const svg of document.querySelectorAll('svg[data-chart]')) {
            const series = {};
            for (const s of svg.querySelectorAll('[data-values]')) series[s.dataset.series] = JSON.parse(s.dataset.values);
            charts[svg.dataset.chart] = {
                points: Number(svg.dataset.points), kind: svg.dataset.kind, series,
                marks: svg.querySelectorAll('.plot path, .plot rect').length,
                width: svg.getBoundingClientRect().width,
            };
        }
        const health = {};
        for (const c of document.querySelectorAll('[data-dependency]')) health[c.dataset.dependency] = c.dataset.status;
        const rows = {};
        for (const r of document.querySelectorAll('tr[data-queue]')) rows[r.dataset.queue] = r.dataset.succeeded5m;
        return {metrics, charts, health, rows, ready: document.body.dataset.ready,
                refreshes: Number(document.body.dataset.refreshes), hash: location.hash,
                generatedAt: document.body.dataset.generatedAt || '',
                keyStored: sessionStorage.getItem('turnout.adminKey') !== null,
                dialogOpen: document.getElementById('key-dialog').open,
                scrollWidth: document.documentElement.scrollWidth};
    })()""")
    return state or {}


def _load(tools: DevTools, url: str) -> None:
    tools.send("Page.navigate", url=url)


def test_dashboard_asks_for_a_key_first(busy_stack: tuple[OpsStack, Work], browser: DevTools) -> None:
    stack, _ = busy_stack
    _load(browser, f"{stack.api.base_url}/v1/ops/dashboard")
    state = wait_until(lambda: (s := _page_state(browser)).get("dialogOpen") and s, timeout=20, what="the key prompt")
    assert state["ready"] == "false" and not state["keyStored"]


def test_dashboard_draws_the_api_figures(busy_stack: tuple[OpsStack, Work], browser: DevTools) -> None:
    stack, work = busy_stack
    _load(browser, f"{stack.api.base_url}/v1/ops/dashboard?refresh=1#key={stack.admin.token}")
    # Two completed refreshes: the page polls on its own.
    state = wait_until(lambda: (s := _page_state(browser)).get("refreshes", 0) >= 2 and s, timeout=30,
                       what="two dashboard refreshes")
    state, summary = wait_until(lambda: _same_minute(browser, stack), timeout=30,
                                what="the page and the API's summary in the same minute")
    assert state["ready"] == "true" and not state["dialogOpen"]
    assert state["hash"] == "" and state["keyStored"]  # the key left the URL for the tab's storage

    _check_figures(stack, state, summary, work)
    _check_charts(state, summary)
    assert state["scrollWidth"] <= VIEWPORT["width"]  # no sideways scrolling on a laptop screen
    _screenshot(browser, ARTIFACTS / "dashboard.png", VIEWPORT["width"])

    # A smaller laptop, the hour view: still no sideways scrolling, charts redrawn to fit.
    browser.send("Runtime.evaluate", expression="document.querySelector('[data-window=\"60\"]').click()")
    _screenshot(browser, ARTIFACTS / "dashboard-1280.png", 1280)
    small = _page_state(browser)
    assert small["scrollWidth"] <= 1280
    assert len(small["charts"]["tokens"]["series"]["input"]) == 60
    assert all(c["points"] > 0 and c["width"] < state["charts"]["depth"]["width"] for c in small["charts"].values())


def _same_minute(tools: DevTools, stack: OpsStack) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The page's state and the API's summary when both were drawn in the same minute, else None.

    The series are per-minute buckets: a minute turning between the page's last refresh and the
    test's own summary shifts every window by one bucket.
    """
    state = _page_state(tools)
    summary = stack.summary()
    if state.get("generatedAt", "")[:16] != summary["generatedAt"][:16]:
        return None
    return state, summary


def _check_figures(stack: OpsStack, state: dict[str, Any], summary: dict[str, Any], work: Work) -> None:
    """Every figure the page shows is the API's (`/v1/ops/queues`, `/v1/ops/health`) and the work done."""
    m = state["metrics"]
    jobs = summary["jobs"]["byStatus"]
    assert jobs == work.jobs
    for status in ("queued", "running", "succeeded", "failed", "cancelled"):
        assert m[f"jobs.{status}"] == str(jobs[status])
    assert m["jobs.inflight"] == str(jobs["queued"] + jobs["running"])
    router = stack.queue(summary, "router")
    assert router["depth"] == len(work.queued_job_ids) > 0
    assert m["queue.router.depth"] == str(router["depth"])
    for q in summary["queues"]:
        assert m[f"queue.{q['name']}.depth"] == str(q["depth"])
        assert m[f"queue.{q['name']}.failed"] == f"{q['windows']['5m']['failed']}/{q['windows']['60m']['failed']}"
        assert m[f"queue.{q['name']}.retried"] == f"{q['windows']['5m']['retried']}/{q['windows']['60m']['retried']}"
        assert m[f"queue.{q['name']}.consumersAlive"] == str(q["consumersAlive"])
        assert state["rows"][q["name"]] == str(q["windows"]["5m"]["succeeded"])
    failed_5m = sum(q["windows"]["5m"]["failed"] for q in summary["queues"])
    assert m["tasks.failed5m"] == str(failed_5m) == str(work.searches_failed)
    assert m["tasks.retried5m"] == str(sum(q["windows"]["5m"]["retried"] for q in summary["queues"])) == "1"
    llm = summary["llm"]
    assert m["llm.totalTokens"] == str(llm["total"]["totalTokens"])
    assert m["llm.totalCalls"] == str(llm["total"]["calls"]) == "32"
    assert float(m["llm.tokensPerMinute"]) == llm["windows"]["5m"]["tokensPerMinute"] > 0
    assert m["limiter.waits5m"] == str(summary["rateLimiter"]["waits5m"]) == "3"
    hooks = summary["webhooks"]
    assert (m["webhooks.pending"], m["webhooks.retrying"], m["webhooks.dead"]) == (
        str(hooks["pending"]), str(hooks["retrying"]), str(hooks["dead"])) == ("1", "1", "0")
    # Endpoint health: the 503 receiver's endpoint is failing (not yet disabled).
    assert (m["webhooks.endpointsFailing"], m["webhooks.endpointsDisabled"]) == (
        str(hooks["endpointsFailing"]), str(hooks["endpointsDisabled"])) == ("1", "0")
    assert m["workers.alive"] == "1" and m["workers.lost"] == "0"
    rel = summary["reliability"]  # issue 16: LLM trouble and restarts are on the dashboard
    assert m["reliability.restarts"] == str(sum(rel["restarts"].values()))
    assert m["reliability.fallbacks"] == str(sum(rel["fallbacks"].values()))
    assert m["reliability.retries"] == str(sum(rel["llmRetries"].values()))
    assert m["reliability.gaveUp"] == str(rel["rateLimiter"]["gave_up"])
    assert m["reliability.cacheHit"] == str(rel["pageCache"]["hit"])
    run = summary["reembed"]
    assert m["reembed.processed"] == str(run["done"] + run["failed"]) == "700"
    assert m["reembed.total"] == "1200" and m["reembed.status"] == "running"
    assert state["health"] == {name: check["status"] for name, check in
                               stack.client().get("/v1/ops/health").json()["checks"].items()}


def _check_charts(state: dict[str, Any], summary: dict[str, Any]) -> None:
    """Every chart drew something, and its series are the API's."""
    charts = state["charts"]
    assert set(charts) == {"depth", "throughput", "latency", "failures", "tokens", "webhooks"}
    for name, chart in charts.items():
        assert chart["points"] > 0, f"chart {name} drew nothing"
        assert chart["marks"] > 0 and chart["width"] > 250
    assert charts["depth"]["series"]["router"][-1] == next(q["depth"] for q in summary["queues"] if q["name"] == "router")
    window = 15
    assert charts["tokens"]["series"]["input"] == summary["series"]["llmInputTokens"][-window:]
    assert sum(charts["tokens"]["series"]["output"]) == sum(summary["series"]["llmOutputTokens"][-window:]) > 0
    assert charts["tokens"]["points"] >= 7  # LLM calls in seven different minutes
    assert sum(charts["failures"]["series"]["failed"]) == sum(q["windows"]["5m"]["failed"] for q in summary["queues"])
    assert charts["webhooks"]["series"]["delivered"] == summary["series"]["webhookDelivered"][-window:]


def _screenshot(tools: DevTools, path: Path, width: int) -> None:
    """A full-page PNG at `width` CSS pixels (the page is laid out again at that width first)."""
    tools.send("Emulation.setDeviceMetricsOverride", deviceScaleFactor=1, mobile=False, width=width,
               height=VIEWPORT["height"])
    height = int(tools.evaluate("document.documentElement.scrollHeight"))
    tools.send("Emulation.setDeviceMetricsOverride", deviceScaleFactor=1, mobile=False, width=width,
               height=max(height, VIEWPORT["height"]))
    # The charts redraw on resize after a 150 ms debounce; wait until they fit the new width.
    wait_until(lambda: tools.evaluate(
        "[...document.querySelectorAll('svg[data-chart]')].every(s => "
        "Math.abs(s.getBoundingClientRect().width - s.parentElement.clientWidth) < 2)"), timeout=10,
        what="charts redrawn at the new size")
    shot = tools.send("Page.captureScreenshot", format="png")
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.stat().st_size > 20_000


def _jobs_view(tools: DevTools) -> dict[str, Any]:
    state: dict[str, Any] | None = tools.evaluate("""(() => {
        const view = document.getElementById('jobs-view');
        if (!view) return null;
        const detail = document.getElementById('job-detail');
        return {
            loads: Number(view.dataset.loads), query: view.dataset.query || '',
            rows: [...document.querySelectorAll('#job-rows tr')].map(r => [r.dataset.jobId, r.dataset.status,
                   r.querySelector('td.rating').textContent, r.querySelector('td.rating').title]),
            empty: !document.getElementById('jobs-empty').hidden,
            error: document.getElementById('jobs-error').hidden ? null : document.getElementById('jobs-error').textContent,
            detail: detail.hidden ? null : detail.dataset.jobId,
            timeline: [...document.querySelectorAll('#job-timeline li[data-kind]')].map(li => li.dataset.kind),
            document: document.getElementById('job-document').textContent,
        };
    })()""")
    return state or {}


def _jobs_loaded(tools: DevTools, after: int, query_part: str = "") -> dict[str, Any]:
    return wait_until(lambda: (s := _jobs_view(tools)).get("loads", 0) > after and query_part in s["query"] and s,
                      timeout=20, what="the jobs view to load")


def test_jobs_view_lists_filters_searches_and_opens_a_job(busy_stack: tuple[OpsStack, Work], browser: DevTools) -> None:
    stack, work = busy_stack
    admin = stack.client()

    def listed(**params: Any) -> list[list[str]]:
        page = admin.get("/v1/jobs", params={"apiKeyId": "*", "limit": 20, **params}).json()
        return [[item["id"], item["status"], (item["feedback"] or {}).get("rating", ""),
                 (item["feedback"] or {}).get("comment") or ""] for item in page["items"]]

    def shown_as_listed(after: int, query_part: str = "", **params: Any) -> dict[str, Any]:
        # Jobs are in flight on this stack: the page refreshes every second until it shows what the API lists.
        return wait_until(lambda: (s := _jobs_loaded(browser, after, query_part))["rows"] == listed(**params) and s,
                          timeout=20, what="the jobs view to show the API's listing")

    succeeded = next(row[0] for row in listed() if row[1] == "succeeded")
    with stack.client(stack.user.token) as owner:  # the owner's rating shows on the row, its comment on hover
        rated = owner.post(f"/v1/jobs/{succeeded}/feedback", json={"rating": "down", "comment": "wrong period"})
    assert rated.status_code == 200, rated.text
    _load(browser, f"{stack.api.base_url}/v1/ops/dashboard?refresh=1#key={stack.admin.token}")
    state = shown_as_listed(0)
    assert len(state["rows"]) == 20  # every key's newest jobs, as the API lists them
    assert [succeeded, "succeeded", "down", "wrong period"] in state["rows"]

    browser.evaluate("document.querySelector('[data-job-status=\"failed\"]').click()")
    state = shown_as_listed(state["loads"], "status=failed", status="failed")
    assert {row[1] for row in state["rows"]} == {"failed"}
    assert len(state["rows"]) == work.jobs["failed"]

    def search(words: str) -> None:
        browser.evaluate(f"(() => {{ const i = document.getElementById('job-search'); i.value = {words!r}; "
                         "i.dispatchEvent(new Event('input')); })()")

    search("nothing-like-this")
    state = _jobs_loaded(browser, state["loads"], "q=nothing")
    assert state["rows"] == [] and state["empty"] and state["error"] is None
    search("figures")
    state = shown_as_listed(state["loads"], "q=figures", status="failed", q="figures")
    assert state["rows"] != []

    job_id = state["rows"][0][0]
    browser.evaluate(f"document.querySelector('#job-rows tr[data-job-id=\"{job_id}\"]').click()")
    opened = wait_until(lambda: (s := _jobs_view(browser)).get("detail") == job_id and s, timeout=20,
                        what="the job's document and timeline")
    view = admin.get(f"/v1/admin/jobs/{job_id}").json()
    assert opened["timeline"] == [e["kind"] for e in view["events"]] and opened["timeline"][0] == "queued"
    assert opened["timeline"][-1] == "failed"
    assert json.loads(opened["document"]) == view["job"]
    _screenshot(browser, ARTIFACTS / "dashboard-jobs.png", VIEWPORT["width"])
    assert _page_state(browser)["scrollWidth"] <= VIEWPORT["width"]


def _usage_view(tools: DevTools) -> dict[str, Any]:
    state: dict[str, Any] | None = tools.evaluate("""(() => {
        const view = document.getElementById('usage-view');
        if (!view) return null;
        return {
            loads: Number(view.dataset.loads),
            cost: document.getElementById('usage-cost').textContent,
            calls: document.getElementById('usage-calls').textContent,
            rows: [...document.querySelectorAll('#usage-rows tr')].map(r => [r.dataset.day, r.dataset.key,
                   r.dataset.model, ...[...r.cells].slice(3).map(c => c.textContent)]),
            budgets: [...document.querySelectorAll('#budget-rows tr')].map(r => [r.dataset.key, r.dataset.exceeded,
                      r.cells[1].textContent, r.cells[2].textContent]),
            error: document.getElementById('usage-error').hidden ? null : document.getElementById('usage-error').textContent,
        };
    })()""")
    return state or {}


def test_usage_panel_shows_every_keys_spend_and_budgets(busy_stack: tuple[OpsStack, Work], browser: DevTools) -> None:
    stack, _ = busy_stack
    user, admin_id = stack.user.key.id, stack.admin.key.id

    async def seed(conn: Any) -> None:  # spend as the jobs' settled LLM calls leave it (infra/db/budgets.py)
        await conn.execute(
            "INSERT INTO key_spend (api_key_id, day, model, calls, input_tokens, output_tokens, cost_usd) "
            "SELECT k, (now() AT TIME ZONE 'UTC')::date, m, c, i, o, u FROM (VALUES "
            "($1, 'router-model', 7, 8400, 420, 0.001512), ($1, 'answer-model', 2, 4800, 440, 0.000984), "
            "($2, 'router-model', 1, 900, 60, 0.000171)) AS v(k, m, c, i, o, u)", user, admin_id)
        await conn.execute("UPDATE api_keys SET daily_budget_usd = 0.0025 WHERE id = $1", user)
        await conn.execute(
            "INSERT INTO key_budget_ledger (api_key_id, month, day, month_usd, day_usd, month_tokens, day_tokens) "
            "SELECT $1, date_trunc('month', t)::date, t, 0.002496, 0.002496, 14060, 14060 "
            "FROM (SELECT (now() AT TIME ZONE 'UTC')::date AS t) AS today", user)

    stack.run(seed)
    with stack.client() as admin:
        report = admin.get("/v1/usage").json()
    _load(browser, f"{stack.api.base_url}/v1/ops/dashboard?refresh=1#key={stack.admin.token}")
    # The page refreshes every second: the panel shows the seeded spend at its next load at the latest.
    state = wait_until(lambda: (s := _usage_view(browser)).get("cost") == "$0.002667" and s, timeout=20,
                       what="the usage panel to show the spend")
    assert state["error"] is None
    assert state["cost"] == f"${report['totals']['costUsd']:.6f}" == "$0.002667"
    assert state["calls"] == "10" == str(report["totals"]["calls"])
    expected = [[d["date"], d["apiKeyId"], d["model"], f"{d['calls']:,}", f"{d['inputTokens']:,}",
                 f"{d['outputTokens']:,}", f"${d['costUsd']:.6f}"] for d in reversed(report["days"])]
    assert state["rows"] == expected and len(expected) == 3
    budgets = {key: (exceeded, day, month) for key, exceeded, day, month in state["budgets"]}
    assert set(budgets) == {user, admin_id}  # keys with spend or a budget; the idle ones are left out
    exceeded, day, month = budgets[user]
    assert exceeded == "false" and day.startswith("$0.002496 of $0.002500 · resets ") and day.endswith("00:00Z")
    assert month == "$0.002496"  # no monthly limit
    _screenshot(browser, ARTIFACTS / "dashboard-usage.png", VIEWPORT["width"])
    assert _page_state(browser)["scrollWidth"] <= VIEWPORT["width"]
