"""Fault drills on the embedded default: `turnout up` (embedded PostgreSQL over its unix socket,
embedded Redis, the three workers, the API) started for real, with the scripted LLM.

- each child SIGKILLed in turn while jobs are being submitted: the supervisor restarts it, every
  accepted job succeeds (lost = 0), and the API kept answering (for the API itself: answers resume);
- a hanging LLM (never answers within the call timeout): every job is answered by the fallback
  within its deadline (issue 16, item 5);
- a search task and a RAG task killed with their workers (held mid-query by a table lock): the
  executor notices the worker is gone and sends them again; both jobs succeed (item 6);
- Ctrl-C afterwards stops everything, restarted children and the beat process included.

The drills share one stack (start-up is the slow part) and run in file order. Each prints its
figures as one `DRILL {...}` JSON line (docs/proof.md reports them).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from tests.proof.up_stack import Up, clean_env, running_up
from tests.support import services
from tests.support.llm_server import Delay, ScriptedLLM, Step, Text, ToolCall

pytestmark = pytest.mark.slow

DEADLINE_S = 30.0
CALL_TIMEOUT_S = 25.0  # longer than the deadline's LLM share (22.5 s): a hanging call used it all
_TAG = re.compile(r"\[drill:([\w-]+)\]")


@pytest.fixture(scope="module")
def up(llm_server: ScriptedLLM, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    env = {
        "TURNOUT_JOB_LEASE_S": "3",
        "TURNOUT_JOB_SWEEP_INTERVAL_S": "1",
        "TURNOUT_LLM_MAX_RETRIES": "1",
        "TURNOUT_LIMIT_LLM_CALL_TIMEOUT_S": str(CALL_TIMEOUT_S),
        "TURNOUT_LIMIT_JOB_DEADLINE_S": str(DEADLINE_S),
        "TURNOUT_LIMIT_SUBMISSIONS_PER_MINUTE": "100000",
        "TURNOUT_LIMIT_LLM_REQUESTS_PER_MINUTE": "100000",
        "TURNOUT_LIMIT_LLM_TOKENS_PER_MINUTE": "1000000000",
    }
    llm_server.reset()
    llm_server.on_chat(_answer)
    try:
        with running_up(llm_server, tmp_path_factory.mktemp("up"), env, index=True) as stack:
            yield stack
    finally:
        llm_server.reset()


# ---- the scripted LLM ---------------------------------------------------------------------------

SEARCH = ToolCall("SearchArticles", {"text": "Celery", "language": "en"})
ASK = ToolCall("AskArticles", {"question": "Why were Celery chords replaced?", "language": "en"})
ANSWER = Text("Chords tied job state to the result backend, so explicit steps replaced them [1].")
_behaviour: dict[str, Callable[[dict[str, Any]], Step]] = {}


def _answer(body: dict[str, Any]) -> Step:
    """Router requests (they carry tools) by the question's tag; RAG answer requests answer."""
    tag = next((m.group(1) for msg in body.get("messages", []) if isinstance(msg.get("content"), str)
                for m in [_TAG.search(msg["content"])] if m), "")
    kind = tag.split("-")[0]
    if kind in _behaviour:
        return _behaviour[kind](body)
    if "tools" not in body:
        return ANSWER
    return ASK if kind == "ask" else SEARCH


@pytest.fixture
def scripted(llm_server: ScriptedLLM) -> Iterator[dict[str, Callable[[dict[str, Any]], Step]]]:
    """The stack's LLM: per test overrides by tag kind; the module's handler stays installed
    (the function-scoped `llm` fixture would reset it)."""
    llm_server.on_chat(_answer)
    yield _behaviour
    _behaviour.clear()


# ---- submitting under a fault ------------------------------------------------------------------

@dataclass
class Submission:
    at: float
    outcome: str  # "202", "503", ..., or "refused" / "timeout" / "reset" (no HTTP answer)
    job_id: str | None = None


