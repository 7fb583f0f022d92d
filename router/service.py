"""`route_question`: a question in, a `QuestionResult` out (or `RoutingFailed`).

The loop (loop mode "return on execution"): each round the model sees the conversation and
the tools and answers with a tool call or text. The gateway validates the call; an invalid
one goes back as an `ERROR: …` tool message answering its tool_call_id. The first valid call
is executed and its result IS the job's result — the model is not asked to talk about it.
Only an execution that found nothing is shown to the model (it may broaden the filters and
try again, within the execution limit). Prose instead of a tool call gets one corrective
round. No usable call in the end (prose after the corrective round, a decline, the same
rejected call sent again) hands the question to the deterministic router: a request it
recognises runs (`routedBy: "fallback"`), anything else (greetings, small talk, off-topic)
ends as `refused` in the user's language. `routedReason` in the result says why.

Degraded mode: no LLM configured, or the LLM failing through its retries within the
deadline -> the deterministic fallback route (`routedBy: "fallback"`). A cached decision for
the same normalized question today -> no LLM call (`routedBy: "cache"`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any, NoReturn, cast

import asyncpg
import redis.asyncio as aioredis

from infra.budgets import BudgetExceeded, SpendLedger
from infra.conversation import PreviousTurn
from infra.counters import FALLBACKS, RATE_LIMIT, bump
from infra.results import LANGUAGES, Language, QuestionResult
from infra.settings import LLMMode, Settings
from infra.status import ResultStatus, ResultType
from router import period_question as period_prompt
from router.audit import AuditTrail
from router.cache import CachedDecision, DecisionCache
from router.code_filters import fill_filters
from router.decision import RoutingDecision, decide_fallback
from router.engine import Engine, EngineError, EngineRequest, LLMRejected, OpenAIEngine, ToolIntent, Turn
from router.errors import BUDGET_EXCEEDED, LIMIT_DEADLINE, LLM_UNAVAILABLE, TOOL_REJECTED, RoutingFailed
from router.executor import ToolExecutor
from router.fallback import FallbackDecision, fallback_decision
from router.followup import Followup
from router.gate import CollectionRelevance, GateVerdict, Relevance, check_request
from router.gateway import CallValidator, Gateway, Rejection, ValidatedCall, observation, parse_arguments
from router.hooks import RunHooks
from router.language import written_language
from router.limits import JobBudget
from router.prompt import CORRECTION, JSON_CORRECTION, declined_reason, system_prompt, user_message
from router.ratelimit import LLMRateLimiter, RateLimitDeadline
from router.reader import DateExpectation
from router.readiness import ReadinessProbe
from router.spending import BudgetedEngine
from router.tools import ToolRegistry, default_registry

__all__ = [
    "RouteRequest", "RouterDeps", "RoutingDecision", "RoutingFailed", "decide_fallback", "decide_question",
    "route_question",
]

# Reply tokens of a routing round beyond the copied question (a decision is ~40-80 tokens).
ROUTING_REPLY_TOKENS = 128

_REFUSAL: dict[Language, str] = {
    "en": "Turnout answers questions about its articles. This message is not one, so nothing was searched.",
    "ru": "Turnout отвечает на вопросы о своих статьях. Это сообщение не такой вопрос, поэтому поиск не выполнялся.",
    "de": "Turnout beantwortet Fragen zu seinen Artikeln. Diese Nachricht ist keine solche Frage, "
          "daher wurde nichts gesucht.",
}


@dataclass
class RouteRequest:
    question: str
    answer_language: str | None = None  # ru | en | de; None = the language the user wrote in
    page_size: int | None = None
    job_id: str | None = None
    today: date | None = None  # default: today in UTC
    # {tool, arguments} chosen by the caller (an MCP host's model): the gateway checks and runs it, no LLM.
    tool_call: dict[str, Any] | None = None
    # The articles' language by default (a UI locale); a language the question names wins over it.
    client_language: str | None = None
    previous: PreviousTurn | None = None  # the turn a follow-up continues (issue 28)

    def __post_init__(self) -> None:
        if self.answer_language is not None and self.answer_language not in LANGUAGES:
            raise ValueError(f"answer_language {self.answer_language!r} is not one of {', '.join(LANGUAGES)}")
        if self.client_language is not None and self.client_language not in LANGUAGES:
            raise ValueError(f"language {self.client_language!r} is not one of {', '.join(LANGUAGES)}")

    @property
    def material_language(self) -> Language | None:
        return cast(Language | None, self.client_language)

    @property
    def language(self) -> Language | None:
        return cast(Language | None, self.answer_language)


@dataclass
class RouterDeps:
    settings: Settings
    pool: asyncpg.Pool | None  # None only for the eval harness: audit kept in memory
    redis: aioredis.Redis | None  # None: no decision cache
    executor: ToolExecutor
    engine: Engine | None  # None = degraded mode (no LLM configured)
    registry: ToolRegistry = field(default_factory=default_registry)
    rate_limiter: LLMRateLimiter | None = None
    use_decision_cache: bool = True
    fallback_on_llm_error: bool = True  # the eval harness turns it off to measure the model alone
    # The local llama-server profile: is the model serving yet? (None: always assumed ready.)
    llm_ready: Callable[[], Awaitable[bool]] | None = None
    # The request gate's relevance signal (None: the gate's rules only, e.g. an eval without a database).
    relevance: Relevance | None = None
    # The per-key budgets each LLM call of a job is reserved from (None: not accounted, e.g. the eval).
    spend: SpendLedger | None = None

    @classmethod
    def for_settings(cls, settings: Settings, *, pool: asyncpg.Pool | None, redis: aioredis.Redis | None,
                     executor: ToolExecutor, spend: SpendLedger | None = None) -> RouterDeps:
        """The production wiring: the LLM engine when one is configured, its rate limiter; fails
        on configuration errors (tool names, URLs)."""
        registry = default_registry()
        engine = OpenAIEngine(settings, registry) if settings.llm_configured else None
        return cls(
            settings=settings, pool=pool, redis=redis, executor=executor, engine=engine, registry=registry,
            rate_limiter=LLMRateLimiter.from_settings(settings) if engine is not None else None,
            llm_ready=ReadinessProbe(settings.llm_ready_url) if engine is not None and settings.llm_ready_url else None,
            relevance=CollectionRelevance(pool) if pool is not None else None, spend=spend,
        )


async def route_question(
    deps: RouterDeps,
    req: RouteRequest,
    hooks: RunHooks | None = None,
) -> QuestionResult:
    """Route and execute. With a `hooks.narrator`, audit rows are written through it (in the
    background, in order; the caller waits for it), otherwise each as it happens."""
    return await _Run(deps, req, hooks or RunHooks()).execute()


async def decide_question(deps: RouterDeps, req: RouteRequest) -> RoutingDecision:
    """The LLM's validated decision, corrections included, but nothing executed."""
    if deps.engine is None:
        return await decide_fallback(deps.settings, req, deps.registry, relevance=deps.relevance)
    run = _Run(deps, req, RunHooks())
    try:
        outcome = await run.decide()
    except RoutingFailed as exc:
        return RoutingDecision(None, {}, "llm", exc.usage, run.budget.rounds, error=exc.code, message=exc.message,
                               gate=run.gate)
    usage = run.budget.usage.model_copy()
    if isinstance(outcome, ValidatedCall):
        return RoutingDecision(outcome.tool, outcome.normalized_arguments(), run.routed_by, usage, run.budget.rounds,
                               message=run.routed_reason, gate=run.gate)
    return RoutingDecision(None, {}, outcome.routed_by, usage, run.budget.rounds, refused=outcome.message,
                           gate=run.gate)


