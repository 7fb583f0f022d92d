"""The first jobs after the embedded PostgreSQL is stopped as `pg_ctl -m immediate` does (issue 24).

A real `turnout up` (embedded PostgreSQL over its unix socket, the real process tree), with the
default job lease (300 s) and sweep interval (30 s): a job whose message were dropped would wait
over a minute for the sweeper, so a job that ends within 15 s was claimed by its own message,
through every worker thread's pool the restart left dead. The scripted LLM routes every question
to SearchArticles. Prints its figures as one `DRILL {...}` line (docs/proof.md).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.proof.up_stack import Up, running_up
from tests.support import services
from tests.support.llm_server import ScriptedLLM, Step, Text, ToolCall

pytestmark = pytest.mark.slow

SEARCH = ToolCall("SearchArticles", {"text": "Celery", "language": "en"})


def _answer(body: dict[str, Any]) -> Step:
    return SEARCH if "tools" in body else Text("An answer [1].")


@pytest.fixture(scope="module")
def up(llm_server: ScriptedLLM, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    env = {"TURNOUT_LIMIT_SUBMISSIONS_PER_MINUTE": "100000", "TURNOUT_LIMIT_LLM_REQUESTS_PER_MINUTE": "100000"}
    llm_server.reset()
    llm_server.on_chat(_answer)
    try:
        with running_up(llm_server, tmp_path_factory.mktemp("up-pm"), env, index=False) as stack:
            yield stack
    finally:
        llm_server.reset()


POSTMASTER_ROUNDS = 2
JOBS_AFTER_RESTART = 20
JOB_WITHIN_S = 15.0


def _run_one(c: httpx.Client, question: str) -> tuple[dict[str, Any], float]:
    """Submit and wait for the end (`Prefer: wait`, then long polls): the job and its seconds."""
    started = time.monotonic()
    r = c.post("/v1/questions", json={"question": question}, headers={"Prefer": "wait=15"}, timeout=20)
    assert r.status_code in (200, 202), r.text
    doc: dict[str, Any] = r.json()
    while doc["status"] not in ("succeeded", "failed", "cancelled") and time.monotonic() - started < 2 * JOB_WITHIN_S:
        doc = c.get(f"/v1/jobs/{doc['id']}", params={"waitS": 5}, timeout=10).json()
    return doc, round(time.monotonic() - started, 2)


def test_postmaster_stopped_immediately_the_next_jobs_succeed_at_once(up: Up) -> None:
    """Issue 24: the postmaster stopped as `pg_ctl -m immediate` does (SIGQUIT: every backend cut,
    no checkpoint), restarted by the supervisor. A job submitted as soon as health answers 200
    succeeds within 15 s, and so do the twenty after it, one at a time: each may reach a router
    thread whose pooled connection died with the server (nothing used it in between)."""
    rounds = []
    for n in range(POSTMASTER_ROUNDS):
        before = len(re.findall(r"supervisor: postgres restarted", up.stderr))
        with up.client() as c:
            warm, _ = _run_one(c, f"Find articles about Celery [drill:pmwarm-{n}]")  # every pool holds connections
            assert warm["status"] == "succeeded", warm
            killed_at = time.monotonic()
            os.kill(up.child_pid("postgres"), signal.SIGQUIT)
            deadline = killed_at + 60
            while up.restarted("postgres", before + 1) is None:
                assert up.proc.poll() is None, f"turnout up exited:\n{up.stderr[-3000:]}"
                assert time.monotonic() < deadline, f"postgres not restarted:\n{up.stderr[-3000:]}"
                time.sleep(0.1)
            while True:
                try:
                    if c.get("/v1/ops/health", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "health never answered 200 after the restart"
                time.sleep(0.1)
            healthy_after = time.monotonic() - killed_at
            first, first_s = _run_one(c, f"Find articles about Celery [drill:pmfirst-{n}]")
            rest = [_run_one(c, f"Find articles about Celery [drill:pmnext-{n}-{i}]") for i in range(JOBS_AFTER_RESTART)]
        seconds = [first_s] + [s for _, s in rest]
        statuses = Counter(d["status"] for d, _ in [(first, first_s), *rest])
        rounds.append({"round": n + 1, "down_s": up.restarted("postgres", before + 1),
                       "healthy_after_kill_s": round(healthy_after, 1), "first_job_s": first_s,
                       "next_jobs_max_s": max(s for _, s in rest), "statuses": dict(statuses),
                       "attempts": dict(Counter(d["attempts"] for d, _ in [(first, 0), *rest]))})
        assert first["status"] == "succeeded" and first_s < JOB_WITHIN_S, (first, first_s)
        assert statuses == {"succeeded": 1 + JOBS_AFTER_RESTART}, [d for d, _ in rest if d["status"] != "succeeded"]
        assert max(seconds) < JOB_WITHIN_S, seconds
    print("DRILL " + json.dumps({"drill": "postmaster SIGQUIT (pg_ctl -m immediate)", "rounds": rounds}), flush=True)


def test_ctrl_c_afterwards_leaves_no_process(up: Up) -> None:
    up.tree()
    up.proc.send_signal(signal.SIGINT)
    assert up.proc.wait(timeout=120) == 0, up.stderr[-3000:]
    services.assert_all_gone(up.seen.values(), timeout_s=15)
    assert not (up.data_dir / "postgres" / "postmaster.pid").exists()


