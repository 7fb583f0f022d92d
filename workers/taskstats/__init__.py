"""Task statistics in Redis: what Celery workers did, readable by any process.

Workers write (``workers/signals.py``); the API, `turnout status` and `/metrics` read
(``api/ops.py``). Memory is bounded by construction:

- per queue and per minute, one hash with counters and two sparse latency histograms
  (run time, queue wait); it expires after ``BUCKET_TTL_S`` so only the last two hours exist;
- per queue, one cumulative histogram hash and one totals hash (fixed field sets, never
  expire: they are Prometheus counters and must only go up);
- per minute, one sorted set with the peak depth seen for each queue (expires);
- a capped list of recent failures and a hash of worker heartbeats (pruned when read).

Latencies go into fixed buckets (the R10 series: 10 per decade, 1 ms .. 1000 s), so a
percentile is an estimate within one bucket (~±12 %), which is what a dashboard needs, and
histograms of any window are a sum of bucket counts.
"""

from workers.taskstats._keys import (
    BOUNDS_S,
    BUCKET_S,
    BUCKET_TTL_S,
    KOMBU_PRIORITY_SEP,
    KOMBU_PRIORITY_STEPS,
    PROMETHEUS_BOUNDS_S,
    RECENT_FAILURES,
    SENT_AT_HEADER,
    STATES,
    WINDOWS_MIN,
    WORKER_ALIVE_S,
    WORKER_FORGET_S,
    bucket_index,
    minute_of,
    queue_list_keys,
    state_name,
    unacked_key,
)
from workers.taskstats._reader import (
    Histogram,
    MinuteStats,
    QueueStats,
    QueueWindow,
    StatsSnapshot,
    WorkerInfo,
    read_stats,
    read_workers,
    read_workers_sync,
)
from workers.taskstats._writer import TaskStatsWriter, WorkerBeat, record_depths_pipeline

__all__ = [
    "BOUNDS_S", "BUCKET_S", "BUCKET_TTL_S", "KOMBU_PRIORITY_SEP", "KOMBU_PRIORITY_STEPS", "PROMETHEUS_BOUNDS_S",
    "RECENT_FAILURES", "SENT_AT_HEADER", "STATES", "WINDOWS_MIN", "WORKER_ALIVE_S", "WORKER_FORGET_S",
    "Histogram", "MinuteStats", "QueueStats", "QueueWindow", "StatsSnapshot", "TaskStatsWriter", "WorkerBeat",
    "WorkerInfo", "bucket_index", "minute_of", "queue_list_keys", "read_stats", "read_workers",
    "read_workers_sync", "record_depths_pipeline", "state_name", "unacked_key",
]