class Submitter:
    """Submits a question every `interval_s` from a thread and records what the API answered."""

    def __init__(self, stack: Up, tag: str, interval_s: float = 0.25) -> None:
        self.stack, self.tag, self.interval_s = stack, tag, interval_s
        self.submissions: list[Submission] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Submitter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        with httpx.Client(base_url=self.stack.base, timeout=5,
                          headers={"Authorization": f"Bearer {self.stack.key}"}) as c:
            n = 0
            while not self._stop.is_set():
                n += 1
                at = time.monotonic()
                try:
                    r = c.post("/v1/questions", json={"question": f"Find articles about Celery [drill:{self.tag}-{n}]"})
                    job_id = r.json()["id"] if r.status_code == 202 else None
                    self.submissions.append(Submission(at, str(r.status_code), job_id))
                except httpx.ConnectError:
                    self.submissions.append(Submission(at, "refused"))
                except httpx.TimeoutException:
                    self.submissions.append(Submission(at, "timeout"))
                except httpx.TransportError:  # the API killed mid-request: the connection reset, no answer
                    self.submissions.append(Submission(at, "reset"))
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - at)))

    def accepted(self) -> list[str]:
        return [s.job_id for s in self.submissions if s.job_id]


def _wait_final(stack: Up, job_ids: list[str], timeout_s: float = 90.0) -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    with stack.client() as c:
        while time.monotonic() < deadline and len(docs) < len(job_ids):
            for job_id in job_ids:
                if job_id in docs:
                    continue
                try:
                    r = c.get(f"/v1/jobs/{job_id}", params={"waitS": 2})
                except httpx.HTTPError:
                    time.sleep(0.5)
                    continue
                if r.status_code == 200 and r.json()["status"] in ("succeeded", "failed", "cancelled"):
                    docs[job_id] = r.json()
    return docs


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _accepting_again(after: list[Submission], killed_at: float) -> float:
    """Seconds from the kill to the first accepted submission after the first refused one (0: none refused)."""
    refused = next((s.at for s in after if not s.job_id), None)
    if refused is None:
        return 0.0
    back = next((s.at for s in after if s.job_id and s.at > refused), refused)
    return round(back - killed_at, 1)


