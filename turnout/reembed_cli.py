"""`turnout reembed`: start a bulk re-embedding run and watch it with a progress bar.

The command only plans the run and enqueues its batches (the vector worker does the work);
it then polls the run row in Postgres: done/total, rate and ETA. Ctrl-C stops watching,
not the run.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Annotated

import asyncpg
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from infra.db import reembed as runs_db
from infra.db.pool import create_pool
from infra.settings import get_settings
from retrieval.reembed import ReembedError, RunConflict, run_document
from workers.reembed import start_reembed_run

console = Console(stderr=True, soft_wrap=True, emoji=False, highlight=False)


def _split_ids(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part for value in values for part in value.replace(",", " ").split()]


def reembed(
    language: Annotated[str | None, typer.Option(help="only articles in this language: ru, en or de")] = None,
    ids: Annotated[
        list[str] | None,
        typer.Option("--ids", help="only these article ids (localization or story ids; comma-separated or repeated)"),
    ] = None,
    model: Annotated[str | None, typer.Option(help="embedding model (default: TURNOUT_EMBEDDING_MODEL)")] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="watch the run until it ends")] = True,
    poll_s: Annotated[float, typer.Option("--poll", min=0.1, help="seconds between progress checks")] = 1.0,
) -> None:
    """Re-embed all articles, a language, or given ids into a new collection version; reads
    switch to it atomically when it is complete (questions are answered meanwhile)."""
    settings = get_settings()
    settings.require_services()
    code = asyncio.run(_reembed(language, _split_ids(ids), model, wait, poll_s))
    raise typer.Exit(code)


async def _reembed(language: str | None, ids: list[str] | None, model: str | None, wait: bool, poll_s: float) -> int:
    settings = get_settings()
    pool = await create_pool(settings.database_url, min_size=1, max_size=2)
    try:
        try:
            run_id = await start_reembed_run(pool, language=language, ids=ids, model=model, settings=settings)
        except RunConflict as exc:
            console.print(f"[red]re-embedding run {exc.run_id} is still in progress[/red]; "
                          "wait for it (or cancel it: DELETE /v1/admin/reembed/{id})")
            return 2
        except ReembedError as exc:
            console.print(f"[red]{exc.field}: {exc.message}[/red]")
            return 2
        typer.echo(run_id)
        if not wait:
            console.print(f"run {run_id} queued; watch it with GET /v1/admin/reembed/{run_id}")
            return 0
        return await _watch(pool, run_id, poll_s)
    finally:
        await pool.close()


async def _watch(pool: asyncpg.Pool, run_id: str, poll_s: float) -> int:
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"), TextColumn("ETA {task.fields[eta]}"),
        console=console, transient=False,
    )
    task: TaskID | None = None
    try:
        with progress:
            while True:
                run = await runs_db.get_run(pool, run_id)
                if run is None:
                    console.print(f"[red]run {run_id} disappeared[/red]")
                    return 1
                doc = run_document(run)
                rate = f"{doc['ratePerS']:.1f} articles/s" if doc["ratePerS"] else "–"
                eta = _duration(doc["etaS"]) if doc["etaS"] is not None else "–"
                description = f"re-embedding ({run.status})"
                if task is None:
                    task = progress.add_task(description, total=run.total, completed=run.done, rate=rate, eta=eta)
                else:
                    progress.update(task, description=description, completed=run.done, rate=rate, eta=eta)
                if run.status not in runs_db.OPEN_STATUSES:
                    break
                await asyncio.sleep(poll_s)
    except (KeyboardInterrupt, asyncio.CancelledError):
        console.print(f"stopped watching; run {run_id} continues in the background")
        return 130
    console.print(
        f"run {run.id} {run.status}: {run.done}/{run.total} articles, {run.embedded} chunks embedded, "
        f"{run.skipped} unchanged chunks copied" + (f"; error: {run.error}" if run.error else "")
        + (f"; reads now use {run.collection}" if run.status == "succeeded" else "")
    )
    return 0 if run.status == "succeeded" else 1


def _duration(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(max(0.0, seconds)))


def eval_rag(
    cases: Annotated[str, typer.Option("--set", help="dev, test, users (user-phrased), or a JSONL file of cases")] = "dev",
    json_out: Annotated[Path | None, typer.Option("--json", help="write the report document here")] = None,
    markdown_out: Annotated[Path | None, typer.Option("--markdown", help="write the Markdown tables here")] = None,
) -> None:
    """Retrieval quality per mode (vector, lexical, hybrid): hit@1, hit@5, MRR, p95 latency."""
    from retrieval.rag_eval import (
        RagEvalFileError,
        eval_installation,
        load_rag_cases,
        render_markdown,
        resolve_set,
    )
    from router.question_reading import question_period, retrieval_text

    settings = get_settings()
    settings.require_services(redis=False)
    try:
        report = asyncio.run(eval_installation(settings, load_rag_cases(resolve_set(cases)), retrieval_text,
                                               question_period))
    except RagEvalFileError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    text = render_markdown(report, title=f"RAG retrieval ({cases})")
    typer.echo(text)
    if json_out is not None:
        json_out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if markdown_out is not None:
        markdown_out.write_text(text, encoding="utf-8")
