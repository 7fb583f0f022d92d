"""Read the router's system prompt into a fresh llama-server's prompt cache.

The prompt is byte-identical on every request of a day, so after this one call a question
costs only its own tokens; without it the first question of the day pays ~20-40 s on 2 cores.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from infra.settings import LLMFilters, LLMMode, Settings
from router.engine import EngineRequest, OpenAIEngine, Turn
from router.prompt import system_prompt, user_message
from router.tools import default_registry

_WARM_UP_TIMEOUT_S = 600.0  # a cold read on busy cores; nobody waits for it


async def _warm_up(settings: Settings) -> int:
    registry = default_registry()
    engine = OpenAIEngine(settings, registry, mode=LLMMode.JSON_SCHEMA)
    today = datetime.now(UTC).date()
    code = engine.code_filters
    turns = [Turn("system", system_prompt(today, LLMMode.JSON_SCHEMA, registry, code_filters=code)),
             Turn("user", user_message("ping", today, LLMMode.JSON_SCHEMA, code_filters=code))]
    try:
        response = await engine.complete(
            EngineRequest(turns=turns, max_output_tokens=1, deadline=time.monotonic() + _WARM_UP_TIMEOUT_S)
        )
    finally:
        await engine.client.close()
    return response.input_tokens


def warm_up(base_url: str, model: str | None = None, *, filters: LLMFilters | None = None) -> int:
    """One 1-token routing call against ``base_url``; returns the prompt tokens it read."""
    base = Settings()  # not the cached settings: the stack's environment was set just now
    limits = base.limits.model_copy(update={"llm_call_timeout_s": _WARM_UP_TIMEOUT_S})
    settings = base.model_copy(update={"llm_base_url": base_url, "limits": limits, "llm_max_retries": 0,
                                       "llm_router_model": model or base.llm_router_model,
                                       "llm_filters": filters or base.llm_filters})
    return asyncio.run(_warm_up(settings))
