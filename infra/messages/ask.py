"""The ask hop: the router's RAG call (`turnout.rag.answer`, sent by workers/executor.py and
answered by workers/tasks/rag.py) and its reply."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import Field

from infra.results import Language, LanguageFilter, Source, Usage, WireModel
from infra.status import ResultStatus

AnswerKind = Literal["llm", "extractive"]


class PublishedPeriod(WireModel):
    """When the articles an ask prefers were published (a bound None: open), read from the question."""

    date_from: date | None = None
    date_to: date | None = None


class AskRequest(WireModel):
    """The ``turnout.rag.answer`` task's payload. Unknown fields are refused (a forged payload)."""

    question: str = Field(min_length=1, max_length=10_000)
    retrieval_text: str | None = Field(default=None, max_length=10_000)  # what retrieval reads; None: the question
    # An ask over the whole collection that names a period: its articles are preferred, not required.
    prefer_period: PublishedPeriod | None = None
    language: LanguageFilter | None = None  # one code or several (the articles' languages)
    answer_language: Language
    scope: list[str] | None = None  # localization ids; None: the whole collection
    scope_truncated: bool = False
    deadline_s: float | None = Field(default=None, gt=0)  # seconds left when the task was sent
    job_id: str | None = None  # the RAG side audits its answer call (`rag_answer`) under the job

    def with_deadline(self, left_s: float) -> AskRequest:
        """The same call with the seconds left now (relative: monotonic clocks differ between processes)."""
        return self.model_copy(update={"deadline_s": left_s})


class AskOutcome(WireModel):
    """A RAG answer (or why there is none)."""

    status: ResultStatus
    answer: str | None = None
    answer_kind: AnswerKind | None = None
    sources: list[Source] = Field(default_factory=list)
    coverage_limited: bool = False
    usage: Usage = Field(default_factory=Usage)
    answer_language: str | None = None
    message: str | None = None  # why there is no answer (no_results), or why it is extractive
    budget_exceeded: dict[str, Any] | None = None  # the key's budget had no room for the call (its details)
