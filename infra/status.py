"""Shared vocabularies: job status, queues, result types (SPEC §8, §9)."""

from enum import StrEnum


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class JobPriority(StrEnum):
    """A job's priority (issue 27): batch work yields to interactive work."""

    INTERACTIVE = "interactive"
    BATCH = "batch"

    @property
    def broker_priority(self) -> int:
        """The kombu Redis priority of its `run_job` message: lower is served first (BRPOP reads the
        lists in priority-step order), so interactive messages overtake waiting batch ones."""
        return 0 if self is JobPriority.INTERACTIVE else 9


class Queue(StrEnum):
    ROUTER = "router"
    SEARCH = "search"
    RAG = "rag"
    WEBHOOKS = "webhooks"
    EMBEDDINGS = "embeddings"
    MAINTENANCE = "maintenance"


class ResultType(StrEnum):
    SEARCH = "SearchResult"
    ANSWER = "AnswerResult"
    COMBINED = "CombinedResult"


class ResultStatus(StrEnum):
    ANSWERED = "answered"
    NO_RESULTS = "no_results"
    REFUSED = "refused"
    FAILED = "failed"
