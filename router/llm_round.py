"""The model's side of one routing job: the conversation's turns and one round at a time -- the
call made within the job's budgets and rate limit, its usage counted and its unused reservation
refunded, the round audited and announced. What a reply means is `router.service`'s to decide."""

from __future__ import annotations

from dataclasses import dataclass

from infra.settings import LLMMode
from router.audit import AuditTrail
from router.engine import Engine, EngineRequest, EngineResponse, ToolIntent, Turn
from router.gateway import parse_arguments
from router.hooks import EventSink
from router.limits import JobBudget
from router.llm_permits import CallPermits
from router.prompt import CORRECTION, JSON_CORRECTION, declined_reason

# Reply tokens of a routing round beyond the copied question (a decision is ~40-80 tokens).
ROUTING_REPLY_TOKENS = 128


def routing_reply_tokens(question: str) -> int:
    """max_tokens of a routing round before the budgets cap it: a decision is one short line of JSON (or
    one tool call), whose longest part is the question copied into `question`."""
    return ROUTING_REPLY_TOKENS + len(question) // 2


@dataclass(frozen=True)
class Round:
    number: int
    response: EngineResponse
    declined: str | None  # the model chose no tool: its reason (audited, never shown to the user)


class Conversation:
    """The turns sent to the model so far, and the next round."""

    def __init__(self, engine: Engine, turns: list[Turn], *, question: str, budget: JobBudget,
                 audit: AuditTrail, emit: EventSink, permits: CallPermits) -> None:
        self.engine = engine
        self.turns = turns
        self.question = question
        self.budget = budget
        self.audit = audit
        self.emit = emit
        self.permits = permits

    def first_call_tokens(self) -> int:
        """What the first call will reserve (as `engine.complete` computes it)."""
        estimate = self.engine.estimate_input_tokens(self.turns)
        return estimate + self.reply_room(estimate)

    def reply_room(self, estimate: int) -> int:
        """max_tokens of a routing round (`routing_reply_tokens`), capped by the budgets."""
        return min(self.budget.output_room(estimate), routing_reply_tokens(self.question))

    async def round(self) -> Round:
        number = self.budget.start_round()
        estimate = self.engine.estimate_input_tokens(self.turns)
        self.budget.check_room_for(estimate)
        max_output = self.reply_room(estimate)
        response = await self.engine.complete(
            EngineRequest(
                turns=self.turns,
                max_output_tokens=max_output,
                deadline=self.budget.llm_deadline,
                before_attempt=self.permits.before_call,
            )
        )
        self.budget.add_llm_call(response.input_tokens, response.output_tokens)
        await self.permits.refund(estimate + max_output, response.input_tokens + response.output_tokens)
        declined = response.declined or (None if response.intents else declined_reason(response.text))
        first = response.intents[0] if response.intents else None
        await self.audit.record(
            "llm_round", round=number, loop_mode=self.engine.mode.value, model=response.model,
            finish_reason=response.finish_reason, input_tokens=response.input_tokens,
            output_tokens=response.output_tokens, latency_ms=response.latency_ms,
            cost_usd=self.budget.call_cost(response.input_tokens, response.output_tokens),
            tool=first.name if first else None,
            arguments=parse_arguments(first.arguments) if first else None,
            outcome="tool_call" if first else ("declined" if declined else "text"),
            error=declined,
        )
        await self.emit("llm_round", {
            "round": number, "finishReason": response.finish_reason, "tool": first.name if first else None,
            "inputTokens": response.input_tokens, "outputTokens": response.output_tokens,
        })
        self.budget.check_tokens()
        return Round(number, response, declined)

    def add_calls(self, response: EngineResponse) -> None:
        """The model's tool calls, as the assistant's turn (each is answered by `answer_call`)."""
        self.turns.append(Turn("assistant", response.text, tuple(response.intents)))

    def answer_call(self, intent: ToolIntent, message: str) -> None:
        """The tool message answering one call: an `ERROR: …` or what an empty execution found."""
        self.turns.append(Turn("tool", message, call_id=intent.call_id, tool=intent.name))

    def correct(self, response: EngineResponse) -> None:
        """Prose instead of a tool call: one corrective round."""
        self.turns.append(Turn("assistant", response.text or ""))
        self.turns.append(Turn("user", JSON_CORRECTION if self.engine.mode is LLMMode.JSON_SCHEMA else CORRECTION))