class _Run:
    """One routing job: its budget, audit trail, gateway and conversation."""

    def __init__(
        self,
        deps: RouterDeps,
        req: RouteRequest,
        hooks: RunHooks,
    ) -> None:
        self.deps = deps
        self.req = req
        self.on_event = hooks.on_event
        self.before_tool = hooks.before_tool
        self.settings = deps.settings
        self.today = req.today or datetime.now(UTC).date()
        self.question = " ".join(req.question.split())
        self.user_language: Language = written_language(self.question) if self.question else "en"
        self.budget = JobBudget(self.settings.limits, settings=self.settings)
        self.narrator = hooks.narrator
        self.audit = AuditTrail(deps.pool, req.job_id, hooks.narrator)
        self.validator = CallValidator(
            deps.registry, self.settings.limits, today=self.today, question=self.question,
            user_language=self.user_language, page_size=req.page_size, answer_language=req.language,
            client_language=req.material_language,
        )
        self.gateway = Gateway(self.validator, deps.executor, self.audit)
        self.followup = None if req.previous is None else Followup(
            req.previous, self.question, self.today, self.settings.limits, req.page_size)
        self.cache = (  # a follow-up means something else after another turn: never cached
            DecisionCache(deps.redis, self.settings)
            if deps.redis is not None and deps.use_decision_cache and self.followup is None else None
        )
        self.last_result: QuestionResult | None = None
        self.routed_by = "llm"  # "fallback" once the question was handed to the deterministic router
        self.routed_reason: str | None = None
        # The rejected calls so far: the same one again ends the loop (the model is stuck).
        self._rejected: set[str] = set()
        # The first LLM call's rate-limit permit, asked for while the decision cache is read.
        self._first_permit: asyncio.Task[None] | None = None
        self._deterministic: FallbackDecision | None = None  # the rules' decision, read once (see _rules)
        self.gate: GateVerdict | None = None  # the request gate's verdict, once it ran
        self._model_period: DateExpectation | None = None  # an unread period the model read (code-filled filters)

    async def emit(self, kind: str, data: dict[str, Any]) -> None:
        if self.on_event is not None:
            await self.on_event(kind, data)

    # ---- entry ----
    async def execute(self) -> QuestionResult:
        """Route and run the chosen tool: the job's result."""
        outcome = await self._guarded(dry_run=False)
        assert isinstance(outcome, QuestionResult)  # only a dry run stops at a validated call
        return outcome

    async def decide(self) -> QuestionResult | ValidatedCall:
        """Route without running a tool: the validated call, or the refusal/fallback result."""
        return await self._guarded(dry_run=True)

    async def _guarded(self, *, dry_run: bool) -> QuestionResult | ValidatedCall:
        await self.emit("routing", {"llm": self.deps.engine is not None and self.req.tool_call is None})
        try:
            outcome = await self._route(dry_run)
            if self.narrator is not None:
                self.narrator.hold()  # no await since the last rows: they go with the job's final state
            return outcome
        except RateLimitDeadline as exc:
            await self._fail(LIMIT_DEADLINE, str(exc))
        except BudgetExceeded as exc:  # no fallback: the key may not spend more, the job fails saying until when
            await self._fail(BUDGET_EXCEEDED, exc.message, details=exc.details())
        except TimeoutError as exc:  # a tool execution ran into the job's deadline
            await self._fail(LIMIT_DEADLINE, f"the job deadline passed during a tool execution: {exc}")
        except RoutingFailed as exc:
            if not isinstance(exc, _RecordedFailure):  # `_fail` has written its row already
                await self.audit.record("limit", round=self.budget.rounds or None, outcome=exc.code, error=exc.message)
            raise
        finally:
            permit, self._first_permit = self._first_permit, None
            if permit is not None:  # unused (a cache hit, a failure): a permit taken stays spent
                permit.cancel()
                permit.add_done_callback(_ignore_outcome)

    async def _fail(self, code: str, message: str, *, details: dict[str, Any] | None = None) -> NoReturn:
        await self.audit.record("limit", round=self.budget.rounds or None, outcome=code, error=message)
        raise _RecordedFailure(code, message, self.budget.usage.model_copy(), details)

    async def _route(self, dry_run: bool) -> QuestionResult | ValidatedCall:
        if self.req.tool_call is not None:
            return await self._caller_chose(self.req.tool_call, dry_run)
        if not self.question:
            return self._refused("the question is empty", routed_by="llm")
        followed = await self._filter_followup(dry_run) if self.followup is not None else None
        if followed is not None:
            return followed
        # "summarize them" is a request about the previous result, whatever the gate reads in it alone
        refused = None if self.followup is not None and self.followup.names_previous_result else await self._gate()
        if refused is not None:
            return refused
        engine = self.deps.engine
        if engine is None:
            return await self._fallback("no LLM is configured (TURNOUT_LLM_BASE_URL is not set)", cause="no_llm")
        if self.deps.spend is not None and self.req.job_id is not None:  # each call held from the key's budgets
            engine = BudgetedEngine(engine, self.deps.spend, self.req.job_id)
        if self.deps.llm_ready is not None and not await self.deps.llm_ready():
            why = getattr(self.deps.llm_ready, "last_failure", "")
            return await self._fallback(
                "the local LLM is not ready yet (being built, downloaded or loaded)" + (f": {why}" if why else ""),
                cause="llm_not_ready",
            )
        if self.cache is not None and not dry_run:
            # Most questions miss the cache: the first call's permit is asked for meanwhile. On a hit
            # it stays spent, which errs on the safe side (fewer calls than the limit, never more).
            if self.deps.rate_limiter is not None:
                self._first_permit = asyncio.ensure_future(self._wait_for_rate_limit(self._first_call_tokens(engine)))
            cached = await self.cache.get(self.question, self.today)
            if cached is not None:
                from_cache = await self._from_cache(cached)
                if from_cache is not None:
                    return from_cache
        try:
            return await self._loop(engine, dry_run)
        except EngineError as exc:
            if self.budget.deadline_passed():
                await self._fail(LIMIT_DEADLINE, f"the LLM did not answer before the job's deadline ({exc})")
            if dry_run or not self.deps.fallback_on_llm_error:
                await self._fail(LLM_UNAVAILABLE, str(exc))
            cause = "llm_rejected" if isinstance(exc, LLMRejected) else "llm_unavailable"
            return await self._fallback(f"the LLM failed: {exc}", cause=cause)

    async def _caller_chose(self, call: dict[str, Any], dry_run: bool) -> QuestionResult | ValidatedCall:
        """The tool was chosen outside (an MCP host's model): the same gateway checks, runs and
        audits it; a rejection fails the job with the gateway's `ERROR: …` text, for the caller's model."""
        verdict = await self.gateway.check(str(call.get("tool")), call.get("arguments") or {}, round_no=None)
        if isinstance(verdict, Rejection):
            raise RoutingFailed(TOOL_REJECTED, verdict.message, self.budget.usage.model_copy())
        if dry_run:
            return verdict
        return self._finish(await self._execute(verdict, None), "caller")

    async def _filter_followup(self, dry_run: bool) -> QuestionResult | ValidatedCall | None:
        """A follow-up that only changes the previous call's filters: run in code, no LLM call."""
        assert self.followup is not None
        call = self.followup.filter_call()
        if call is None:
            return None
        self.routed_by = "followup"
        self.routed_reason = "a filter-only follow-up: the previous call with the change read in code; no LLM was asked"
        return call if dry_run else self._finish(await self._execute(call, None), "followup")

    # ---- the LLM loop ----
    def _first_turns(self, engine: Engine) -> list[Turn]:
        return [
            Turn("system", system_prompt(self.today, engine.mode, self.deps.registry, code_filters=engine.code_filters)),
            *(self.followup.history() if self.followup is not None else ()),
            Turn("user", user_message(self.question, self.today, engine.mode, code_filters=engine.code_filters)),
        ]

    def _first_call_tokens(self, engine: Engine) -> int:
        """What the first call will reserve (as `engine.complete` computes it)."""
        estimate = engine.estimate_input_tokens(self._first_turns(engine))
        return estimate + self._reply_room(estimate)

    def _reply_room(self, estimate: int) -> int:
        """max_tokens of a routing round: a decision is one short line of JSON (or one tool call),
        whose longest part is the question copied into `question`; capped by the budgets."""
        return min(self.budget.output_room(estimate), ROUTING_REPLY_TOKENS + len(self.question) // 2)

    async def _loop(self, engine: Engine, dry_run: bool) -> QuestionResult | ValidatedCall:
        if engine.code_filters:
            await self._ask_unread_period(engine)
        turns = self._first_turns(engine)
        corrected = False
        while True:
            round_no = self.budget.start_round()
            estimate = engine.estimate_input_tokens(turns)
            self.budget.check_room_for(estimate)
            max_output = self._reply_room(estimate)
            response = await engine.complete(
                EngineRequest(
                    turns=turns,
                    max_output_tokens=max_output,
                    deadline=self.budget.llm_deadline,
                    before_attempt=self._before_llm_call,
                )
            )
            self.budget.add_llm_call(response.input_tokens, response.output_tokens)
            await self._refund(estimate + max_output, response.input_tokens + response.output_tokens)
            declined = response.declined or (None if response.intents else declined_reason(response.text))
            first = response.intents[0] if response.intents else None
            await self.audit.record(
                "llm_round", round=round_no, loop_mode=engine.mode.value, model=response.model,
                finish_reason=response.finish_reason, input_tokens=response.input_tokens,
                output_tokens=response.output_tokens, latency_ms=response.latency_ms,
                cost_usd=self.budget.call_cost(response.input_tokens, response.output_tokens),
                tool=first.name if first else None,
                arguments=parse_arguments(first.arguments) if first else None,
                outcome="tool_call" if first else ("declined" if declined else "text"),
                error=declined,
            )
            await self.emit("llm_round", {
                "round": round_no, "finishReason": response.finish_reason, "tool": first.name if first else None,
                "inputTokens": response.input_tokens, "outputTokens": response.output_tokens,
            })
            self.budget.check_tokens()

            if response.intents:
                turns.append(Turn("assistant", response.text, tuple(response.intents)))
                intents = [self._filled(i) for i in response.intents] if engine.code_filters else response.intents
                outcome = await self._handle_calls(intents, round_no, turns, dry_run)
                if outcome is not None:
                    return outcome
                continue
            if self.last_result is not None:
                return self._finish(self.last_result, "llm")  # the model is done after "nothing found"
            if declined is not None:
                # Its own reason stays in the audit: a model's words are never shown to the user.
                return await self._hand_off("the model chose no tool", dry_run, cause="declined", declined=True)
            if corrected:
                return await self._hand_off(
                    "the model answered in prose instead of calling a tool, also after a corrective round", dry_run,
                    cause="no_tool_call",
                )
            corrected = True
            turns.append(Turn("assistant", response.text or ""))
            turns.append(Turn("user", JSON_CORRECTION if engine.mode is LLMMode.JSON_SCHEMA else CORRECTION))

    async def _gate(self) -> QuestionResult | None:
        """The request gate (`router.gate`), in every mode, before the LLM and any tool: a message
        that is no request to read the collection is refused here, with no LLM call."""
        self.gate = await check_request(
            self.question, language=self.user_language, tools=self.deps.registry.names, relevance=self.deps.relevance,
            today=self.today,
        )
        if self.gate.passed:
            return None
        self.routed_reason = f"the request gate refused it ({self.gate.refused}: {self.gate.reason}); no LLM was asked"
        await self.audit.record("fallback", outcome="refused", error=self.routed_reason)
        return self._refused(self.gate.reason, routed_by="fallback")

    async def _ask_unread_period(self, engine: Engine) -> None:
        """A period cue code could not read: the model is asked for just that value (issue 22, 4a)."""
        reading = self._rules().reading
        if reading is None or reading.dates is not None or not reading.unread_period:
            return
        self._model_period = await period_prompt.ask_model(
            engine, self.budget, self.audit, self.question, reading.unread_period, self.today,
            before_attempt=self._before_llm_call,
        )

    def _filled(self, intent: ToolIntent) -> ToolIntent:
        """The model's tool and topic with the filters code reads from the question (`router.code_filters`)."""
        arguments = parse_arguments(intent.arguments)
        reading = self._rules().reading  # set: a question the rules refuse never reaches the model here
        if isinstance(arguments, str) or reading is None:  # not an object: the gateway rejects it in its words
            return intent
        if self._model_period is not None:  # the period the model read for code (validated)
            reading = replace(reading, dates=self._model_period, unread_period=())
        tool, filled = fill_filters(intent.name, arguments, reading, form_tool=self._rules().form_tool)
        return ToolIntent(intent.call_id, tool, json.dumps(filled, ensure_ascii=False))

    async def _handle_calls(
        self, intents: list[ToolIntent], round_no: int, turns: list[Turn], dry_run: bool
    ) -> QuestionResult | ValidatedCall | None:
        allowed = self.settings.limits.max_tool_calls_per_round
        # Calls past the per-round limit are answered (every tool_call_id must be) but never run.
        for extra in intents[allowed:]:
            reason = f"only {allowed} tool call(s) per round are allowed; this call was not executed"
            await self.audit.record(
                "tool_rejected", round=round_no, tool=extra.name, arguments=parse_arguments(extra.arguments),
                error=reason, outcome="limit_tool_calls_per_round",
            )
            turns.append(Turn("tool", f"ERROR: {reason}", call_id=extra.call_id, tool=extra.name))
        for intent in intents[:allowed]:
            verdict = await self.gateway.check(intent.name, intent.arguments, round_no=round_no)
            if isinstance(verdict, Rejection):
                signature = _call_signature(intent)
                if signature in self._rejected:  # the same rejected call again: more rounds would repeat it
                    return await self._hand_off(
                        f"the model sent the same rejected {intent.name} call again ({_clip(verdict.reason)})",
                        dry_run, cause="repeated_rejection",
                    )
                self._rejected.add(signature)
                turns.append(Turn("tool", verdict.message, call_id=intent.call_id, tool=intent.name))
                continue
            if dry_run:
                return verdict
            result = await self._execute(verdict, round_no)
            # An honest empty result (a period after today, an empty previous page) is final: a
            # retry cannot find anything.
            scoped = self.followup is not None and self.followup.names_previous_result
            if result.status is not ResultStatus.NO_RESULTS or verdict.empty_reason is not None or scoped:
                if self.cache is not None:
                    await self._remember(CachedDecision(verdict.tool, verdict.arguments))
                return self._finish(result, "llm")
            self.last_result = result
            turns.append(Turn("tool", observation(result), call_id=intent.call_id, tool=intent.name))
        return None

    async def _execute(self, call: ValidatedCall, round_no: int | None) -> QuestionResult:
        if self.before_tool is not None:
            await self.before_tool()
        self.budget.start_execution()
        self.budget.check_deadline(f"about to run {call.tool}")
        scoped = self.followup.scoped(call) if self.followup is not None else None
        await self.emit("tool_started", {"tool": (scoped or call).tool, "arguments": (scoped or call).normalized_arguments()})
        try:
            if scoped is not None and self.followup is not None:  # "them": the previous page, never wider
                result = await self.followup.run_scoped(scoped, self.deps.executor, self.audit,
                                                        deadline=self.budget.deadline)
            else:
                result = await self.gateway.execute(call, round_no=round_no, deadline=self.budget.deadline)
        except BudgetExceeded as exc:  # the RAG answer's call had no room: what it spent is the job's
            if exc.usage is not None:
                self.budget.add_usage(exc.usage)
            raise
        if call.adjustments:  # AskArticles has no search to list them in: the reason says what code changed
            self.routed_reason = "; ".join(filter(None, [self.routed_reason, *call.adjustments]))
        self.budget.add_usage(result.usage)
        await self.emit("tool_finished", {"tool": call.tool, "status": result.status.value})
        return result

    async def _before_llm_call(self, tokens: int) -> None:
        permit, self._first_permit = self._first_permit, None
        if permit is not None:
            await permit  # asked for the same tokens while the cache was read
        else:
            await self._wait_for_rate_limit(tokens)

    async def _wait_for_rate_limit(self, tokens: int) -> None:
        limiter = self.deps.rate_limiter
        if limiter is None:
            return
        announced = False

        async def announce(wait_s: float) -> None:
            nonlocal announced
            announced = True
            await self.emit("rate_limited", {"waitS": round(wait_s, 3)})

        try:
            waited = await limiter.acquire(tokens, deadline=self.budget.deadline, on_wait=announce)
        except RateLimitDeadline:
            bump(RATE_LIMIT, outcome="gave_up")
            raise
        if announced:
            bump(RATE_LIMIT, outcome="waited")
            await self.audit.record("rate_limit_wait", round=self.budget.rounds, latency_ms=waited * 1000)

    async def _refund(self, reserved: int, used: int) -> None:
        """The reservation was an upper bound; what the call did not use goes back to the shared limit."""
        if self.deps.rate_limiter is not None and used > 0:
            await self.deps.rate_limiter.refund(reserved, used)

    # ---- cache and fallback ----
    async def _remember(self, decision: CachedDecision) -> None:
        assert self.cache is not None
        if self.narrator is not None:  # the job runner: written while the job finishes
            self.narrator.alongside(self.cache.put(self.question, self.today, decision), label="decision cache")
        else:
            await self.cache.put(self.question, self.today, decision)

    async def _from_cache(self, cached: CachedDecision) -> QuestionResult | None:
        await self.audit.record("cache_hit", tool=cached.tool, arguments=cached.arguments, error=cached.reason)
        if cached.tool is None:
            return self._refused(cached.reason or "not about the articles", routed_by="cache")
        verdict = await self.gateway.check(cached.tool, cached.arguments, round_no=None)
        if isinstance(verdict, Rejection):
            return None  # validation rules changed since it was cached: ask the model again
        return self._finish(await self._execute(verdict, None), "cache")

    async def _hand_off(
        self, reason: str, dry_run: bool, *, cause: str, declined: bool = False
    ) -> QuestionResult | ValidatedCall:
        """No usable call from the model. A capable model that declined (tools mode, or json_schema
        with the model filling the filters) is trusted: refused, never the rules' tool (issue 23).
        Otherwise -- an LLM failure (prose twice, the same rejected call again) or a small model's
        decline under code-filled filters -- the deterministic router decides (issue 15, item 5)."""
        engine = self.deps.engine
        if declined and engine is not None and not engine.code_filters:
            self.routed_reason = f"{reason}; a model that routes on its own is trusted to decline: refused"
            if not dry_run and self.cache is not None:
                await self._remember(CachedDecision(None, {}, self.routed_reason))
            return self._refused(reason, routed_by="llm")
        if not dry_run:
            result = await self._fallback(reason, cause=cause)
            if result.status is ResultStatus.REFUSED and self.cache is not None and declined:
                await self._remember(CachedDecision(None, {}, self.routed_reason))
            if result.status is ResultStatus.REFUSED and declined:
                return result.model_copy(update={"routed_by": "llm"})  # the model's decline stands
            return result
        decision, verdict = self._deterministic_call()
        if verdict is None or isinstance(verdict, Rejection):
            why = decision.reason if verdict is None else verdict.reason
            self.routed_reason = f"{reason}; the deterministic router found no request either ({why})"
            return self._refused(why, routed_by="llm" if declined else "fallback")
        self.routed_by, self.routed_reason = "fallback", f"{reason}; the deterministic router found a request"
        return verdict

    def _rules(self) -> FallbackDecision:
        """The deterministic rules' decision for this question: read once, used by the code-filled
        filters, the no-request check and the fallback."""
        if self._deterministic is None:
            routed = self.gate.question if self.gate is not None else self.question  # an injected clause dropped
            self._deterministic = fallback_decision(
                routed, self.today, answer_language=self.req.language,
                client_language=self.req.material_language,
            )
        return self._deterministic

    def _deterministic_call(self) -> tuple[FallbackDecision, ValidatedCall | Rejection | None]:
        """The deterministic router's decision and its call as the gateway judges it (None: no call)."""
        decision = self._rules()
        verdict = self.validator.validate(decision.tool, decision.arguments) if decision.tool is not None else None
        return decision, verdict

    async def _fallback(self, reason: str, *, cause: str) -> QuestionResult:
        bump(FALLBACKS, reason=cause)
        await self.emit("fallback", {"reason": reason})
        decision, verdict = self._deterministic_call()
        if verdict is None:
            await self.audit.record("fallback", outcome="refused", error=f"{reason}; {decision.reason}")
            self.routed_reason = f"{reason}; the deterministic router found no request either ({decision.reason})"
            return self._refused(decision.reason, routed_by="fallback")
        if isinstance(verdict, Rejection):
            await self.audit.record(
                "fallback", tool=decision.tool, arguments=decision.arguments, outcome="rejected",
                error=f"{reason}; {verdict.reason}",
            )
            self.routed_reason = f"{reason}; the deterministic router's call was rejected ({verdict.reason})"
            return self._refused(verdict.reason, routed_by="fallback")
        await self.audit.record(
            "fallback", tool=verdict.tool, arguments=decision.arguments,
            normalized_arguments=verdict.normalized_arguments(), outcome="routed", error=reason,
        )
        self.routed_reason = reason
        return self._finish(await self._execute(verdict, None), "fallback")

    # ---- results ----
    def _finish(self, result: QuestionResult, routed_by: str) -> QuestionResult:
        return result.model_copy(update={
            "routed_by": routed_by, "usage": self.budget.usage.model_copy(), "routed_reason": self.routed_reason,
        })

    def _refused(self, reason: str, *, routed_by: str) -> QuestionResult:
        # The model's own words are not shown to the user (they could be anything); the reason is audited.
        return QuestionResult(
            result_type=ResultType.ANSWER,
            status=ResultStatus.REFUSED,
            answer_language=self.req.language or self.user_language,
            message=_REFUSAL[self.req.language or self.user_language],
            routed_by=routed_by,  # type: ignore[arg-type]
            routed_reason=self.routed_reason or reason,
            usage=self.budget.usage.model_copy(),
        )


class _RecordedFailure(RoutingFailed):
    """A failure whose audit row is written (one row per failure, not one per handler)."""


def _call_signature(intent: ToolIntent) -> str:
    parsed = parse_arguments(intent.arguments)
    return intent.name + "\0" + (json.dumps(parsed, sort_keys=True, ensure_ascii=False)
                                  if isinstance(parsed, dict) else intent.arguments.strip())


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _ignore_outcome(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a refusal for a call that was never made is no error
