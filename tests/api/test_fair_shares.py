"""Fair shares and priorities end to end (issue 27): the real API, workers, Postgres, Redis and a
scripted LLM with a small fixed latency, so jobs take real time. A key flooding the queue does not
hold back another key's job; a key's parked jobs run interactive first, each exactly once; a
parked job cancels at once; a slot a dead runner did not hand over is handed over by the sweeper."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from infra.db import jobs as jobs_db
from infra.settings import Settings
from infra.status import JobPriority
from tests.api.support import ApiServer, issue_key, query, wait_for_job
from tests.support.llm_server import Delay, ScriptedLLM, ToolCall
from workers._runtime import Runtime
from workers.registry import RUN_JOB
from workers.taskstats import queue_list_keys

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")  # the search finds articles: one round

LATENCY_S = 0.25  # each routing round: jobs take real time, a flood takes seconds
# The first jobs' round: they still run while the rest of the flood is submitted, so those are parked
# however slowly a loaded machine takes the flood's requests (at 0.25 s one ended mid-flood in CI: 5 of 30 not parked).
FIRST_ROUND_S = 4.0
_SEARCH = ToolCall("SearchArticles", {"text": "security", "language": "en"})
FLOOD = 30
_SERIAL = itertools.count()


@pytest.fixture
def slow_llm(llm: ScriptedLLM) -> ScriptedLLM:
    llm.on_chat(lambda body: Delay(LATENCY_S, _SEARCH))
    return llm


@pytest.fixture
def other_client(api: ApiServer, settings: Settings) -> Iterator[httpx.Client]:
    with api.client(issue_key(settings, "other").token) as c:
        yield c


def _submit(client: httpx.Client, **body: Any) -> dict[str, Any]:
    # A question of its own each time: a cached decision would end the job without the LLM's latency.
    response = client.post("/v1/questions", json={"question": f"security advisories {next(_SERIAL)}", **body})
    assert response.status_code == 202, response.text
    doc: dict[str, Any] = response.json()
    return doc


def _wait_all(client: httpx.Client, ids: list[str]) -> list[dict[str, Any]]:
    return [wait_for_job(client, job_id, timeout=120) for job_id in ids]


def _runs(settings: Settings, ids: list[str]) -> dict[str, int]:
    """How often each job was started (its `running` events)."""
    rows = query(settings, "SELECT job_id, count(*) AS n FROM job_events WHERE job_id = ANY($1::text[]) "
                           "AND kind = 'running' GROUP BY job_id", ids)
    return {r["job_id"]: r["n"] for r in rows}


def _most_at_once(docs: list[dict[str, Any]]) -> int:
    """The most of these jobs that were running at one moment (from their start and end times)."""
    edges = sorted([(d["startedAt"], 1) for d in docs] + [(d["finishedAt"], -1) for d in docs])
    level = peak = 0
    for _, step in edges:
        level += step
        peak = max(peak, level)
    return peak


def test_a_flooding_key_does_not_hold_back_another(client: httpx.Client, other_client: httpx.Client,
                                                   slow_llm: ScriptedLLM, settings: Settings) -> None:
    cap = settings.jobs_per_key_in_flight
    slow_llm.script(*[Delay(FIRST_ROUND_S, _SEARCH)] * cap)
    flood = [_submit(client) for _ in range(FLOOD)]
    assert sum(not d["parked"] for d in flood) == cap and all(d["status"] == "queued" for d in flood)
    alone = _submit(other_client)
    assert alone["parked"] is False
    done = wait_for_job(other_client, alone["id"], timeout=60)
    assert done["status"] == "succeeded", done["error"]
    flood_done = _wait_all(client, [d["id"] for d in flood])
    assert all(d["status"] == "succeeded" for d in flood_done), [(d["status"], d["error"]) for d in flood_done]
    finished_before = sum(d["finishedAt"] < done["finishedAt"] for d in flood_done)
    assert finished_before <= FLOOD // 3, f"{finished_before} of the flood's jobs ended before the other key's one"
    assert _most_at_once(flood_done) <= cap  # never more of the key's jobs at once than its cap
    assert set(_runs(settings, [d["id"] for d in flood_done]).values()) == {1}  # each ran exactly once


def test_parked_jobs_run_interactive_first(client: httpx.Client, llm: ScriptedLLM, settings: Settings) -> None:
    cap = settings.jobs_per_key_in_flight
    # Slower: the first jobs are still running when the last ones are submitted (all of those parked).
    llm.on_chat(lambda body: Delay(1.0, ToolCall("SearchArticles", {"text": "security", "language": "en"})))
    filling = [_submit(client) for _ in range(cap)]
    batch = [_submit(client, priority="batch") for _ in range(2)]
    interactive = [_submit(client) for _ in range(2)]
    assert all(d["parked"] for d in batch + interactive), [(d["parked"], client.get(f"/v1/jobs/{d['id']}").json()["status"]) for d in filling + batch + interactive]
    assert [d["priority"] for d in batch + interactive] == ["batch", "batch", "interactive", "interactive"]
    docs = {d["id"]: d for d in _wait_all(client, [d["id"] for d in filling + batch + interactive])}
    assert all(d["status"] == "succeeded" for d in docs.values()), [(d["status"], d["error"]) for d in docs.values()]
    # Handed their slots in that order (jobs ending together start the next ones at about one time).
    dispatched = query(settings, "SELECT job_id FROM job_events WHERE kind = 'dispatched' "
                                 "AND job_id = ANY($1::text[]) ORDER BY id", [d["id"] for d in batch + interactive])
    assert [r["job_id"] for r in dispatched][:2] == [d["id"] for d in interactive]
    assert {r["job_id"] for r in dispatched} == {d["id"] for d in batch + interactive}
    listed = client.get("/v1/jobs", params={"limit": 10}).json()["items"]
    assert {item["id"]: item["priority"] for item in listed if item["id"] in docs} == \
        {d["id"]: d["priority"] for d in filling + batch + interactive}
    only_batch = client.get("/v1/jobs", params={"priority": "batch"}).json()["items"]
    assert sorted(item["id"] for item in only_batch) == sorted(d["id"] for d in batch)
    assert client.get("/v1/jobs", params={"priority": "urgent"}).status_code == 422


def test_a_batch_message_waits_behind_interactive_ones(idle_client: httpx.Client, idle_api: ApiServer) -> None:
    """On the broker: a batch job's message is in the router queue's lowest-priority list, which a
    worker reads only when the interactive list is empty (kombu's BRPOP order of priority steps)."""
    import redis

    lists = queue_list_keys(idle_api.settings, RUN_JOB.queue.value)
    r = redis.Redis.from_url(idle_api.settings.redis_url or "")
    before = [int(r.llen(k)) for k in lists]  # type: ignore[arg-type]  # the sync client's ints
    _submit(idle_client, priority="batch")
    _submit(idle_client)
    after = [int(r.llen(k)) for k in lists]  # type: ignore[arg-type]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 0, 0, 1]  # steps 0, 3, 6, 9


def test_a_parked_job_cancels_at_once_and_is_not_retryable_yet(client: httpx.Client, llm: ScriptedLLM,
                                                               settings: Settings) -> None:
    cap = settings.jobs_per_key_in_flight
    llm.on_chat(lambda body: Delay(1.0, ToolCall("SearchArticles", {"text": "security", "language": "en"})))
    jobs = [_submit(client) for _ in range(cap + 2)]
    parked, behind = jobs[cap], jobs[cap + 1]
    assert parked["parked"] and behind["parked"]
    retry = client.post(f"/v1/jobs/{parked['id']}/retry")
    assert retry.status_code == 409 and retry.json()["error"]["code"] == "job_not_retryable"
    cancelled = client.delete(f"/v1/jobs/{parked['id']}")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    docs = _wait_all(client, [d["id"] for d in jobs])
    assert [d["status"] for d in docs] == ["succeeded"] * cap + ["cancelled", "succeeded"]
    runs = _runs(settings, [d["id"] for d in jobs])
    assert parked["id"] not in runs and set(runs.values()) == {1}
    # A retry of the cancelled parked job is an ordinary job: it runs.
    retried = client.post(f"/v1/jobs/{parked['id']}/retry")
    assert retried.status_code == 201, retried.text
    assert wait_for_job(client, retried.json()["id"], timeout=60)["status"] == "succeeded"


def test_the_sweeper_hands_over_a_slot_a_dead_runner_did_not(settings: Settings, slow_llm: ScriptedLLM,
                                                             api: ApiServer) -> None:
    """Runners that wrote their jobs' final state and died before handing their slots on: the key's
    parked job would wait forever; the sweeper's catch-up dispatches it, and it runs once."""
    key = issue_key(settings, "dead-runners")
    cap = settings.jobs_per_key_in_flight
    parked, dispatched = asyncio.run(_dead_runners_then_sweep(settings, key.key.id, cap))
    assert dispatched >= 1
    with api.client(key.token) as c:
        assert wait_for_job(c, parked, timeout=60)["status"] == "succeeded"
    assert _runs(settings, [parked]) == {parked: 1}


async def _dead_runners_then_sweep(settings: Settings, key_id: str, cap: int) -> tuple[str, int]:
    from workers.tasks.maintenance import sweep_once

    rt = Runtime(settings=settings, loop=asyncio.get_running_loop())
    try:
        pool = await rt.pool()
        async with pool.acquire() as conn:
            jobs = [(await jobs_db.create_job(
                conn, api_key_id=key_id, question=f"security advisories {next(_SERIAL)}", answer_language=None,
                page_size=None, webhook_url=None, idempotency_key=None, request_hash="h",
                lease_s=settings.job_lease_s, priority=JobPriority.INTERACTIVE, in_flight_cap=cap))[0]
                for _ in range(cap + 1)]
            assert [j.parked for j in jobs] == [False] * cap + [True]
            # Their runners' final writes (no message was ever sent for them), and nothing after.
            await conn.execute("UPDATE jobs SET status = 'succeeded', lease_expires_at = NULL, finished_at = now() "
                               "WHERE id = ANY($1::text[])", [j.id for j in jobs[:cap]])
        outcome = await sweep_once(rt)
    finally:
        await rt.aclose()
    return jobs[cap].id, outcome["dispatched"]
