"""What the router decides without executing it: `RoutingDecision` (the eval harness compares
these; `router.service.decide_question` and `router.deterministic.decide_fallback` make them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.results import Usage
from router.gate import GateVerdict


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
