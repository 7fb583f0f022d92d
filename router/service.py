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

The parts: one round with the model (`router.llm_round`), the rate-limit permits
(`router.llm_permits`), the rules' route (`router.deterministic`), the decision cache
(`router.cache`), the job's limits (`router.limits`). A decide-only run (`decide_question`) is
a run whose tool step stops at the decision instead of executing it.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from infra.budgets import BudgetExceeded
from infra.counters import FALLBACKS, bump
from infra.results import QuestionResult
from infra.status import ResultStatus
from router.audit import AuditTrail
from router.cache import CachedDecision, DecisionCache
from router.code_filters import CodeFilling
from router.decision import RoutingDecision
from router.deps import RouterDeps
from router.deterministic import DeterministicRoute, decide_fallback, opening
from router.engine import Engine, EngineError, LLMRejected, ToolIntent, Turn
from router.errors import BUDGET_EXCEEDED, LIMIT_DEADLINE, LLM_UNAVAILABLE, TOOL_REJECTED, RoutingFailed
from router.fallback import FallbackDecision
from router.followup import Followup
from router.gate import GateVerdict, check_request
from router.gateway import Gateway, Rejection, ValidatedCall, parse_arguments
from router.hooks import RunHooks
from router.limits import JobBudget
from router.llm_permits import CallPermits
from router.llm_round import ROUTING_REPLY_TOKENS, Conversation
from router.prompt import system_prompt, user_message
from router.ratelimit import RateLimitDeadline
from router.refusal import refusal
from router.request import RouteRequest
from router.spending import BudgetedEngine
from router.tool_results import observation