def _report(name: str, subs: list[Submission], docs: dict[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    statuses = Counter(d["status"] for d in docs.values())
    accepted = [s.job_id for s in subs if s.job_id]
    report = {
        "drill": name, "submitted": len(subs), "accepted": len(accepted),
        "succeeded": statuses["succeeded"], "failed": statuses["failed"] + statuses["cancelled"],
        "lost": len([j for j in accepted if j not in docs]),
        "api_answers": dict(Counter(s.outcome for s in subs)), **extra,
    }
    errors = [d["error"] for d in docs.values() if d["status"] != "succeeded"]
    if errors:
        report["errors"] = errors
    print("DRILL " + json.dumps(report), flush=True)
    return report


# ---- the drills ----------------------------------------------------------------------------------

def test_hanging_llm_every_job_answered_by_the_fallback(up: Up, scripted: dict[str, Any]) -> None:
    # The router call and the RAG answer call both hang; the call timeout (25 s) outlasts the
    # deadline's LLM share. Two search questions, one question the fallback routes to RAG.
    scripted["hang"] = lambda body: Delay(120, SEARCH if "tools" in body else ANSWER)
    questions = ["Find articles about Celery [drill:hang-1]", "Celery chords articles [drill:hang-2]",
                 "Why did they stop using Celery chords? [drill:hang-3]"]
    started = time.monotonic()
    with up.client() as c:
        subs = []
        for q in questions:
            r = c.post("/v1/questions", json={"question": q})
            subs.append(Submission(time.monotonic(), str(r.status_code), r.json().get("id")))
    docs = _wait_final(up, [s.job_id for s in subs if s.job_id], timeout_s=DEADLINE_S + 30)
    took = [round(_ts(d["finishedAt"]) - _ts(d["createdAt"]), 1) for d in docs.values()]
    _report("hanging LLM", subs, docs, seconds_to_answer=took, wall_s=round(time.monotonic() - started, 1))
    assert len(docs) == len(questions)
    for doc in docs.values():
        assert doc["status"] == "succeeded", doc
        assert doc["result"]["routedBy"] == "fallback", doc["result"]
    assert max(took) < DEADLINE_S, took
    types = sorted(d["result"]["resultType"] for d in docs.values())
    assert "SearchResult" in types, types


CHILDREN = ["worker-router", "worker-front", "worker-vector", "redis", "postgres", "api"]


@pytest.mark.parametrize("child", CHILDREN)
def test_sigkill_of_a_child_is_healed(up: Up, scripted: dict[str, Any], child: str) -> None:
    before = len(re.findall(rf"supervisor: {re.escape(child)} restarted", up.stderr))
    victim = up.child_pid(child)
    with Submitter(up, f"kill{child.replace('-', '')}") as submitter:
        time.sleep(1.5)
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        deadline = killed_at + 60
        while up.restarted(child, before + 1) is None:
            assert up.proc.poll() is None, f"turnout up exited:\n{up.stderr[-3000:]}"
            assert time.monotonic() < deadline, f"{child} not restarted:\n{up.stderr[-3000:]}"
            time.sleep(0.2)
        restarted_after = time.monotonic() - killed_at
        # Keep submitting until jobs submitted after the kill are accepted again (and a little more).
        while not [s for s in submitter.submissions if s.at > killed_at + restarted_after and s.job_id]:
            assert time.monotonic() < deadline, "no submission accepted after the restart"
            time.sleep(0.2)
        time.sleep(1.0)
    subs = submitter.submissions
    # Then every path once more through the healed stack: two RAG questions beside the searches
    # (a restarted PostgreSQL left dead connections in every worker's pool).
    with up.client() as c:
        for n in (1, 2):
            r = c.post("/v1/questions", json={"question": f"Why were Celery chords replaced? [drill:ask-{child}-{n}]"})
            subs.append(Submission(time.monotonic(), str(r.status_code), r.json().get("id")))
    up.tree()  # remember the restarted processes (the last drill checks none is left)
    docs = _wait_final(up, [s.job_id for s in subs if s.job_id])
    after = [s for s in subs if s.at >= killed_at]
    first_ok = min((_ts(docs[s.job_id]["finishedAt"]) for s in after if s.job_id in docs
                    and docs[s.job_id]["status"] == "succeeded"), default=None)
    report = _report(
        f"SIGKILL {child}", subs, docs, restart_s=round(restarted_after, 1),
        down_s=up.restarted(child, before + 1),
        api_answers_after_kill=dict(Counter(s.outcome for s in after)),
        accepting_again_after_s=_accepting_again(after, killed_at),
        first_success_after_kill_s=round(first_ok - (time.time() - (time.monotonic() - killed_at)), 1)
        if first_ok else None,
    )
    assert up.child_pid(child) != victim
    assert report["lost"] == 0 and report["failed"] == 0, report
    assert report["succeeded"] == report["accepted"] > 0, report
    asks = [docs[s.job_id] for s in subs[-2:] if s.job_id]
    assert len(asks) == 2 and all(d["result"]["resultType"] == "AnswerResult" for d in asks), asks
    outcomes = Counter(s.outcome for s in after)
    if child == "api":  # its own death: refused until it is back, then accepted again
        assert subs[-1].outcome == "202", subs[-5:]
    else:  # the API kept answering: every submission got an HTTP answer
        assert not outcomes["refused"] and not outcomes["timeout"] and not outcomes["reset"], outcomes


@pytest.mark.parametrize("kind", ["search", "rag"])
def test_a_task_lost_with_its_worker_is_sent_again(up: Up, scripted: dict[str, Any], kind: str) -> None:
    worker = "worker-front" if kind == "search" else "worker-vector"
    before = len(re.findall(rf"supervisor: {re.escape(worker)} restarted", up.stderr))
    question = ("Find articles about Celery [drill:lost-search]" if kind == "search"
                else "Why were Celery chords replaced? [drill:ask-lost]")

    async def hold_lock() -> asyncpg.Connection:
        conn = await asyncpg.connect(up.dsn)
        await conn.execute("BEGIN; LOCK TABLE localizations IN ACCESS EXCLUSIVE MODE")
        return conn

    import asyncio

    loop = asyncio.new_event_loop()
    conn = loop.run_until_complete(hold_lock())
    killed_at = 0.0
    try:
        with up.client() as c:
            r = c.post("/v1/questions", json={"question": question})
            assert r.status_code == 202, r.text
            job_id = r.json()["id"]
        # The task is running on its worker, held by the lock (it reads localizations).
        deadline = time.monotonic() + 20
        while True:
            waiting = loop.run_until_complete(conn.fetchval(
                "SELECT count(*) FROM pg_locks WHERE relation = 'localizations'::regclass AND NOT granted"))
            if waiting:
                break
            assert time.monotonic() < deadline, "the task never reached the table"
            time.sleep(0.1)
        killed_at = time.monotonic()
        os.kill(up.child_pid(worker), signal.SIGKILL)
    finally:
        loop.run_until_complete(conn.execute("COMMIT"))
        loop.run_until_complete(conn.close())
        loop.close()
    docs = _wait_final(up, [job_id], timeout_s=DEADLINE_S + 20)
    doc = docs[job_id]
    _report(f"{kind} task killed with its worker", [Submission(killed_at, "202", job_id)], docs,
            restart_down_s=up.restarted(worker, before + 1),
            seconds_to_answer=round(_ts(doc["finishedAt"]) - _ts(doc["createdAt"]), 1))
    assert doc["status"] == "succeeded", doc
    assert doc["result"]["routedBy"] == "llm"
    assert doc["result"]["resultType"] == ("SearchResult" if kind == "search" else "AnswerResult"), doc["result"]
    assert up.restarted(worker, before + 1) is not None
    router_log = (up.data_dir / "logs" / "worker-router.log").read_text(errors="replace")
    task = "turnout.search.search" if kind == "search" else "turnout.rag.answer"
    assert re.search(rf"{re.escape(task)} \S+ was lost \(its worker", router_log), router_log[-3000:]


def test_status_metrics_and_ops_show_the_restarts(up: Up) -> None:
    """`turnout status` (pointed at the stack by `<data>/env`), /v1/ops/queues and /metrics."""
    env = {**clean_env()}
    for line in (up.data_dir / "env").read_text().splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value.strip("'")
    done = subprocess.run([sys.executable, "-m", "turnout", "status", "--json"], capture_output=True, text=True,
                          env=env, cwd=services.REPO_ROOT, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    status = json.loads(done.stdout)["summary"]["reliability"]
    with up.client() as c:
        # A worker's counters reach Redis with its next heartbeat (every 2 s): the last drill's resend
        # may be a beat behind the drill itself.
        deadline = time.monotonic() + 10
        while True:
            ops = c.get("/v1/ops/queues").json()["reliability"]
            if min(ops["toolResends"].get(t, 0) for t in ("turnout.search.search", "turnout.rag.answer")) >= 1 \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        metrics = c.get("/metrics").text
    for child in CHILDREN:
        assert status["restarts"].get(child, 0) >= 1, status["restarts"]
        assert ops["restarts"].get(child, 0) >= 1, ops["restarts"]
        assert re.search(rf'turnout_supervisor_restarts_total{{child="{child}"}} [1-9]', metrics), child
    assert {r["child"] for r in ops["recentRestarts"]} >= set(CHILDREN)
    assert "killed by SIGKILL" in {r["reason"] for r in ops["recentRestarts"]}
    # The hanging-LLM drill's timeouts and fallbacks, the lost tasks sent again.
    assert ops["llmCalls"]["route"]["timeout"] >= 3 and ops["fallbacks"].get("llm_unavailable", 0) >= 3, ops
    assert ops["toolResends"].get("turnout.search.search", 0) >= 1, ops
    assert ops["toolResends"].get("turnout.rag.answer", 0) >= 1, ops


def _cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:  # gone, or a zombie
        return ""


def test_ctrl_c_after_the_drills_leaves_no_process(up: Up) -> None:
    def zombies() -> list[int]:
        found = []
        for p in up.tree():
            try:
                if p.status() == psutil.STATUS_ZOMBIE:
                    found.append(p.pid)
            except psutil.NoSuchProcess:
                continue
        return found

    deadline = time.monotonic() + 5  # one just exited may wait for the next tick (0.5 s)
    while zombies() and time.monotonic() < deadline:
        time.sleep(0.25)
    assert not zombies(), f"adopted processes left unreaped while supervising: {zombies()}"
    tree = up.tree()
    assert any("front@" in _cmdline(p) and p.ppid() != up.proc.pid for p in tree), \
        "the front worker's beat process was expected in the tree"
    up.proc.send_signal(signal.SIGINT)
    assert up.proc.wait(timeout=120) == 0, up.stderr[-3000:]
    services.assert_all_gone(up.seen.values(), timeout_s=15)
    assert not (up.data_dir / "postgres" / "postmaster.pid").exists()
