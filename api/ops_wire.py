"""The operations summary's wire shape: what /v1/ops/queues serves, the dashboard draws and
`turnout status` prints (built by api/ops.py `summarize`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from infra.results import WireModel


class Percentiles(WireModel):
    count: int
    p50_ms: float | None
    p95_ms: float | None


class QueueWindowSummary(WireModel):
    minutes: int
    tasks_per_minute: float  # finished (succeeded + failed + retried) per minute
    succeeded: int
    failed: int
    retried: int
    revoked: int
    run_time: Percentiles
    queue_wait: Percentiles


class QueueConsumer(WireModel):
    hostname: str
    alive: bool
    last_seen_s: float


class QueueSummary(WireModel):
    name: str
    depth: int  # waiting in Redis
    reserved: int  # taken by a worker, not yet acknowledged (running or prefetched)
    oldest_message_age_s: float | None
    consumers: list[QueueConsumer]
    consumers_alive: int
    windows: dict[str, QueueWindowSummary]  # "5m", "60m"
    totals: dict[str, int]  # by outcome, since statistics began
    tasks: dict[str, dict[str, int]]  # task name -> outcome -> count, since statistics began


class WorkerSummary(WireModel):
    hostname: str
    pid: int | None
    queues: list[str]
    concurrency: int | None
    alive: bool
    last_seen_s: float
    started_at: datetime | None


class JobsSummary(WireModel):
    by_status: dict[str, int]
    total: int
    by_source: dict[str, dict[str, int]] = {}  # "http" | "mcp" -> status -> count


class TokenCounts(WireModel):
    calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int


class LlmWindow(TokenCounts):
    minutes: int
    calls_per_minute: float
    tokens_per_minute: float


class LlmModelUsage(TokenCounts):
    kind: str  # llm_round (routing) | rag_answer (answer generation)
    model: str
    calls_5m: int = Field(alias="calls5m")
    tokens_5m: int = Field(alias="tokens5m")


class LlmSummary(WireModel):
    windows: dict[str, LlmWindow]
    total: TokenCounts
    by_model: list[LlmModelUsage]


class RateLimiterSummary(WireModel):
    waits_5m: int = Field(alias="waits5m")
    waits_60m: int = Field(alias="waits60m")
    waits_total: int
    waited_s_5m: float = Field(alias="waitedS5m")
    waited_s_60m: float = Field(alias="waitedS60m")
    waited_s_total: float
    p95_wait_ms_60m: float | None = Field(alias="p95WaitMs60m")


class WebhookSummary(WireModel):
    pending: int  # not delivered yet (includes retrying)
    retrying: int  # pending after at least one failed attempt
    delayed: int  # pending, next attempt scheduled in the future
    delivered: int
    dead: int  # dead-lettered: gave up
    disabled: int  # not sent: the endpoint was disabled (recoverable)
    oldest_pending_age_s: float | None
    endpoints_enabled: int
    endpoints_failing: int  # enabled, but the last attempt(s) failed
    endpoints_disabled: int  # failing past the disable window, or answered 410


class ReembedSummary(WireModel):
    """The latest run. `total`, `done`, `failed` count localizations; chunks are counted apart."""

    id: str
    status: str
    model: str
    collection: str
    total: int
    done: int
    failed: int
    chunks_embedded: int
    chunks_skipped: int  # unchanged (same content hash): copied, not embedded again
    progress: float  # (done + failed) / total, 0..1
    rate_per_s: float | None  # localizations done per second since the run started
    eta_s: float | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    updated_at: datetime | None
    finished_at: datetime | None


class QueueSeries(WireModel):
    depth: list[int | None]  # peak depth seen in the minute; None = nobody looked
    succeeded: list[int]
    failed: list[int]
    retried: list[int]
    run_p50_ms: list[float | None]
    run_p95_ms: list[float | None]
    wait_p95_ms: list[float | None]


class Series(WireModel):
    minute_starts: list[int]  # epoch seconds, oldest first, one per minute
    queues: dict[str, QueueSeries]
    llm_calls: list[int]
    llm_input_tokens: list[int]
    llm_output_tokens: list[int]
    webhook_delivered: list[int]
    webhook_failed: list[int]


class FailureEntry(WireModel):
    queue: str
    task: str
    task_id: str
    error: str
    at: datetime


class RestartEntry(WireModel):
    child: str
    reason: str
    at: datetime
    down_s: float


class ReliabilitySummary(WireModel):
    """Totals since statistics began (infra/counters.py)."""

    llm_calls: dict[str, dict[str, int]]  # kind (route | answer) -> outcome -> calls
    llm_retries: dict[str, int]  # kind -> retries
    fallbacks: dict[str, int]  # reason -> routings through the deterministic fallback
    rate_limiter: dict[str, int]  # waited | gave_up
    page_cache: dict[str, int]  # hit | miss
    tool_resends: dict[str, int]  # task -> sent again because its worker died
    restarts: dict[str, int]  # child of `turnout up` -> restarts by its supervisor
    recent_restarts: list[RestartEntry]


class OpsSummary(WireModel):
    generated_at: datetime
    queues: list[QueueSummary]
    workers: list[WorkerSummary]
    jobs: JobsSummary
    llm: LlmSummary
    rate_limiter: RateLimiterSummary
    webhooks: WebhookSummary
    reembed: ReembedSummary | None
    recent_failures: list[FailureEntry]
    series: Series
    reliability: ReliabilitySummary
