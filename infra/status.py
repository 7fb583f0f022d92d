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
