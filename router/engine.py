"""The engine port: messages + tool definitions in, text and/or tool-call intents out.

The engine never executes a tool. It speaks provider names only inside `complete` (the
registry maps them), so intents come back with canonical names. Two loop modes:

- ``tools``: native tool calling (`tools`, `tool_choice="auto"`, `parallel_tool_calls=False`);
- ``json_schema``: `response_format` with one JSON Schema per tool (`anyOf` of `{tool: const,
  arguments: that tool's fields}`, plus a decline) for endpoints whose models cannot call tools
  natively (llama.cpp turns it into a grammar); the decision becomes the same intents.

Routing is a classification: temperature 0. The conversation is re-serialised as the model
writes it (compact, unescaped UTF-8): escaped Cyrillic would teach it to write `\\u…` back.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import openai
from tenacity import RetryError

from infra.llm import counted_call, create_llm_client, llm_retrying
from infra.settings import LLMFilters, LLMMode, Settings
from router.prompt import JSON_RETRY_HINT
from router.tools import ToolRegistry, decision_schema


@dataclass(frozen=True)
class ToolIntent:
    """The model asks for a tool. `arguments` is the raw JSON text it sent (may be broken)."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Turn:
    """One message of the routing conversation, mode-independent."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    intents: tuple[ToolIntent, ...] = ()
    call_id: str | None = None  # tool turns: which call this answers
    tool: str | None = None  # tool turns: the tool's canonical name


@dataclass
class EngineRequest:
    turns: list[Turn]
    max_output_tokens: int
    deadline: float  # time.monotonic() instant; no attempt starts after it
    # Called before every HTTP attempt with the estimated tokens (the shared rate limiter).
    before_attempt: Callable[[int], Awaitable[None]] | None = None
    # A closed schema for one value instead of the tool decision (json_schema mode): the answer is its text.
    response_format: dict[str, Any] | None = None


@dataclass
class EngineResponse:
    text: str | None
    intents: list[ToolIntent]
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    latency_ms: float
    model: str
    attempts: int = 1
    declined: str | None = None  # json_schema mode: the model's reason for choosing no tool
    raw: dict[str, Any] = field(default_factory=dict)


class EngineError(Exception):
    """The LLM could not produce a decision; the router falls back or fails the job."""


class LLMUnavailable(EngineError):
    """Retryable failures (429, 5xx, timeouts, connection) that lasted through every retry."""


class LLMRejected(EngineError):
    """A non-retryable refusal of the request (400-class) or an unusable response body."""


class Engine(Protocol):
    mode: LLMMode
    model: str
    code_filters: bool  # json_schema mode: the model writes the tool and topic, code the filters

    def estimate_input_tokens(self, turns: list[Turn]) -> int: ...

    async def complete(self, request: EngineRequest) -> EngineResponse: ...


def estimate_tokens(turns: list[Turn], extra: str = "") -> int:
    """A deliberately high estimate (chars / 3): budgets and the rate limiter must not be undercut."""
    chars = sum(len(t.content or "") + sum(len(i.arguments) + len(i.name) for i in t.intents) for t in turns)
    return (chars + len(extra)) // 3 + 8 * len(turns)


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


class OpenAIEngine:
    """Any OpenAI-compatible endpoint through the `openai` client and the tenacity policy."""

    def __init__(
        self,
        settings: Settings,
        registry: ToolRegistry,
        *,
        client: openai.AsyncOpenAI | None = None,
        model: str | None = None,
        mode: LLMMode | None = None,
        filters: LLMFilters | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.client = client or create_llm_client(settings)
        self.model = model or settings.llm_router_model
        self.mode = mode or settings.llm_mode
        self.code_filters = self.mode is LLMMode.JSON_SCHEMA and (filters or settings.llm_filters) is LLMFilters.CODE
        self._tools = registry.openai_tools()
        self._tools_text = json.dumps(self._tools)
        self._decision_format = {
            "type": "json_schema",
            "json_schema": {"name": "tool_decision", "schema": self.decision_schema(), "strict": False},
        }

    def decision_schema(self) -> dict[str, Any]:
        return decision_schema(self.registry, code_filters=self.code_filters)

    def estimate_input_tokens(self, turns: list[Turn]) -> int:
        extra = self._tools_text if self.mode is LLMMode.TOOLS else json.dumps(self._decision_format)
        return estimate_tokens(turns, extra)

    # ---- messages ----
    def _messages(self, turns: list[Turn]) -> list[dict[str, Any]]:
        if self.mode is LLMMode.JSON_SCHEMA:
            return [self._json_message(t) for t in turns]
        out: list[dict[str, Any]] = []
        for t in turns:
            if t.role == "assistant" and t.intents:
                out.append({
                    "role": "assistant",
                    "content": t.content,
                    "tool_calls": [
                        {"id": i.call_id, "type": "function",
                         "function": {"name": self.registry.to_provider(i.name), "arguments": i.arguments}}
                        for i in t.intents
                    ],
                })
            elif t.role == "tool":
                out.append({"role": "tool", "tool_call_id": t.call_id, "content": t.content or ""})
            else:
                out.append({"role": t.role, "content": t.content or ""})
        return out

    def _json_message(self, t: Turn) -> dict[str, Any]:
        if t.role == "assistant" and t.intents:
            first = t.intents[0]
            try:
                arguments: Any = json.loads(first.arguments)
            except json.JSONDecodeError:
                arguments = first.arguments
            decision = {"tool": first.name, "arguments": arguments}
            return {"role": "assistant", "content": json.dumps(decision, ensure_ascii=False, separators=(",", ":"))}
        if t.role == "tool":
            content = t.content or ""
            if content.startswith("ERROR:"):
                content = f"{content}\n{JSON_RETRY_HINT}"
            return {"role": "user", "content": f"Result of {t.tool}: {content}"}
        return {"role": t.role, "content": t.content or ""}

    # ---- the call ----
    async def complete(self, request: EngineRequest) -> EngineResponse:
        messages = self._messages(request.turns)
        estimate = self.estimate_input_tokens(request.turns)
        kwargs: dict[str, Any] = {
            "model": self.model, "messages": messages, "max_tokens": request.max_output_tokens, "temperature": 0,
        }
        if request.response_format is not None:
            kwargs.update(response_format=request.response_format)
        elif self.mode is LLMMode.TOOLS:
            kwargs.update(tools=self._tools, tool_choice="auto", parallel_tool_calls=False)
        else:
            kwargs.update(response_format=self._decision_format)
        started = time.monotonic()
        attempts = 0
        try:
            async for attempt in llm_retrying(self.settings, deadline=request.deadline, counted_as="route"):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    if request.before_attempt is not None:
                        await request.before_attempt(estimate + request.max_output_tokens)
                    timeout = min(self.settings.limits.llm_call_timeout_s, request.deadline - time.monotonic())
                    if timeout <= 0:
                        raise LLMUnavailable("no time left before the job's deadline for another LLM call")
                    # A per-request timeout: `with_options` would copy the client on every call.
                    completion = await counted_call("route", self.client.chat.completions.create(**kwargs, timeout=timeout))
        except RetryError as exc:  # stop condition hit without an exception to re-raise
            raise LLMUnavailable(f"the LLM did not answer within {attempts} attempt(s)") from exc
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise LLMUnavailable(f"LLM unreachable after {attempts} attempt(s): {exc}") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            cls = LLMUnavailable if status >= 500 or status in (408, 429) else LLMRejected
            raise cls(f"LLM returned HTTP {status} after {attempts} attempt(s): {_short(exc.message)}") from exc
        except (openai.APIResponseValidationError, json.JSONDecodeError) as exc:
            raise LLMRejected(f"the LLM's response was not a valid completion: {_short(str(exc))}") from exc
        latency_ms = (time.monotonic() - started) * 1000
        return self._parse(completion, latency_ms, attempts, value_only=request.response_format is not None)

    def _parse(self, completion: Any, latency_ms: float, attempts: int, *, value_only: bool = False) -> EngineResponse:
        if not getattr(completion, "choices", None):
            raise LLMRejected("the LLM's response had no choices")
        choice = completion.choices[0]
        message = choice.message
        usage = completion.usage
        response = EngineResponse(
            text=message.content,
            intents=[],
            finish_reason=choice.finish_reason,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            latency_ms=latency_ms,
            model=getattr(completion, "model", None) or self.model,
            attempts=attempts,
        )
        if value_only:
            return response
        if self.mode is LLMMode.JSON_SCHEMA:
            self._parse_decision(response, completion.id or "json")
            return response
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:  # a non-function (custom) tool call: surface it so the gateway rejects it
                response.intents.append(ToolIntent(call.id, getattr(call, "type", "unknown"), "{}"))
                continue
            name = self.registry.from_provider(function.name)
            response.intents.append(ToolIntent(call.id, name, function.arguments or "{}"))
        return response

    def _parse_decision(self, response: EngineResponse, call_id: str) -> None:
        """json_schema mode: `{"tool": ..., "arguments": ...}` -> one intent, or a declined reason."""
        text = response.text or ""
        fenced = _FENCE.match(text)
        try:
            decision = json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError:
            return  # prose: the router's corrective round handles it
        if not isinstance(decision, dict) or "tool" not in decision:
            return
        tool = decision.get("tool")
        if tool is None:
            response.declined = str(decision.get("reason") or "not about the articles")
            return
        arguments = decision.get("arguments", {})
        response.intents.append(
            ToolIntent(f"{call_id}-decision", str(tool), arguments if isinstance(arguments, str) else json.dumps(arguments))
        )


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
