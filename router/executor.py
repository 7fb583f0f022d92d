"""The router's executor port: where validated tool calls run.

`ToolExecutor` is what the gateway calls; the job runner's implementation sends the calls to the
search and RAG queues (`workers.executor.QueueExecutor`). `InProcessExecutor` calls the services
directly (one process, e.g. a bench or a test). A tool that ran and failed raises
`ToolExecutionError`; one that could not reach PostgreSQL raises `DatabaseUnavailable` (a
`ConnectionError`: transient).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import asyncpg

from infra.messages.ask import AskOutcome, PublishedPeriod
from infra.results import ArticlesPage, Language, LanguageFilter, NormalizedSearch
from router.question_reading import retrieval_text

if TYPE_CHECKING:
    from retrieval.rag import RagContext

# Without a job deadline a queued call still may not wait forever.
DEFAULT_TIMEOUT_S = 120.0


class ToolExecutionError(RuntimeError):
    """The tool ran and failed (the task raised); not the model's fault, not retried by the router."""


@dataclass(frozen=True)
class AskCall:
    """A RAG answer to run: the question, the articles' language filter, the answer's language,
    the scope (localization ids; None: the whole collection) and whether that scope was cut to
    a page; ``job_id`` audits the answer call under the job."""

    question: str
    language: LanguageFilter | None  # one code or several; None: every language
    answer_language: Language
    scope: Sequence[str] | None = None
    scope_truncated: bool = False
    job_id: str | None = None
    prefer_period: PublishedPeriod | None = None  # no scope: the articles of the period the question names first

    @property
    def retrieval_text(self) -> str | None:
        """What retrieval reads instead of the question (its language cues left out), None: the question."""
        return retrieval_text(self.question)


class ToolExecutor(Protocol):
    async def search(self, q: NormalizedSearch, *, deadline: float | None = None) -> ArticlesPage: ...

    async def ask(self, call: AskCall, *, deadline: float | None = None) -> AskOutcome: ...


def remaining_s(deadline: float | None) -> float:
    """Seconds left before `deadline` (monotonic), or the default wait without one."""
    return DEFAULT_TIMEOUT_S if deadline is None else deadline - time.monotonic()


class InProcessExecutor:
    """Runs the services in this process. RAG needs a `RagContext`, which opens the vector
    store: only in the one process allowed to (see CONTRIBUTING)."""

    def __init__(self, pool: asyncpg.Pool, rag: RagContext | None = None) -> None:
        self.pool = pool
        self.rag = rag

    async def search(self, q: NormalizedSearch, *, deadline: float | None = None) -> ArticlesPage:
        from retrieval.search import search_articles

        async with asyncio.timeout(max(0.0, remaining_s(deadline))):
            return await search_articles(self.pool, q)

    async def ask(self, call: AskCall, *, deadline: float | None = None) -> AskOutcome:
        from retrieval.rag import answer_question

        if self.rag is None:
            raise ToolExecutionError("this process has no RAG context (the vector store lives in the rag worker)")
        return await answer_question(
            self.rag, question=call.question, language=call.language, answer_language=call.answer_language,
            scope=call.scope, scope_truncated=call.scope_truncated, deadline=deadline, job_id=call.job_id,
            retrieval_text=call.retrieval_text, prefer_period=call.prefer_period,
        )
