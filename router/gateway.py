"""The execution gateway: a tool-call intent is validated against the registry and policy
(SPEC §5), executed through a `ToolExecutor`, and written to the audit trail.

The model never touches data: it proposes `(tool, arguments)`; this module decides whether
that is allowed, what exactly runs (the normalized arguments) and records both.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, get_args

from pydantic import ValidationError

from infra.db.pool import DatabaseUnavailable
from infra.messages.ask import PublishedPeriod
from infra.results import Language, LanguageFilter, NormalizedSearch, QuestionResult
from infra.settings import ConfigError, Limits
from infra.status import ResultType
from infra.text import squash_controls
from infra.validation import first_error
from retrieval.search import LANGUAGE_ERROR, SearchArgumentError, normalize_search
from router.audit import AuditTrail
from router.dates import check_against_question
from router.errors import TOOL_FAILED, RoutingFailed
from router.executor import AskCall, ToolExecutionError, ToolExecutor
from router.material_language import LanguageCues, language_cues, material_language
from router.question_reading import published_period
from router.reader import as_words, read_period
from router.tool_results import answer_result, empty_result, executed, nothing_to_answer, search_result
from router.tools import ASK, SEARCH, SEARCH_AND_ASK, AskArgs, ToolRegistry, combined_search_keys


@dataclass(frozen=True)
class ValidatedCall:
    """A call the gateway accepted, with what will actually run."""

    tool: str
    arguments: dict[str, Any]  # as the model sent them
    search: NormalizedSearch | None = None
    question: str | None = None
    language: LanguageFilter | None = None  # the RAG language filter (AskArticles): one code or several
    answer_language: Language | None = None
    adjustments: tuple[str, ...] = ()  # AskArticles: what code changed in the call (a search lists its own)
    # Set when nothing can match whatever is searched (a period after today): the reason, and
    # the result is an honest empty one without running the search.
    empty_reason: str | None = None
    # AskArticles: the period the user's question names; the ask prefers its articles (no filter).
    period: PublishedPeriod | None = None

    def normalized_arguments(self) -> dict[str, Any]:
        out: dict[str, Any] = self.search.wire() if self.search is not None else {}
        if self.tool == ASK:
            out["language"] = self.language
            if self.period is not None:  # preferred, not a filter: shown, so it is not applied unseen
                out["preferPeriod"] = self.period.wire()
        if self.question is not None:
            out["question"] = self.question
            out["answerLanguage"] = self.answer_language
        return out


@dataclass(frozen=True)
class Rejection:
    tool: str
    arguments: Any
    reason: str

    @property
    def message(self) -> str:
        """The tool message the model gets back (it answers the rejected tool_call_id)."""
        return f"ERROR: {self.reason}"


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN/Infinity; JSON (and PostgreSQL jsonb) do not.
    raise ValueError(f"{name} is not a JSON value")


def parse_arguments(raw: str | Mapping[str, Any]) -> dict[str, Any] | str:
    """The arguments as an object, or a reason why they are not one."""
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        parsed = json.loads(raw, parse_constant=_reject_constant) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
    except ValueError as exc:
        return f"the arguments are not valid JSON ({exc}); send a JSON object"
    if not isinstance(parsed, dict):
        return f"the arguments must be a JSON object, got {type(parsed).__name__}"
    return parsed


def _ask_error(tool: str, exc: ValidationError) -> str:
    field, first = first_error(exc, "arguments")
    got = first.get("input")
    kind = first["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(AskArgs.model_fields)
        return f"{tool}: unknown argument {field!r}; allowed: {allowed}"
    if kind == "missing":
        return f"{tool}: argument {field!r} is required"
    if kind == LANGUAGE_ERROR:  # names the bad code
        return f"{tool}: {first['msg']}"
    if kind == "literal_error":
        return f"{tool}: {field} {got!r} is not supported; use one of ru, en, de"
    if kind == "string_type":
        return f"{tool}: {field} must be a string, got {got!r}"
    if kind == "string_too_short":
        return f"{tool}: {field} must not be empty"
    return f"{tool}: {field}: {first['msg']} (got {got!r})"


def articles_language(cues: LanguageCues) -> Language | None:
    """The one language the question names in the articles' role, proven (None: none, or not proven).

    The reader's cues name it; a capable model is overridden only when the naming also stands on
    a collection noun ("German articles", "Beiträge … auf Deutsch"), so a mention in another role
    ("the German locale") proves nothing."""
    return cues.named if cues.named is not None and cues.named in cues.on_collection else None


class CallValidator:
    """Pure validation and normalization of one tool call for one job (no I/O)."""

    def __init__(
        self,
        registry: ToolRegistry,
        limits: Limits,
        *,
        today: date,
        question: str,
        user_language: Language,
        page_size: int | None = None,
        answer_language: Language | None = None,
        client_language: Language | None = None,
    ) -> None:
        self.registry = registry
        self.limits = limits
        self.today = today
        self.question = question
        self.user_language = user_language
        self.page_size = page_size  # the client's choice wins over the model's
        self.answer_language = answer_language  # the client's choice wins over the model's
        self.client_language = client_language  # the material language's default, over the question's
        self.language_cues = language_cues(question)
        self.articles_language = articles_language(self.language_cues)
        # the period named, and cue words it could not read ("since: 2023-01" read as the reader reads it)
        self.period_reading = read_period(as_words(question), today)

    def _with_language(self, args: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The arguments with the articles' language to search, and the adjustment made (None: none).

        Left out: the seed's rule fills it (router.material_language). Sent: it stands, unless the
        question contradicts it provably -- it names one language in the articles' role ("German
        articles", "статьи на немецком"), asks for all languages, or leaves the sent one out ("anything
        but German") -- and then the question wins,
        listed as an adjustment. A mention in another role ("the German locale", "answer in
        English", two languages) proves nothing. The question's own language sent by the model is
        the rule's default (a client's `language` replaces it, as when it is left out). A value that
        is not a language is left for the normalization to reject with its reason."""
        out = dict(args)
        proposed = out.get("language")
        if proposed is not None and not (isinstance(proposed, str) and proposed.strip().casefold() in _LANGUAGES):
            return out, None
        default = material_language(self.language_cues, written_in=self.user_language, client=self.client_language)
        if proposed is None:
            out["language"] = default
            return out, None
        sent: Language = proposed.strip().casefold()  # type: ignore[assignment]
        named = self.articles_language
        if named is not None and named != sent:
            out["language"] = named
            return out, f"language {sent} replaced by {named}: the question asks for {_NAMES[named]} articles"
        if sent in self.language_cues.excluded:  # "anything but German", and the model sent German
            out["language"] = default
            others = " and ".join(_NAMES[c] for c in ([default] if isinstance(default, str) else default or []))
            return out, f"language {sent} replaced by {others}: the question leaves {_NAMES[sent]} articles out"
        if self.language_cues.all_languages and not self.language_cues.excluded:
            out["language"] = None
            return out, f"language {sent} dropped: the question asks for articles in all languages"
        client = self.client_language
        if sent == self.user_language and client is not None and client != sent and named != sent:
            # the question's own language, unless the question names it for the articles ("auf Deutsch erschienene Beiträge")
            out["language"] = client
            return out, f"language {sent} (the question's own) replaced by the client's {client}"
        out["language"] = sent
        return out, None

    def validate(self, name: str, raw: str | Mapping[str, Any]) -> ValidatedCall | Rejection:
        parsed = parse_arguments(raw)
        if self.registry.get(name) is None:
            return Rejection(name, parsed, f"unknown tool {name!r}; available tools: {', '.join(self.registry.names)}")
        if isinstance(parsed, str):
            return Rejection(name, raw, f"{name}: {parsed}")
        steps = TOOL_STEPS.get(name)
        if steps is None:  # a registry/gateway mismatch
            return Rejection(name, parsed, f"tool {name!r} has no executor")
        return steps.validate(self, parsed)

    def _normalize(self, tool: str, raw: Mapping[str, Any]) -> NormalizedSearch | Rejection:
        period = self.period_reading.period
        future = period is not None and period.future
        unread = self.period_reading.unread
        args = dict(raw)
        if future:  # whatever dates were sent: nothing after today can match (issue 22, item 2)
            args = {k: v for k, v in args.items() if k not in ("dateFrom", "dateTo")}
        if unread and isinstance(args.get("text"), str):
            args["text"] = _without_words(args["text"], unread)  # cue words are no topic (issue 22, item 4)
        try:
            normalized = normalize_search(args, limits=self.limits, today=self.today)
        except SearchArgumentError as exc:
            return Rejection(tool, dict(raw), f"{tool}: {exc.message}")
        if future:
            assert period is not None
            return normalized.model_copy(update={
                "date_from": period.date_from, "date_to": period.date_to,
                "adjustments": [*normalized.adjustments, _future_reason(period.phrase, period.date_from,
                                                                        period.date_to, self.today)],
            })
        reason = check_against_question(self.question, normalized.date_from, normalized.date_to, self.today)
        if reason is not None:
            return Rejection(tool, dict(raw), f"{tool}: {reason}")
        if unread and normalized.date_from is None and normalized.date_to is None:
            words = "', '".join(unread)
            normalized = normalized.model_copy(update={
                "adjustments": [*normalized.adjustments, f"could not read the period {words!r}; searched all dates"],
            })
        return normalized

    def _empty_reason(self) -> str | None:
        period = self.period_reading.period
        if period is None or not period.future:
            return None
        return _future_reason(period.phrase, period.date_from, period.date_to, self.today)

    def _answer_language(self, requested: Language | None) -> Language:
        return self.answer_language or requested or self.user_language

    def _search(self, args: dict[str, Any]) -> ValidatedCall | Rejection:
        raw, adjusted = self._with_language(args)
        if self.page_size is not None:
            raw["pageSize"] = self.page_size
        normalized = self._normalize(SEARCH, raw)
        if isinstance(normalized, Rejection):
            return Rejection(SEARCH, args, normalized.reason)
        return ValidatedCall(SEARCH, args, search=_adjusted(normalized, adjusted),
                             empty_reason=self._empty_reason())

    def _ask_args(self, tool: str, args: Mapping[str, Any]) -> AskArgs | Rejection:
        try:
            ask = AskArgs.model_validate(dict(args))
        except ValidationError as exc:
            return Rejection(tool, dict(args), _ask_error(tool, exc))
        question = squash_controls(ask.question)  # as in search text
        if not question:
            return Rejection(tool, dict(args), f"{tool}: argument 'question' must not be empty")
        if len(question) > self.limits.question_max_chars:
            return Rejection(
                tool, dict(args),
                f"{tool}: question is {len(question)} characters; at most {self.limits.question_max_chars}",
            )
        return ask.model_copy(update={"question": question})

    def _ask(self, args: dict[str, Any]) -> ValidatedCall | Rejection:
        ask = self._ask_args(ASK, args)
        if isinstance(ask, Rejection):
            return ask
        language, adjusted = self._with_language({"language": ask.language})
        return ValidatedCall(
            ASK, args, question=ask.question, language=language["language"],
            answer_language=self._answer_language(ask.answerLanguage),
            adjustments=(adjusted,) if adjusted else (), period=published_period(self.period_reading.period),
        )

    def _combined(self, args: dict[str, Any]) -> ValidatedCall | Rejection:
        search_keys = combined_search_keys(self.registry)
        allowed = search_keys | {"question", "answerLanguage"}
        unknown = sorted(set(args) - allowed)
        if unknown:
            return Rejection(
                SEARCH_AND_ASK, args,
                f"{SEARCH_AND_ASK}: unknown argument {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}",
            )
        search_raw, adjusted = self._with_language({k: v for k, v in args.items() if k in search_keys})
        # The combined tool always answers from page 1 of the job's page size.
        search_raw.update(page=1, pageSize=self.page_size or self.limits.page_size_default)
        normalized = self._normalize(SEARCH_AND_ASK, search_raw)
        if isinstance(normalized, Rejection):
            return Rejection(SEARCH_AND_ASK, args, normalized.reason)
        ask_raw = {k: v for k, v in args.items() if k in ("question", "answerLanguage")}
        ask = self._ask_args(SEARCH_AND_ASK, ask_raw)
        if isinstance(ask, Rejection):
            return Rejection(SEARCH_AND_ASK, args, ask.reason)
        normalized = _adjusted(normalized, adjusted)
        return ValidatedCall(
            SEARCH_AND_ASK, args, search=normalized, question=ask.question, language=normalized.language,
            answer_language=self._answer_language(ask.answerLanguage), empty_reason=self._empty_reason(),
        )


