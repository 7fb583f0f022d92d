"""Per-job routing limits (SPEC §6), all from `infra.settings.Limits`, all enforced here.

Rounds, tool calls per round, tool executions, input/output/total token budgets and the
wall-clock deadline. A limit that ends a job raises `RoutingFailed` with the limit's code.
"""

from __future__ import annotations

import time
from typing import NoReturn

from infra.results import Usage
from infra.settings import Limits, Settings
from router.errors import (
    LIMIT_DEADLINE,
    LIMIT_MAX_ROUNDS,
    LIMIT_TOKENS,
    LIMIT_TOOL_EXECUTIONS,
    RoutingFailed,
)

# Tokens kept back for the model's reply when checking whether a next round still fits.
_MIN_OUTPUT_ROOM = 16


class JobBudget:
    def __init__(self, limits: Limits, *, started: float | None = None, settings: Settings | None = None) -> None:
        self.limits = limits
        self.settings = settings  # the price table for the router model's calls (None: not priced)
        self.started = time.monotonic() if started is None else started
        self.deadline = self.started + limits.job_deadline_s
        # LLM calls (and their retries) stop here; the rest of the deadline is the fallback's.
        self.llm_deadline = self.deadline - min(limits.fallback_reserve_s, limits.job_deadline_s / 4)
        self.rounds = 0
        self.tool_executions = 0
        self.usage = Usage()

    # ---- time ----
    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def deadline_passed(self) -> bool:
        return self.remaining_s() <= 0

    def check_deadline(self, doing: str = "routing") -> None:
        if self.deadline_passed():
            self.fail(LIMIT_DEADLINE, f"the job deadline of {self.limits.job_deadline_s:g}s passed while {doing}")

    # ---- rounds and executions ----
    def start_round(self) -> int:
        if self.rounds >= self.limits.max_rounds:
            self.fail(
                LIMIT_MAX_ROUNDS,
                f"the model used all {self.limits.max_rounds} LLM rounds without a usable tool call",
            )
        self.check_deadline("starting an LLM round")
        self.rounds += 1
        return self.rounds

    def start_execution(self) -> None:
        if self.tool_executions >= self.limits.max_tool_executions:
            self.fail(
                LIMIT_TOOL_EXECUTIONS,
                f"the model asked for more than {self.limits.max_tool_executions} tool executions",
            )
        self.tool_executions += 1

    # ---- tokens ----
    def call_cost(self, input_tokens: int, output_tokens: int) -> float:
        """A routing call's cost at the router model's price (0 when not priced)."""
        if self.settings is None:
            return 0.0
        return self.settings.llm_cost_usd(self.settings.llm_router_model, input_tokens, output_tokens)

    def add_llm_call(self, input_tokens: int, output_tokens: int) -> None:
        self.usage.add_cost(self.call_cost(input_tokens, output_tokens))
        self.usage.llm_calls += 1
        self.usage.input_tokens += input_tokens
        self.usage.output_tokens += output_tokens
        self.usage.total_tokens += input_tokens + output_tokens

    def add_usage(self, other: Usage) -> None:
        """Spending outside the routing loop (the RAG answer call); counted, not limited here."""
        self.usage.llm_calls += other.llm_calls
        self.usage.input_tokens += other.input_tokens
        self.usage.output_tokens += other.output_tokens
        self.usage.total_tokens += other.total_tokens
        self.usage.add_cost(other.cost_usd)

    def exceeded_token_budget(self) -> str | None:
        u, lim = self.usage, self.limits
        if u.input_tokens > lim.input_tokens:
            return f"input tokens {u.input_tokens} exceed the budget of {lim.input_tokens}"
        if u.output_tokens > lim.output_tokens:
            return f"output tokens {u.output_tokens} exceed the budget of {lim.output_tokens}"
        if u.total_tokens > lim.total_tokens:
            return f"total tokens {u.total_tokens} exceed the budget of {lim.total_tokens}"
        return None

    def check_tokens(self) -> None:
        reason = self.exceeded_token_budget()
        if reason is not None:
            self.fail(LIMIT_TOKENS, reason)

    def check_room_for(self, estimated_input: int) -> None:
        """Stop before a call that cannot fit the remaining budgets (no point paying for it)."""
        u, lim = self.usage, self.limits
        if u.input_tokens + estimated_input > lim.input_tokens:
            self.fail(
                LIMIT_TOKENS,
                f"the next round needs ~{estimated_input} input tokens but only "
                f"{lim.input_tokens - u.input_tokens} of the input budget remain",
            )
        if self.output_room(estimated_input) < _MIN_OUTPUT_ROOM:
            self.fail(LIMIT_TOKENS, "no output or total token budget left for another round")

    def output_room(self, estimated_input: int = 0) -> int:
        """max_tokens for the next call: what the output and total budgets still allow."""
        u, lim = self.usage, self.limits
        return max(0, min(lim.output_tokens - u.output_tokens, lim.total_tokens - u.total_tokens - estimated_input))

    def fail(self, code: str, message: str) -> NoReturn:
        raise RoutingFailed(code, message, self.usage.model_copy())
