"""Follow-ups in the router (issue 28): a question that continues the previous turn.

- **Filter-only** ("только на немецком", "page 3"): read in code (`router.followup_reader`),
  the previous call with that change runs with no LLM call, `routedBy: "followup"`, the change
  listed in `adjustments`.
- **Needs the model** ("summarize them", "why was that?"): routed with the previous turn in the
  history (its question, tool, normalized filters, page ids, answer and sources), bounded by
  `limits.followup_history_tokens`. A follow-up that names the previous result ("them",
  "davon", "из них") after a search is answered by SearchAndAskArticles over exactly the
  previous page's articles: the scope never widens, an empty previous page is "nothing found".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import date
from typing import Any

from infra.conversation import PreviousTurn
from infra.results import NormalizedSearch, QuestionResult
from infra.settings import Limits
from infra.status import ResultStatus, ResultType
from retrieval.search import SearchArgumentError, normalize_search
from router.audit import AuditTrail
from router.engine import Turn, estimate_tokens
from router.executor import AskCall, ToolExecutor
from router.followup_reader import read_filter_change
from router.gateway import ValidatedCall
from router.question_reading import question_period
from router.tool_results import answer_result
from router.tools import ASK, SEARCH, SEARCH_AND_ASK

# Words that stand for the previous result ("them", "those", "davon", "из них").
_PREVIOUS_RESULT = re.compile(
    r"(?<!\w)(?:them|those|these|they|их|них|они|ними|эти|этих|этим|этими|davon|diese|dieser|diesen|denen|ihnen"
    r"|deren)(?!\w)",
    re.IGNORECASE | re.UNICODE,
)
_SIE = re.compile(r"(?<!\w)sie(?!\w)")  # lower-case only: "fass sie zusammen" (the formal "Sie" is you)
_SEARCHES = (SEARCH, SEARCH_AND_ASK)
_NOTHING_FOUND = "The previous result had no articles, so there is nothing to answer from."
_ANSWER_CLIP = "…"


class Followup:
    """One follow-up question and the previous turn it continues."""

    def __init__(self, previous: PreviousTurn, question: str, today: date, limits: Limits,
                 page_size: int | None = None) -> None:
        self.previous = previous
        self.question = question
        self.today = today
        self.limits = limits
        self.page_size = page_size
        self.names_previous_result = previous.tool in _SEARCHES and bool(
            _PREVIOUS_RESULT.search(question) or _SIE.search(question)
        )

    # ---- filter-only ----
    def filter_call(self) -> ValidatedCall | None:
        """The previous call with the follow-up's filter change (None: not a filter-only follow-up)."""
        previous = self.previous
        change = read_filter_change(previous.tool, previous.arguments, self.question, self.today)
        if change is None or previous.tool is None:
            return None
        self.names_previous_result = False  # "sort them oldest first": the filters' subject, not a scope
        args = change.arguments
        if previous.tool == ASK:  # the ask again: it prefers the period its question names, as it did
            return ValidatedCall(ASK, args, question=args["question"], language=args.get("language"),
                                 answer_language=args.get("answerLanguage"), adjustments=change.notes,
                                 period=question_period(args["question"], self.today))
        search_args = {k: v for k, v in args.items() if k not in ("question", "answerLanguage")}
        if previous.tool == SEARCH_AND_ASK:  # the combined tool answers from page 1 of the job's page size
            search_args.update(page=1, pageSize=self.page_size or self.limits.page_size_default)
        try:
            search = normalize_search(search_args, limits=self.limits, today=self.today)
        except SearchArgumentError:
            return None  # e.g. a period after today: the router explains it
        search = search.model_copy(update={"adjustments": [*search.adjustments, *change.notes]})
        if previous.tool == SEARCH:
            return ValidatedCall(SEARCH, args, search=search)
        return ValidatedCall(SEARCH_AND_ASK, args, search=search, question=args.get("question"),
                             language=search.language, answer_language=args.get("answerLanguage"))

    # ---- the model's history ----
    def history(self) -> list[Turn]:
        """The previous turn as two history messages, within `limits.followup_history_tokens`."""
        bound = self.limits.followup_history_tokens
        previous = self.previous
        question = previous.question
        answer = previous.answer or ""
        ids = list(previous.page_ids)
        while True:
            turns = [Turn("user", question), Turn("assistant", self._summary(ids, answer))]
            over = estimate_tokens(turns) - bound
            if over <= 0:
                return turns
            if answer:  # the answer gives way first, then the page's ids, then the question
                answer = answer[: max(0, len(answer) - 3 * over - len(_ANSWER_CLIP))].rstrip()
                answer = answer + _ANSWER_CLIP if answer else ""
            elif ids:
                ids = ids[: len(ids) // 2]
            elif len(question) > 1:
                question = question[: max(1, len(question) - 3 * over)]
            else:
                return turns[:1]

    def _summary(self, ids: Sequence[str], answer: str) -> str:
        previous = self.previous
        if previous.tool is None:
            return "(that message ran no tool)"
        parts = [f"{previous.tool} {json.dumps(previous.arguments, ensure_ascii=False, separators=(',', ':'))}"]
        if previous.tool in _SEARCHES:
            parts.append(f"page article ids: {', '.join(ids) if ids else 'none (nothing found)'}")
        if answer:
            parts.append(f"answer: {answer}")
        if previous.source_ids:
            parts.append(f"sources: {', '.join(previous.source_ids)}")
        return "Called " + "; ".join(parts)

    # ---- "them": the previous page ----
    def scoped(self, call: ValidatedCall) -> ValidatedCall | None:
        """The call as SearchAndAskArticles over the previous page (None: the follow-up does not
        name the previous result, and the call runs as it is)."""
        if not self.names_previous_result:
            return None
        question = call.question or self.question
        previous = self.previous
        search = NormalizedSearch.model_validate({
            **{k: v for k, v in previous.arguments.items() if k not in ("question", "answerLanguage")},
            "adjustments": [f"follow-up: scoped to the previous page's {len(previous.page_ids)} article(s)"],
        })
        arguments = {"question": question, "answerLanguage": call.answer_language, "scope": "previous_page"}
        return ValidatedCall(SEARCH_AND_ASK, arguments, search=search, question=question,
                             language=None, answer_language=call.answer_language)

    async def run_scoped(self, call: ValidatedCall, executor: ToolExecutor, audit: AuditTrail, *,
                         deadline: float) -> QuestionResult:
        """Answer ``call`` (from `scoped`) from exactly the previous page's articles."""
        assert call.question is not None and call.answer_language is not None
        ids = list(self.previous.page_ids)
        if not ids:
            result = QuestionResult(
                result_type=ResultType.COMBINED, status=ResultStatus.NO_RESULTS, search=call.search,
                question=call.question, answer_language=call.answer_language, tool=SEARCH_AND_ASK,
                message=_NOTHING_FOUND,
            )
        else:
            outcome = await executor.ask(AskCall(
                question=call.question, language=None, answer_language=call.answer_language, scope=ids,
                job_id=audit.job_id,
            ), deadline=deadline)
            result = answer_result(ResultType.COMBINED, call, outcome, page=None, truncated=False)
        await audit.record("tool_execution", tool=call.tool, arguments=call.arguments,
                           normalized_arguments=_scoped_arguments(call, ids), outcome=result.status.value)
        return result


def _scoped_arguments(call: ValidatedCall, ids: list[str]) -> dict[str, Any]:
    return {**call.normalized_arguments(), "scope": ids}
