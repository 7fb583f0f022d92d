"""Task statistics: the constants, buckets and Redis keys the writer and the reader share."""

from __future__ import annotations

import math
from bisect import bisect_left

from infra.redis import key
from infra.settings import Settings

# Kombu's Redis transport: one list per queue and priority step; priority 0 has no suffix.
KOMBU_PRIORITY_SEP = "\x06\x16"
KOMBU_PRIORITY_STEPS = (0, 3, 6, 9)
SENT_AT_HEADER = "turnout_sent_at"  # stamped by workers/signals.py on every published task

BUCKET_S = 60
BUCKET_TTL_S = 2 * 3600  # > the longest window (60 min) plus slack for clock skew
WINDOWS_MIN = (5, 60)
WORKER_ALIVE_S = 15.0  # Celery heartbeats every 2 s; 15 s of silence means the worker is gone
WORKER_FORGET_S = 3600.0  # a lost worker stays visible (as lost) for an hour
RECENT_FAILURES = 50

STATES = ("succeeded", "failed", "retried", "revoked")
_CELERY_STATES = {"SUCCESS": "succeeded", "FAILURE": "failed", "RETRY": "retried", "REVOKED": "revoked"}


def _r10_bounds() -> tuple[float, ...]:
    steps = (1.0, 1.25, 1.6, 2.0, 2.5, 3.15, 4.0, 5.0, 6.3, 8.0)
    return tuple(round(m * 10.0**exp, 6) for exp in range(-3, 3) for m in steps) + (1000.0,)


BOUNDS_S: tuple[float, ...] = _r10_bounds()  # upper bounds; index len(BOUNDS_S) is +Inf
# The Prometheus exposition uses the familiar 1-2.5-5 subset (cumulative counts stay exact).
PROMETHEUS_BOUNDS_S: tuple[float, ...] = tuple(
    b for b in BOUNDS_S if round(b / 10 ** math.floor(math.log10(b)), 2) in (1.0, 2.5, 5.0)
)


def state_name(celery_state: str | None) -> str:
    return _CELERY_STATES.get(celery_state or "", "other")


def bucket_index(seconds: float) -> int:
    return bisect_left(BOUNDS_S, max(seconds, 0.0))


def minute_of(ts: float) -> int:
    return int(ts // BUCKET_S)


def queue_list_keys(settings: Settings, queue: str) -> list[str]:
    """The Redis lists holding `queue`'s waiting messages (one per kombu priority step)."""
    base = key(settings, "celery", queue)
    return [base if p == 0 else f"{base}{KOMBU_PRIORITY_SEP}{p}" for p in KOMBU_PRIORITY_STEPS]


def unacked_key(settings: Settings) -> str:
    return key(settings, "celery", "unacked")


def _minute_key(settings: Settings, queue: str, minute: int) -> str:
    return key(settings, "ops", "q", queue, minute)


def _depth_key(settings: Settings, minute: int) -> str:
    return key(settings, "ops", "depth", minute)


def _hist_key(settings: Settings, queue: str) -> str:
    return key(settings, "ops", "hist", queue)


def _totals_key(settings: Settings) -> str:
    return key(settings, "ops", "totals")


def _workers_key(settings: Settings) -> str:
    return key(settings, "ops", "workers")


def _failures_key(settings: Settings) -> str:
    return key(settings, "ops", "failures")
