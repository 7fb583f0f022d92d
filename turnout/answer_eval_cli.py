"""`turnout eval-answers`: answer quality of the configured answer model(s) on a labelled set
(retrieval/answer_eval.py): language, accepted non-answers, key facts, citations, latency."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from infra.settings import get_settings

console = Console(stderr=True, soft_wrap=True, emoji=False, highlight=False)


def eval_answers(
    split: Annotated[str, typer.Option("--split", help="dev, test (the held-out half), fresh, blind, periods, sixth, seventh, eighth (later held-out sets) or fourth (a tuning set)")] = "dev",
    cases_file: Annotated[Path | None, typer.Option("--file", help="a JSONL file of cases instead of the set")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="only the first N cases")] = None,
    time_budget_s: Annotated[float | None, typer.Option(
        "--time-budget", min=1, help="start no case after this many seconds (the report says how many ran)")] = None,
    models: Annotated[list[str] | None, typer.Option(
        "--model", help="answer model (repeat to compare; default TURNOUT_LLM_ANSWER_MODEL)")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the report document here")] = None,
    markdown_out: Annotated[Path | None, typer.Option("--markdown", help="write the Markdown table here")] = None,
    local_llm: Annotated[bool, typer.Option(
        "--local-llm", help="answer with the local llama-server model (built/fetched once per machine, started for "
        "the run and stopped after it)")] = False,
) -> None:
    """Run each case through the real RAG path with the configured LLM endpoint and score the
    answers per model. The corpus must be imported and indexed (`turnout import`, `turnout reembed`)."""
    from retrieval.answer_eval import eval_installation, render_markdown
    from retrieval.answer_eval_cases import SETS, AnswerEvalError, load_answer_cases, resolve_set
    from router.question_reading import question_period, retrieval_text

    if split not in SETS:
        console.print(f"[red]--split is one of {', '.join(SETS)}[/red]")
        raise typer.Exit(2)
    settings = get_settings()
    try:
        cases = load_answer_cases(cases_file or resolve_set(split), split=split)[:limit]
        settings.require_services(redis=False)
    except AnswerEvalError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    stop_local_llm = None
    if local_llm:
        from turnout.embedded.local_llm import start_for_eval

        settings, stop_local_llm = start_for_eval(settings)
        settings = settings.model_copy(update={"llm_answer_model": settings.llm_router_model})
    try:
        report = asyncio.run(eval_installation(settings, cases, models or [], time_budget_s=time_budget_s,
                                               retrieval_text=retrieval_text, period_of=question_period))
    except AnswerEvalError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    finally:
        if stop_local_llm is not None:
            stop_local_llm()
    text = render_markdown(report, title=f"RAG answers ({split})")
    typer.echo(text)
    if json_out is not None:
        json_out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if markdown_out is not None:
        markdown_out.write_text(text, encoding="utf-8")