_LANGUAGES = frozenset(get_args(Language))
_NAMES: dict[str, str] = {"ru": "Russian", "en": "English", "de": "German"}


def _adjusted(normalized: NormalizedSearch, adjustment: str | None) -> NormalizedSearch:
    if adjustment is None:
        return normalized
    return normalized.model_copy(update={"adjustments": [*normalized.adjustments, adjustment]})


def _future_reason(phrase: str, start: date | None, end: date | None, today: date) -> str:
    span = f"{start.isoformat() if start else '…'}..{end.isoformat() if end else '…'}"
    return (f"the period {phrase!r} ({span}) is after today ({today.isoformat()}): no article can be from it; "
            "nothing was searched")


def _without_words(text: str, words: tuple[str, ...]) -> str:
    drop = {w.casefold() for phrase in words for w in phrase.split()}
    return " ".join(w for w in text.split() if w.strip(".,;:!?()\"'").casefold() not in drop)


class Gateway:
    """Validate -> execute -> audit, for one job."""

    def __init__(self, validator: CallValidator, executor: ToolExecutor, audit: AuditTrail) -> None:
        self.validator = validator
        self.executor = executor
        self.audit = audit

    async def check(self, name: str, raw: str | Mapping[str, Any], *, round_no: int | None) -> ValidatedCall | Rejection:
        verdict = self.validator.validate(name, raw)
        if isinstance(verdict, Rejection):
            await self.audit.record(
                "tool_rejected", round=round_no, tool=verdict.tool, arguments=verdict.arguments,
                error=verdict.reason, outcome="rejected",
            )
        return verdict

    async def execute(self, call: ValidatedCall, *, round_no: int | None, deadline: float) -> QuestionResult:
        started = time.monotonic()
        try:
            result = await self._run(call, deadline)
        except (ToolExecutionError, TimeoutError, DatabaseUnavailable) as exc:
            outcome = "timeout" if isinstance(exc, TimeoutError) else "error"
            await self.audit.record(
                "tool_execution", round=round_no, tool=call.tool, arguments=call.arguments,
                normalized_arguments=call.normalized_arguments(), outcome=outcome, error=str(exc),
                latency_ms=(time.monotonic() - started) * 1000,
            )
            if isinstance(exc, TimeoutError | DatabaseUnavailable):  # the deadline; a transient outage
                raise
            raise RoutingFailed(TOOL_FAILED, f"{call.tool} failed: {exc}") from exc
        await self.audit.record(
            "tool_execution", round=round_no, tool=call.tool, arguments=call.arguments,
            normalized_arguments=call.normalized_arguments(), outcome=result.status.value,
            latency_ms=(time.monotonic() - started) * 1000,
        )
        return result

    async def _run(self, call: ValidatedCall, deadline: float) -> QuestionResult:
        if call.empty_reason is not None and call.search is not None:
            return empty_result(call, call.empty_reason)
        return await TOOL_STEPS[call.tool].run(self, call, deadline)

    async def _run_search(self, call: ValidatedCall, deadline: float) -> QuestionResult:
        assert call.search is not None
        return search_result(call, await self.executor.search(call.search, deadline=deadline))

    async def _run_ask(self, call: ValidatedCall, deadline: float) -> QuestionResult:
        assert call.question is not None and call.answer_language is not None
        outcome = await self.executor.ask(AskCall(
            question=call.question, language=call.language, answer_language=call.answer_language,
            scope=None, job_id=self.audit.job_id, prefer_period=call.period,
        ), deadline=deadline)
        return answer_result(ResultType.ANSWER, call, outcome, page=None, truncated=False)

    async def _run_combined(self, call: ValidatedCall, deadline: float) -> QuestionResult:
        assert call.search is not None
        page = await self.executor.search(call.search, deadline=deadline)
        call = dataclasses.replace(call, search=executed(call.search, page))  # its scope: the relaxed page
        assert call.question is not None and call.answer_language is not None
        ids = [item.id for item in page.items]
        if not ids:  # an empty scope answers "nothing found"; it never widens to the whole collection
            return nothing_to_answer(call, page)
        truncated = page.total_items > len(page.items)
        outcome = await self.executor.ask(AskCall(
            question=call.question, language=call.language, answer_language=call.answer_language,
            scope=ids, scope_truncated=truncated, job_id=self.audit.job_id,
        ), deadline=deadline)
        return answer_result(ResultType.COMBINED, call, outcome, page=page, truncated=truncated)


@dataclass(frozen=True)
class ToolSteps:
    """How the gateway validates and runs one of the registry's tools (its name, description and
    LLM schema are its `ToolSpec`, router/tools.py): the one place a tool's behaviour is wired."""

    validate: Callable[[CallValidator, dict[str, Any]], ValidatedCall | Rejection]
    run: Callable[[Gateway, ValidatedCall, float], Awaitable[QuestionResult]]


TOOL_STEPS: dict[str, ToolSteps] = {
    SEARCH: ToolSteps(CallValidator._search, Gateway._run_search),
    ASK: ToolSteps(CallValidator._ask, Gateway._run_ask),
    SEARCH_AND_ASK: ToolSteps(CallValidator._combined, Gateway._run_combined),
}


def check_wired(registry: ToolRegistry) -> None:
    """Start-up check: every registered tool has its steps here (ConfigError naming those without)."""
    unwired = [name for name in registry.names if name not in TOOL_STEPS]
    if unwired:
        raise ConfigError(f"tools {', '.join(unwired)} are registered but not wired in router/gateway.py TOOL_STEPS")
