"""`turnout eval --followup`: the follow-up set (issue 28) against the fallback or an LLM."""

from __future__ import annotations

import json
import sys

import typer

from infra.db.pool import create_pool
from infra.settings import LLMMode, Settings
from router.engine import OpenAIEngine
from router.followup_eval import (
    fallback_decider,
    followup_json,
    llm_decider,
    load_followups,
    render_followup_text,
    run_followup_eval,
)
from router.gate import CollectionRelevance
from router.service import RouterDeps
from router.tools import default_registry


async def evaluate_followups(settings: Settings, *, fallback: bool, mode: LLMMode | None, split: str,
                             limit: int | None, json_output: bool) -> None:
    cases = load_followups(split)[:limit]
    pool = await create_pool(settings.database_url, min_size=1, max_size=2) if settings.database_url else None
    relevance = CollectionRelevance.for_settings(pool, settings) if pool is not None else None
    engine = None
    try:
        if fallback or not settings.llm_configured:
            router = "fallback (deterministic) + follow-up reader"
            decide = fallback_decider(settings, relevance)
        else:
            registry = default_registry()
            engine = OpenAIEngine(settings, registry, mode=mode)
            deps = RouterDeps(settings=settings, pool=None, redis=None, executor=None,  # type: ignore[arg-type]
                              engine=engine, registry=registry, use_decision_cache=False,
                              fallback_on_llm_error=False, relevance=relevance)
            router, decide = f"{engine.model} @ {settings.llm_base_url} ({engine.mode.value})", llm_decider(deps)
        results = await run_followup_eval(cases, decide)
    finally:
        if engine is not None:
            await engine.client.close()
        if pool is not None:
            await pool.close()
    if json_output:
        json.dump(followup_json(router, split, results), sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        typer.echo(render_followup_text(router, split, results))
