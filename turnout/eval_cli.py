"""`turnout eval`: run a labelled question set against an endpoint or the fallback router."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import SecretStr
from typer.core import TyperGroup

from infra.db.pool import create_pool
from infra.results import ArticlesPage, NormalizedSearch
from infra.settings import ConfigError, LLMFilters, LLMMode, Settings, get_settings
from router.engine import OpenAIEngine
from router.eval import (
    EvalCase,
    EvalFileError,
    EvalReport,
    load_cases,
    load_split,
    render_markdown,
    render_tag_markdown,
    render_text,
    run_eval,
)
from router.executor import AskCall
from router.gate import CollectionRelevance
from router.service import RouterDeps, RoutingDecision, decide_fallback, decide_question
from router.tools import default_registry
from router.warmup import warm_up


class DecisionOnly:
    """The eval harness decides and never executes: a tool execution here is a bug, loudly."""

    async def search(self, q: NormalizedSearch, *, deadline: float | None = None) -> ArticlesPage:
        raise RuntimeError("the eval harness must not execute SearchArticles")

    async def ask(self, call: AskCall, *, deadline: float | None = None) -> object:
        raise RuntimeError("the eval harness must not execute a RAG answer")


def _cases(path: Path | None, split: str, limit: int | None) -> list[EvalCase]:
    cases = load_split(split) if path is None else load_cases(path, split=split)
    return cases[:limit]


async def evaluate(
    path: Path | None,
    settings: Settings,
    *,
    fallback: bool,
    mode: LLMMode | None = None,
    concurrency: int = 1,
    limit: int | None = None,
    split: str = "all",
) -> EvalReport:
    """Score one router on ``path`` (None: the shipped set's ``split``). A new router to compare
    (a local model, another endpoint) is one more branch that builds settings and calls
    `_evaluate_llm`: the scoring, the report and the tables do not change."""
    cases = _cases(path, split, limit)
    pool = await create_pool(settings.database_url, min_size=1, max_size=2) if settings.database_url else None
    relevance = CollectionRelevance.for_settings(pool, settings) if pool is not None else None
    try:
        if fallback:
            async def decide_fb(case: EvalCase) -> RoutingDecision:
                return await decide_fallback(settings, case.request(), relevance=relevance)

            return await run_eval(cases, decide_fb, router="fallback (deterministic)" + _gate_label(relevance),
                                  split=split)
        return await _evaluate_llm(cases, settings, mode=mode, concurrency=concurrency, split=split,
                                   relevance=relevance)
    finally:
        if pool is not None:
            await pool.close()


def _gate_label(relevance: CollectionRelevance | None) -> str:
    """The report says whether the request gate measured relevance (it needs the collection's database)."""
    return "" if relevance is not None else " [gate: rules only, no TURNOUT_DATABASE_URL]"


async def _evaluate_llm(
    cases: list[EvalCase], settings: Settings, *, mode: LLMMode | None, concurrency: int, split: str,
    relevance: CollectionRelevance | None = None,
) -> EvalReport:
    if not settings.llm_configured:
        raise ConfigError("no LLM endpoint: pass --base-url (or set TURNOUT_LLM_BASE_URL), or use --fallback")
    registry = default_registry()
    engine = OpenAIEngine(settings, registry, mode=mode)
    deps = RouterDeps(
        settings=settings, pool=None, redis=None, executor=DecisionOnly(), engine=engine,  # type: ignore[arg-type]
        registry=registry, use_decision_cache=False, fallback_on_llm_error=False, relevance=relevance,
    )

    async def decide(case: EvalCase) -> RoutingDecision:
        return await decide_question(deps, case.request())

    mode_label = engine.mode.value + (" + code filters" if engine.code_filters else "")
    router = f"{engine.model} @ {settings.llm_base_url} ({mode_label})" + _gate_label(relevance)
    try:
        return await run_eval(
            cases, decide, router=router, concurrency=concurrency, model=engine.model, mode=mode_label,
            split=split,
        )
    finally:
        await engine.client.close()


class Split(StrEnum):
    dev = "dev"
    test = "test"
    all = "all"


def eval_command(
    file: Annotated[
        Path | None,
        typer.Argument(exists=True, dir_okay=False, readable=True, help="labelled JSONL set (default: the shipped set)"),
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible /v1 URL (default TURNOUT_LLM_BASE_URL)")] = None,
    model: Annotated[str | None, typer.Option(help="router model (default TURNOUT_LLM_ROUTER_MODEL)")] = None,
    api_key: Annotated[str | None, typer.Option(envvar="TURNOUT_LLM_API_KEY", show_envvar=False)] = None,
    mode: Annotated[LLMMode | None, typer.Option(help="loop mode (default TURNOUT_LLM_MODE)")] = None,
    filters: Annotated[LLMFilters | None, typer.Option(
        help="json_schema mode: who fills dates, language, sort (default TURNOUT_LLM_FILTERS = code)")] = None,
    fallback: Annotated[bool, typer.Option("--fallback", help="evaluate the deterministic fallback router")] = False,
    split: Annotated[Split, typer.Option(help="the shipped set's half: dev (tuned on), test (held out) or all")] = (
        Split.all
    ),
    json_output: Annotated[bool, typer.Option("--json", help="print the full report as JSON")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="print Markdown tables (per language, per tag)")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="cases decided in parallel")] = 1,
    limit: Annotated[int | None, typer.Option(min=1, help="only the first N cases")] = None,
    local_llm: Annotated[bool, typer.Option(
        "--local-llm", help="evaluate the local llama-server model (built/fetched once per machine, started for "
                            "this run; json_schema mode unless --mode)")] = False,
    followup: Annotated[bool, typer.Option(
        "--followup", help="score the follow-up set (router/data/followup_eval_*.jsonl) instead")] = False,
) -> None:
    """Measure routing on a labelled set: tool, per-field arguments, dates, language, refusals,
    latency, rounds and tokens, per language and tag."""
    settings = _settings_for(base_url, model, api_key, filters)
    stop_local_llm = None
    if local_llm:
        from turnout.embedded.local_llm import start_for_eval

        settings, stop_local_llm = start_for_eval(settings)
        mode = mode or LLMMode.JSON_SCHEMA
        warm_up(settings.llm_base_url or "", settings.llm_router_model, filters=settings.llm_filters)  # not the first case's latency
    if followup:
        return _followup_eval(settings, fallback, mode, split.value, limit, json_output, stop_local_llm)
    try:
        report = asyncio.run(
            evaluate(
                file, settings, fallback=fallback, mode=mode, concurrency=concurrency, limit=limit, split=split.value
            )
        )
    except EvalFileError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    finally:
        if stop_local_llm is not None:
            stop_local_llm()
    _print_report(report, json_output=json_output, markdown=markdown)


def _settings_for(base_url: str | None, model: str | None, api_key: str | None,
                  filters: LLMFilters | None) -> Settings:
    """The configured settings with the command line's LLM endpoint, model, key and filters on top."""
    update: dict[str, object] = {}
    if base_url:
        update["llm_base_url"] = base_url
    if model:
        update["llm_router_model"] = model
    if api_key:
        update["llm_api_key"] = SecretStr(api_key)
    if filters:
        update["llm_filters"] = filters
    return get_settings().model_copy(update=update)


def _print_report(report: EvalReport, *, json_output: bool, markdown: bool) -> None:
    if json_output:
        json.dump(report.to_json(), sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    elif markdown:
        typer.echo(render_markdown([report]) + "\n\n" + render_tag_markdown(report))
    else:
        typer.echo(render_text(report))


def _followup_eval(settings: Settings, fallback: bool, mode: LLMMode | None, split: str, limit: int | None,
                   json_output: bool, stop_local_llm: Callable[[], None] | None) -> None:
    from turnout.followup_eval_cli import evaluate_followups

    try:
        asyncio.run(evaluate_followups(settings, fallback=fallback, mode=mode, split=split, limit=limit,
                                       json_output=json_output))
    finally:
        if stop_local_llm is not None:
            stop_local_llm()


class _EvalGroup(TyperGroup):
    """`turnout eval [FILE] [OPTIONS]` runs the routing eval as before; `turnout eval
    export-feedback` is a subcommand beside it."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # Any: typer vendors its click
        if args[:1] == ["--help"] or (args and args[0] in self.commands):
            return super().parse_args(ctx, args)
        return super().parse_args(ctx, ["run", *args])


def eval_app() -> typer.Typer:
    from turnout.feedback_cli import export_feedback

    group = typer.Typer(cls=_EvalGroup, help="Measure routing (`run`, the default) or export rated jobs as cases.")
    group.command("run")(eval_command)
    group.command("export-feedback")(export_feedback)
    return group
