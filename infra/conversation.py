"""A conversation's previous turn (issue 28): what a follow-up question continues.

Built from the previous job (its question and its stored result) by the API, carried on the
`run_job` message, and read by the router: the filters a filter-only follow-up changes, the
history a model follow-up is routed with, and the page "them" means.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from infra.db.jobs import JobRow
from infra.results import QuestionResult, WireModel
from infra.status import JobStatus


class PreviousTurn(WireModel):
    """The previous job of a conversation, as the router needs it."""

    job_id: str
    question: str
    tool: str | None = None  # None: the previous job ran no tool (refused, failed, not done)
    # Its normalized arguments in the tools' wire form (the search's filters, the RAG question and
    # answerLanguage); no `adjustments`.
    arguments: dict[str, Any] = Field(default_factory=dict)
    answer: str | None = None
    source_ids: list[str] = Field(default_factory=list)  # the answer's sources (localization ids)
    page_ids: list[str] = Field(default_factory=list)  # the article ids of the page it showed ("them")
    found: bool = False  # it found something (a page with items, an answer with sources)

    @classmethod
    def from_job(cls, job: JobRow) -> PreviousTurn:
        if job.status is not JobStatus.SUCCEEDED or job.result is None:
            return cls(job_id=job.id, question=job.question)
        return cls.from_result(job.id, job.question, job.result)

    @classmethod
    def from_result(cls, job_id: str, question: str, result: QuestionResult) -> PreviousTurn:
        arguments: dict[str, Any] = {}
        if result.search is not None:
            # A combined answer always reads page 1 of the job's page size: no page to change.
            dropped = {"adjustments"} if result.question is None else {"adjustments", "page", "pageSize"}
            arguments = {k: v for k, v in result.search.wire().items() if k not in dropped}
        if result.question is not None:
            arguments.update(question=result.question, answerLanguage=result.answer_language)
        page_ids = [item.id for item in result.articles.items] if result.articles is not None else []
        sources = [source.article_id for source in result.sources]
        return cls(
            job_id=job_id, question=question, tool=result.tool, arguments=arguments, answer=result.answer,
            source_ids=sources, page_ids=page_ids, found=bool(page_ids or sources),
        )
