"""The answer model call: one helper for the streamed and the plain call, so both are counted.

Every HTTP attempt goes through ``counted_call("answer", …)`` (its outcome on `/metrics` as
``turnout_llm_call_outcomes{kind="answer"}``) and every retry through
``llm_retrying(counted_as="answer")``. A streamed attempt counts once the whole stream is
read: a stream cut half-way is a failed attempt, retried like a failed request.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import openai

from infra.budgets import BudgetExceeded, SpendLedger
from infra.llm import counted_call, llm_retrying
from infra.results import Usage
from infra.settings import Settings
from retrieval.answer_stream import AnswerStream


@dataclass
class ModelCall:
    answer: str | None
    usage: Usage
    model: str
    latency_ms: float
    error: str | None = None
    cut: bool = False  # the reply stopped at the answer cap (finish_reason "length"), maybe mid-sentence


def _add_usage(usage: Usage, reported: Any, settings: Settings) -> None:
    if reported is not None:
        usage.add_cost(settings.llm_cost_usd(settings.llm_answer_model, reported.prompt_tokens,
                                             reported.completion_tokens))
        usage.input_tokens += reported.prompt_tokens
        usage.output_tokens += reported.completion_tokens
        usage.total_tokens += reported.total_tokens


def estimate_prompt_tokens(messages: list[dict[str, str]]) -> int:
    """A high estimate of the prompt's tokens for the budget's hold: 2 characters a token (the
    passages are ru/de/en article text; Cyrillic splits finer than English) and 8 a message."""
    return sum(len(m.get("content") or "") for m in messages) // 2 + 8 * len(messages)


@dataclass(frozen=True)
class SpendScope:
    """Whose budget an answer call is held from: the job's key, through the port."""

    ledger: SpendLedger
    job_id: str


async def call_answer_model(
    llm: openai.AsyncOpenAI, settings: Settings, messages: list[dict[str, str]], *,
    deadline: float | None, stream: AnswerStream | None, usage: Usage | None = None,
    spend: SpendScope | None = None,
) -> ModelCall:
    """Ask the answer model (retried within ``deadline``); with ``stream``, its tokens go into
    it as they come and a retried attempt starts the stream over. With ``spend``, the call's worst
    case is held from the key's budget first (`BudgetExceeded`, with ``usage`` so far, when it has
    no room) and settled with what the attempts used."""
    usage = usage if usage is not None else Usage()
    if spend is None:
        return await _call(llm, settings, messages, deadline=deadline, stream=stream, usage=usage)
    before = usage.model_copy()
    try:
        hold = await spend.ledger.reserve(spend.job_id, settings.llm_answer_model, estimate_prompt_tokens(messages),
                                          settings.rag_answer_max_tokens)
    except BudgetExceeded as exc:
        exc.usage = usage.model_copy()
        raise
    try:
        return await _call(llm, settings, messages, deadline=deadline, stream=stream, usage=usage)
    finally:
        await asyncio.shield(spend.ledger.settle(
            hold, usage.input_tokens - before.input_tokens, usage.output_tokens - before.output_tokens,
            calls=usage.llm_calls - before.llm_calls,
        ))


async def _call(
    llm: openai.AsyncOpenAI, settings: Settings, messages: list[dict[str, str]], *,
    deadline: float | None, stream: AnswerStream | None, usage: Usage,
) -> ModelCall:
    model = settings.llm_answer_model
    started = time.monotonic()

    async def attempt_once(timeout_s: float) -> tuple[str, str, bool]:
        request: dict[str, Any] = {"model": settings.llm_answer_model, "messages": messages, "temperature": 0,
                                   "max_tokens": settings.rag_answer_max_tokens, "timeout": timeout_s}
        if stream is None:
            response = await llm.chat.completions.create(**request)
            _add_usage(usage, response.usage, settings)
            text = (response.choices[0].message.content or "") if response.choices else ""
            cut = bool(response.choices) and response.choices[0].finish_reason == "length"
            return text, response.model or model, cut
        parts: list[str] = []
        seen_model = model
        stopped_at_cap = False
        chunks = await llm.chat.completions.create(**request, stream=True, stream_options={"include_usage": True})
        async for chunk in chunks:
            seen_model = chunk.model or seen_model
            _add_usage(usage, chunk.usage, settings)
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
                await stream.add(chunk.choices[0].delta.content)
            if chunk.choices and chunk.choices[0].finish_reason:
                stopped_at_cap = chunk.choices[0].finish_reason == "length"
        await stream.finish()
        return "".join(parts), seen_model, stopped_at_cap

    try:
        async for attempt in llm_retrying(settings, deadline=deadline, counted_as="answer"):
            with attempt:
                if stream is not None:
                    await stream.reset("the language model call is retried")
                timeout = settings.limits.llm_call_timeout_s
                if deadline is not None:
                    timeout = max(0.5, min(timeout, deadline - time.monotonic()))
                usage.llm_calls += 1
                text, model, cut = await counted_call("answer", attempt_once(timeout))
    except (openai.OpenAIError, TimeoutError) as exc:
        return ModelCall(None, usage, settings.llm_answer_model, _ms(started), f"{type(exc).__name__}: {exc}")
    content = text.strip()
    if not content:
        return ModelCall(None, usage, settings.llm_answer_model, _ms(started), "the model returned no answer text")
    return ModelCall(content, usage, model, _ms(started), cut=cut)


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
