"""The job's result for an executed (or not executable) tool call, and what the model is told
after an execution that found nothing. The gateway (router/gateway.py) runs the calls; this is
how their outcomes read."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from infra.budgets import BudgetExceeded
from infra.results import ArticlesPage, NormalizedSearch, QuestionResult
from infra.status import ResultStatus, ResultType
from router.tools import SEARCH, SEARCH_AND_ASK

if TYPE_CHECKING:  # the call is the gateway's
    from router.gateway import ValidatedCall

NO_ARTICLES = "No published articles match these filters."


def search_result(call: ValidatedCall, page: ArticlesPage) -> QuestionResult:
    """A search's page as the job's result (the search as it ran: what it relaxed listed)."""
    assert call.search is not None
    return QuestionResult(
        result_type=ResultType.SEARCH,
        status=ResultStatus.ANSWERED if page.items else ResultStatus.NO_RESULTS,
        articles=page, search=executed(call.search, page), tool=SEARCH,
        message=None if page.items else NO_ARTICLES,
    )


def nothing_to_answer(call: ValidatedCall, page: ArticlesPage) -> QuestionResult:
    """A combined call whose search found nothing: "nothing found", no answer over anything wider."""
    return QuestionResult(
        result_type=ResultType.COMBINED, status=ResultStatus.NO_RESULTS, articles=page,
        search=call.search, question=call.question, answer_language=call.answer_language,
        tool=SEARCH_AND_ASK, message=NO_ARTICLES,
    )


def executed(search: NormalizedSearch, page: ArticlesPage) -> NormalizedSearch:
    """The search as it ran: with what the execution relaxed (a page's own notes) in its adjustments."""
    notes = [note for note in page.adjustments if note not in search.adjustments]
    return search.model_copy(update={"adjustments": [*search.adjustments, *notes]}) if notes else search


def empty_result(call: ValidatedCall, reason: str) -> QuestionResult:
    """The answer to a search nothing can match (a period after today), without running it."""
    assert call.search is not None
    page = ArticlesPage(items=[], total_items=0, page=call.search.page, page_size=call.search.page_size, total_pages=0)
    combined = call.tool == SEARCH_AND_ASK
    return QuestionResult(
        result_type=ResultType.COMBINED if combined else ResultType.SEARCH, status=ResultStatus.NO_RESULTS,
        articles=page, search=call.search, tool=call.tool, message=reason[:1].upper() + reason[1:] + ".",
        question=call.question if combined else None, answer_language=call.answer_language if combined else None,
    )


def answer_result(
    result_type: ResultType, call: ValidatedCall, outcome: Any, *, page: ArticlesPage | None, truncated: bool
) -> QuestionResult:
    """The RAG outcome as the job's result; `BudgetExceeded` when the answer call had no budget."""
    if outcome.budget_exceeded is not None:
        refusal = BudgetExceeded.from_details(outcome.budget_exceeded)
        refusal.usage = outcome.usage.model_copy()
        raise refusal
    result = QuestionResult(
        result_type=result_type,
        status=ResultStatus(outcome.status),
        answer=outcome.answer,
        answer_language=outcome.answer_language or call.answer_language,
        answer_kind=outcome.answer_kind,
        sources=list(outcome.sources),
        articles=page,
        search=call.search,
        question=call.question,
        coverage_limited=bool(outcome.coverage_limited or truncated),
        tool=call.tool,
        message=getattr(outcome, "message", None),
    )
    result.usage = outcome.usage.model_copy()  # the RAG answer's LLM spend, merged by the service
    return result


def observation(result: QuestionResult) -> str:
    """What the model is told after an execution that found nothing (it may broaden and retry)."""
    filters = {k: v for k, v in (result.search.wire() if result.search else {}).items() if v not in (None, [], "")}
    what = f" with {json.dumps(filters, ensure_ascii=False)}" if filters else ""
    return (
        f"{result.tool} found nothing{what}. If the filters were too narrow you may call a tool again "
        "with broader ones; otherwise reply without a tool."
    )