__all__ = [
    "ROUTING_REPLY_TOKENS", "RouteRequest", "RouterDeps", "RoutingDecision", "RoutingFailed", "decide_fallback",
    "decide_question", "route_question",
]


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
    run = _DecidingRun(deps, req, RunHooks())
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

    # An LLM failure hands the question to the rules (the eval harness may turn it off).
    falls_back_on_llm_error = True

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
        self.today, self.question, self.user_language = opening(req)
        self.budget = JobBudget(self.settings.limits, settings=self.settings)
        self.narrator = hooks.narrator
        self.audit = AuditTrail(deps.pool, req.job_id, hooks.narrator)
        self.validator = req.validator(deps.registry, self.settings.limits, today=self.today, question=self.question,
                                       user_language=self.user_language)
        self.gateway = Gateway(self.validator, deps.executor, self.audit)
        self.permits = CallPermits(deps.rate_limiter, self.budget, self.audit, self.emit)
        self.deterministic = DeterministicRoute(self.validator, req, self.today)
        self.code_filling = CodeFilling(self._rules)
        self.followup = None if req.previous is None else Followup(
            req.previous, self.question, self.today, self.settings.limits, req.page_size)
        self.cache = self._decision_cache()
        self.last_result: QuestionResult | None = None
        self.routed_by = "llm"  # "fallback" once the question was handed to the deterministic router
        self.routed_reason: str | None = None
        # The rejected calls so far: the same one again ends the loop (the model is stuck).
        self._rejected: set[str] = set()
        self.gate: GateVerdict | None = None  # the request gate's verdict, once it ran

    def _decision_cache(self) -> DecisionCache | None:  # a follow-up means another thing each turn: never cached
        if self.deps.redis is None or not self.deps.use_decision_cache or self.followup is not None:
            return None
        return DecisionCache(self.deps.redis, self.settings)

    async def emit(self, kind: str, data: dict[str, Any]) -> None:
        if self.on_event is not None:
            await self.on_event(kind, data)

    # ---- entry ----
    async def execute(self) -> QuestionResult:
        """Route and run the chosen tool: the job's result."""
        await self.emit("routing", {"llm": self.deps.engine is not None and self.req.tool_call is None})
        try:
            outcome = await self._route()
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
            self.permits.release()

    async def _fail(self, code: str, message: str, *, details: dict[str, Any] | None = None) -> NoReturn:
        await self.audit.record("limit", round=self.budget.rounds or None, outcome=code, error=message)
        raise _RecordedFailure(code, message, self.budget.usage.model_copy(), details)

    async def _route(self) -> QuestionResult:
        if self.req.tool_call is not None:
            return await self._caller_chose(self.req.tool_call)
        if not self.question:
            return self._refused("the question is empty", routed_by="llm")
        followed = await self._filter_followup() if self.followup is not None else None
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
        conversation = self._conversation(engine)
        if self.cache is not None:
            self.permits.ask_ahead(conversation.first_call_tokens())  # while the cache is read
            cached = await self.cache.get(self.question, self.today)
            if cached is not None:
                from_cache = await self._from_cache(cached)
                if from_cache is not None:
                    return from_cache
        try:
            return await self._loop(conversation)
        except EngineError as exc:
            if self.budget.deadline_passed():
                await self._fail(LIMIT_DEADLINE, f"the LLM did not answer before the job's deadline ({exc})")
            if not self.falls_back_on_llm_error or not self.deps.fallback_on_llm_error:
                await self._fail(LLM_UNAVAILABLE, str(exc))
            cause = "llm_rejected" if isinstance(exc, LLMRejected) else "llm_unavailable"
            return await self._fallback(f"the LLM failed: {exc}", cause=cause)

    async def _caller_chose(self, call: dict[str, Any]) -> QuestionResult:
        """The tool was chosen outside (an MCP host's model): the same gateway checks, runs and
        audits it; a rejection fails the job with the gateway's `ERROR: …` text, for the caller's model."""
        verdict = await self.gateway.check(str(call.get("tool")), call.get("arguments") or {}, round_no=None)
        if isinstance(verdict, Rejection):
            raise RoutingFailed(TOOL_REJECTED, verdict.message, self.budget.usage.model_copy())
        return self._finish(await self._run_call(verdict, None), "caller")

    async def _filter_followup(self) -> QuestionResult | None:
        """A follow-up that only changes the previous call's filters: run in code, no LLM call."""
        assert self.followup is not None
        call = self.followup.filter_call()
        if call is None:
            return None
        self.routed_by = "followup"
        self.routed_reason = "a filter-only follow-up: the previous call with the change read in code; no LLM was asked"
        return self._finish(await self._run_call(call, None), "followup")

    async def _gate(self) -> QuestionResult | None:
        """The request gate (`router.gate`), in every mode, before the LLM and any tool: a message
        that is no request to read the collection is refused here, with no LLM call."""
        self.gate = await check_request(
            self.question, language=self.user_language, tools=self.deps.registry.names, relevance=self.deps.relevance,
            today=self.today, follows_up=self.followup is not None,
        )
        if self.gate.passed:
            return None
        self.routed_reason = f"the request gate refused it ({self.gate.refused}: {self.gate.reason}); no LLM was asked"
        await self.audit.record("fallback", outcome="refused", error=self.routed_reason)
        return self._refused(self.gate.reason, routed_by="fallback")

    # ---- the LLM loop ----
    def _conversation(self, engine: Engine) -> Conversation:
        turns = [
            Turn("system", system_prompt(self.today, engine.mode, self.deps.registry, code_filters=engine.code_filters)),
            *(self.followup.history() if self.followup is not None else ()),
            Turn("user", user_message(self.question, self.today, engine.mode, code_filters=engine.code_filters)),
        ]
        return Conversation(engine, turns, question=self.question, budget=self.budget, audit=self.audit,
                            emit=self.emit, permits=self.permits)

    async def _loop(self, conversation: Conversation) -> QuestionResult:
        engine = conversation.engine
        if engine.code_filters:
            await self.code_filling.ask_unread_period(engine, self.budget, self.audit, self.question, self.today,
                                                      before_attempt=self.permits.before_call)
        corrected = False
        while True:
            turn = await conversation.round()
            response = turn.response
            if response.intents:
                conversation.add_calls(response)
                intents = [self.code_filling.filled(i) for i in response.intents] if engine.code_filters else response.intents
                outcome = await self._handle_calls(intents, turn.number, conversation)
                if outcome is not None:
                    return outcome
                continue
            if self.last_result is not None:
                return self._finish(self.last_result, "llm")  # the model is done after "nothing found"
            if turn.declined is not None:
                # Its own reason stays in the audit: a model's words are never shown to the user.
                return await self._hand_off("the model chose no tool", cause="declined", declined=True)
            if corrected:
                return await self._hand_off(
                    "the model answered in prose instead of calling a tool, also after a corrective round",
                    cause="no_tool_call",
                )
            corrected = True
            conversation.correct(response)

    async def _handle_calls(
        self, intents: list[ToolIntent], round_no: int, conversation: Conversation
    ) -> QuestionResult | None:
        allowed = self.settings.limits.max_tool_calls_per_round
        # Calls past the per-round limit are answered (every tool_call_id must be) but never run.
        for extra in intents[allowed:]:
            reason = f"only {allowed} tool call(s) per round are allowed; this call was not executed"
            await self.audit.record(
                "tool_rejected", round=round_no, tool=extra.name, arguments=parse_arguments(extra.arguments),
                error=reason, outcome="limit_tool_calls_per_round",
            )
            conversation.answer_call(extra, f"ERROR: {reason}")
        for intent in intents[:allowed]:
            verdict = await self.gateway.check(intent.name, intent.arguments, round_no=round_no)
            if isinstance(verdict, Rejection):
                signature = _call_signature(intent)
                if signature in self._rejected:  # the same rejected call again: more rounds would repeat it
                    return await self._hand_off(
                        f"the model sent the same rejected {intent.name} call again ({_clip(verdict.reason)})",
                        cause="repeated_rejection",
                    )
                self._rejected.add(signature)
                conversation.answer_call(intent, verdict.message)
                continue
            result = await self._run_call(verdict, round_no)
            # An honest empty result (a period after today, an empty previous page) is final: a
            # retry cannot find anything.
            scoped = self.followup is not None and self.followup.names_previous_result
            if result.status is not ResultStatus.NO_RESULTS or verdict.empty_reason is not None or scoped:
                if self.cache is not None:
                    await self._remember(CachedDecision(verdict.tool, verdict.arguments))
                return self._finish(result, "llm")
            self.last_result = result
            conversation.answer_call(intent, observation(result))
        return None

    # ---- running a call ----
    async def _run_call(self, call: ValidatedCall, round_no: int | None) -> QuestionResult:
        """The tool step: the validated call executed (a decide-only run stops here instead)."""
        return await self._execute(call, round_no)

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
        return self._finish(await self._run_call(verdict, None), "cache")

    async def _hand_off(self, reason: str, *, cause: str, declined: bool = False) -> QuestionResult:
        """No usable call from the model. A capable model that declined (tools mode, or json_schema
        with the model filling the filters) is trusted: refused, never the rules' tool (issue 23).
        Otherwise -- an LLM failure (prose twice, the same rejected call again) or a small model's
        decline under code-filled filters -- the deterministic router decides (issue 15, item 5)."""
        engine = self.deps.engine
        if declined and engine is not None and not engine.code_filters:
            self.routed_reason = f"{reason}; a model that routes on its own is trusted to decline: refused"
            if self.cache is not None:
                await self._remember(CachedDecision(None, {}, self.routed_reason))
            return self._refused(reason, routed_by="llm")
        result = await self._fallback(reason, cause=cause)
        if result.status is ResultStatus.REFUSED and self.cache is not None and declined:
            await self._remember(CachedDecision(None, {}, self.routed_reason))
        if result.status is ResultStatus.REFUSED and declined:
            return result.model_copy(update={"routed_by": "llm"})  # the model's decline stands
        return result

    def _rules(self) -> FallbackDecision:
        """The rules' decision (read once): for the code-filled filters and the fallback."""
        return self.deterministic.rules(self._gated_question())

    def _gated_question(self) -> str:  # what the rules read: the gate drops an injected clause
        return self.gate.question if self.gate is not None else self.question

    async def _fallback(self, reason: str, *, cause: str) -> QuestionResult:
        bump(FALLBACKS, reason=cause)
        await self.emit("fallback", {"reason": reason})
        decision, verdict = self.deterministic.call(self._gated_question())
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
        self.routed_by, self.routed_reason = "fallback", reason
        return self._finish(await self._run_call(verdict, None), "fallback")

    # ---- results ----
    def _finish(self, result: QuestionResult, routed_by: str) -> QuestionResult:
        return result.model_copy(update={
            "routed_by": routed_by, "usage": self.budget.usage.model_copy(), "routed_reason": self.routed_reason,
        })

    def _refused(self, reason: str, *, routed_by: str) -> QuestionResult:
        return refusal(self.req.answer_language or self.user_language, routed_by=routed_by,
                       routed_reason=self.routed_reason or reason, usage=self.budget.usage.model_copy())


class _DecidingRun(_Run):
    """A decide-only run (`decide_question`, the eval harness): routed as a job is, but its tool
    step stops at the validated call. No decision cache, and an LLM failure fails it (the model
    is measured alone)."""

    falls_back_on_llm_error = False

    def _decision_cache(self) -> None:
        return None

    async def decide(self) -> QuestionResult | ValidatedCall:
        """The validated call the run would execute, or the refusal it ends with."""
        try:
            return await self.execute()
        except _Decided as decided:
            return decided.call

    async def _run_call(self, call: ValidatedCall, round_no: int | None) -> QuestionResult:
        raise _Decided(call)


class _Decided(Exception):  # not an error: a decide-only run's way out with its call
    def __init__(self, call: ValidatedCall) -> None:
        super().__init__(call.tool)
        self.call = call


class _RecordedFailure(RoutingFailed):
    """A failure whose audit row is written (one row per failure, not one per handler)."""


def _call_signature(intent: ToolIntent) -> str:
    parsed = parse_arguments(intent.arguments)
    return intent.name + "\0" + (json.dumps(parsed, sort_keys=True, ensure_ascii=False)
                                  if isinstance(parsed, dict) else intent.arguments.strip())


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
