"""The deterministic route: the rules' decision for a question (`router.fallback`), read once,
and its call as the gateway's validator judges it. A routing run uses it for the code-filled
filters and its fallback; `decide_fallback` runs it alone, after the request gate (the eval's
fallback mode, a decide-only run with no LLM)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from infra.results import Language, Usage
from infra.settings import Settings
from router.decision import RoutingDecision
from router.fallback import FallbackDecision, fallback_decision
from router.gate import Relevance, check_request
from router.gateway import CallValidator, Rejection, ValidatedCall
from router.language import written_language
from router.request import RouteRequest
from router.tools import ToolRegistry, default_registry


class DeterministicRoute:
    """The rules' decision for one request, read on first use."""

    def __init__(self, validator: CallValidator, req: RouteRequest, today: date) -> None:
        self.validator = validator
        self.req = req
        self.today = today
        self._decision: FallbackDecision | None = None

    def rules(self, question: str) -> FallbackDecision:
        """The rules' decision; `question` is what the request gate passed on (an injected clause
        dropped), read on the first call only."""
        if self._decision is None:
            self._decision = fallback_decision(
                question, self.today, answer_language=self.req.answer_language, client_language=self.req.client_language,
            )
        return self._decision

    def call(self, question: str) -> tuple[FallbackDecision, ValidatedCall | Rejection | None]:
        """The rules' decision and its call as the gateway judges it (None: the rules found no request)."""
        decision = self.rules(question)
        verdict = self.validator.validate(decision.tool, decision.arguments) if decision.tool is not None else None
        return decision, verdict


def opening(req: RouteRequest) -> tuple[date, str, Language]:
    """The request's day, its question with whitespace squashed and the language it is written in."""
    question = " ".join(req.question.split())
    return req.today or datetime.now(UTC).date(), question, written_language(question) if question else "en"


async def decide_fallback(
    settings: Settings, req: RouteRequest, registry: ToolRegistry | None = None, *, relevance: Relevance | None = None,
    follows_up: bool | None = None,
) -> RoutingDecision:
    """The deterministic route's decision for ``req``: the request gate, then the rules (I/O: the
    gate's relevance signal only). ``follows_up``: the message continues a conversation (default:
    ``req`` has a previous turn), also when it is decided alone."""
    today, question, user_language = opening(req)
    registry = registry or default_registry()
    gate = await check_request(question, language=user_language, tools=registry.names, relevance=relevance,
                               today=today, follows_up=req.previous is not None if follows_up is None else follows_up)
    if not gate.passed:
        return RoutingDecision(None, {}, "fallback", Usage(), refused=gate.reason, gate=gate)
    validator = req.validator(registry, settings.limits, today=today, question=question, user_language=user_language)
    decision, verdict = DeterministicRoute(validator, req, today).call(gate.question)
    if verdict is None:
        return RoutingDecision(None, {}, "fallback", Usage(), refused=decision.reason)
    if isinstance(verdict, Rejection):
        return RoutingDecision(None, {}, "fallback", Usage(), error="fallback_rejected", message=verdict.reason,
                               gate=gate)
    return RoutingDecision(verdict.tool, verdict.normalized_arguments(), "fallback", Usage(), gate=gate)
