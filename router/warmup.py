"""Read the router's system prompt, and the answer's, into a fresh llama-server's prompt cache.

The router's prompt is byte-identical on every request of a day, so after this one call a question
costs only its own tokens; without it the first question of the day pays ~20-40 s on 2 cores. The
answer prompt's system message is constant too (~190 tokens, ~3.5 s on an AVX2-only 2-core CPU): read
once here, it waits in a slot of its own (llama-server has two, docs/local-llm.md "Slots"), so the
first answer reads only its passages and question.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from infra.llm import create_llm_client
from infra.settings import LLMFilters, LLMMode, Settings
from retrieval.answer_prompt import SYSTEM_PROMPT as ANSWER_SYSTEM_PROMPT
from router.engine import EngineRequest, OpenAIEngine, Turn
from router.prompt import system_prompt, user_message
from router.tools import default_registry

_WARM_UP_TIMEOUT_S = 600.0  # a cold read on busy cores; nobody waits for it


async def routing_call(settings: Settings, question: str, *, max_output_tokens: int, timeout_s: float) -> int:
    """One json_schema routing call for ``question`` with the router's system prompt of today, as a job
    makes it (the warm-up's, and `bench.slot_bench`'s); returns the prompt tokens it read."""
    registry = default_registry()
    engine = OpenAIEngine(settings, registry, mode=LLMMode.JSON_SCHEMA)
    today = datetime.now(UTC).date()
    code = engine.code_filters
    turns = [Turn("system", system_prompt(today, LLMMode.JSON_SCHEMA, registry, code_filters=code)),
             Turn("user", user_message(question, today, LLMMode.JSON_SCHEMA, code_filters=code))]
    try:
        response = await engine.complete(
            EngineRequest(turns=turns, max_output_tokens=max_output_tokens, deadline=time.monotonic() + timeout_s)
        )
    finally:
        await engine.client.close()
    return response.input_tokens


async def _warm_up_answer(settings: Settings, model: str) -> None:
    client = create_llm_client(settings)
    try:
        await client.chat.completions.create(
            model=model, max_tokens=1, temperature=0,
            messages=[{"role": "system", "content": ANSWER_SYSTEM_PROMPT}, {"role": "user", "content": "ping"}],
        )
    finally:
        await client.close()


def warm_up(base_url: str, model: str | None = None, *, filters: LLMFilters | None = None) -> int:
    """One 1-token routing call against ``base_url``, then one 1-token answer call (to ``model`` too when
    it is named: the local server's one model routes and answers); returns the prompt tokens the routing
    call read."""
    base = Settings()  # not the cached settings: the stack's environment was set just now
    limits = base.limits.model_copy(update={"llm_call_timeout_s": _WARM_UP_TIMEOUT_S})
    settings = base.model_copy(update={"llm_base_url": base_url, "limits": limits, "llm_max_retries": 0,
                                       "llm_router_model": model or base.llm_router_model,
                                       "llm_filters": filters or base.llm_filters})
    read = asyncio.run(routing_call(settings, "ping", max_output_tokens=1, timeout_s=_WARM_UP_TIMEOUT_S))
    asyncio.run(_warm_up_answer(settings, model or base.llm_answer_model))
    return read
