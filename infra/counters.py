"""Reliability counters every process adds to and `/metrics`, /v1/ops/queues and `turnout status` read.

Turnout runs as many processes, so a counter lives in Redis (one hash; a field per name and
label set), not in a process. Code on a hot path (the LLM engine, the RAG answer call) only
`bump()`s an in-process tally; the worker heartbeat (workers/signals.py, every 2 s) and the
API (after a request that counted) `flush` it with one pipelined HINCRBY per field. A flush
that fails puts the tally back, so a Redis outage delays counts but does not lose them.
Counters only go up (totals since statistics began), as Prometheus expects.

`turnout up`'s supervisor records each restart here too: a counter per child and a capped
list of the latest restarts (child, reason, when, how long it was down).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

import redis
import redis.asyncio as aioredis

from infra.redis import key
from infra.settings import Settings

# Counter names (label names in the comments).
LLM_CALLS = "llm_calls"  # kind (route | answer), outcome (see LLM_OUTCOMES)
LLM_RETRIES = "llm_retries"  # kind
FALLBACKS = "fallbacks"  # reason (no_llm | llm_not_ready | llm_unavailable | llm_rejected | declined | no_tool_call | repeated_rejection)
RATE_LIMIT = "rate_limit"  # outcome (waited | gave_up)
PAGE_CACHE = "page_cache"  # outcome (hit | miss)
TOOL_RESENDS = "tool_resends"  # task (a search/RAG task sent again: its worker died)
SUPERVISOR_RESTARTS = "supervisor_restarts"  # child
ANSWER_CHECKS = "answer_checks"  # attempt (first | strict), verdict (accepted | empty | restates_question | off_material | uncited)
ANSWER_OUTCOMES = "answer_outcomes"  # outcome (llm | llm_on_retry | extractive_non_answer | extractive_failed | extractive_no_llm | extractive_no_time)
JOBS_PRUNED = "jobs_pruned"  # what (jobs | events | audit | deliveries): rows removed by retention

LLM_OUTCOMES = ("ok", "429", "5xx", "timeout", "unreachable", "rejected")
RECENT_RESTARTS = 50

_LabelSet = tuple[tuple[str, str], ...]
_pending: Counter[tuple[str, _LabelSet]] = Counter()
_lock = threading.Lock()


def _counters_key(settings: Settings) -> str:
    return key(settings, "counters")


def _restarts_key(settings: Settings) -> str:
    return key(settings, "supervisor", "restarts")


def _field(name: str, labels: _LabelSet) -> str:
    return name + "|" + ",".join(f"{k}={v}" for k, v in labels)


def _parse(field: str) -> tuple[str, dict[str, str]]:
    name, _, rest = field.partition("|")
    labels = dict(part.split("=", 1) for part in rest.split(",") if "=" in part)
    return name, labels


def bump(name: str, n: int = 1, **labels: str) -> None:
    """Count in this process; a later `flush` adds it to the shared total."""
    with _lock:
        _pending[(name, tuple(sorted(labels.items())))] += n


def _drain() -> dict[str, int]:
    with _lock:
        taken = {_field(name, labels): n for (name, labels), n in _pending.items() if n}
        _pending.clear()
    return taken


def _put_back(taken: Mapping[str, int]) -> None:
    with _lock:
        for field, n in taken.items():
            name, labels = _parse(field)
            _pending[(name, tuple(sorted(labels.items())))] += n


def _queue_counts(pipe: Any, settings: Settings, taken: Mapping[str, int]) -> Any:
    """The drained counts as commands on a Redis pipeline (the sync and the asyncio one alike)."""
    for field, n in taken.items():
        pipe.hincrby(_counters_key(settings), field, n)
    return pipe


def flush_sync(client: redis.Redis, settings: Settings) -> None:
    taken = _drain()
    if not taken:
        return
    try:
        _queue_counts(client.pipeline(transaction=False), settings, taken).execute()
    except Exception:  # the caller logs; the counts wait for the next flush
        _put_back(taken)
        raise


async def flush(client: aioredis.Redis, settings: Settings) -> None:
    taken = _drain()
    if not taken:
        return
    try:
        await _queue_counts(client.pipeline(transaction=False), settings, taken).execute()
    except BaseException:
        _put_back(taken)
        raise


async def incr(client: aioredis.Redis, settings: Settings, name: str, n: int = 1, **labels: str) -> None:
    """Add to the shared total at once (a process that has Redis at hand, e.g. an API route)."""
    await client.hincrby(_counters_key(settings), _field(name, tuple(sorted(labels.items()))), n)  # type: ignore[misc]


def record_restart_sync(client: redis.Redis, settings: Settings, event: Mapping[str, Any]) -> None:
    pipe = client.pipeline(transaction=False)
    pipe.hincrby(_counters_key(settings), _field(SUPERVISOR_RESTARTS, (("child", str(event["child"])),)), 1)
    pipe.lpush(_restarts_key(settings), json.dumps(dict(event)))
    pipe.ltrim(_restarts_key(settings), 0, RECENT_RESTARTS - 1)
    pipe.execute()


async def read_counters(client: aioredis.Redis, settings: Settings) -> list[tuple[str, dict[str, str], int]]:
    raw: Mapping[bytes | str, bytes | str] = await client.hgetall(_counters_key(settings))  # type: ignore[misc]
    out = []
    for field, value in raw.items():
        name, labels = _parse(field.decode() if isinstance(field, bytes) else field)
        out.append((name, labels, int(value)))
    return sorted(out, key=lambda row: (row[0], sorted(row[1].items())))


async def read_restarts(client: aioredis.Redis, settings: Settings, limit: int = 20) -> list[dict[str, Any]]:
    raw = await client.lrange(_restarts_key(settings), 0, limit - 1)  # type: ignore[misc]
    return [json.loads(item) for item in raw]
