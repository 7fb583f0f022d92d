"""What the router decides without executing it: `RoutingDecision` (the eval harness compares
these) and the deterministic route's decision, `decide_fallback` (split from router/service.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from infra.results import Usage
from infra.settings import Settings
from router.fallback import fallback_decision
from router.gate import GateVerdict, Relevance, check_request
from router.gateway import CallValidator, Rejection
from router.language import written_language
from router.tools import ToolRegistry, default_registry

if TYPE_CHECKING:  # the request is defined with the service that routes it
    from router.service import RouteRequest


@dataclass
class RoutingDecision:
    """What the router decided without executing it (the eval harness compares these)."""

    tool: str | None
    arguments: dict[str, Any]  # normalized, as the gateway would execute them
    routed_by: str
    usage: Usage
    rounds: int = 0
    refused: str | None = None
    error: str | None = None  # a RoutingFailed code
    message: str | None = None
    gate: GateVerdict | None = None  # the request gate's verdict (its class and relevance, for the eval)



async def decide_fallback(
    settings: Settings, req: RouteRequest, registry: ToolRegistry | None = None, *, relevance: Relevance | None = None
) -> RoutingDecision:
    """The deterministic route's decision for ``req``: the request gate, then the rules (I/O: the
    gate's relevance signal only)."""
    today = req.today or datetime.now(UTC).date()
    registry = registry or default_registry()
    question = " ".join(req.question.split())
    user_language = written_language(question) if question else "en"
    gate = await check_request(question, language=user_language, tools=registry.names, relevance=relevance,
                               today=today)
    if not gate.passed:
        return RoutingDecision(None, {}, "fallback", Usage(), refused=gate.reason, gate=gate)
    decision = fallback_decision(
        gate.question, today, answer_language=req.language, client_language=req.material_language
    )
    if decision.tool is None:
        return RoutingDecision(None, {}, "fallback", Usage(), refused=decision.reason)
    validator = CallValidator(
        registry, settings.limits, today=today, question=question,
        user_language=user_language, page_size=req.page_size, answer_language=req.language,
        client_language=req.material_language,
    )
    verdict = validator.validate(decision.tool, decision.arguments)
    if isinstance(verdict, Rejection):
        return RoutingDecision(None, {}, "fallback", Usage(), error="fallback_rejected", message=verdict.reason,
                               gate=gate)
    return RoutingDecision(verdict.tool, verdict.normalized_arguments(), "fallback", Usage(), gate=gate)
