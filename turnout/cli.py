"""The `turnout` command. Each area registers its commands here; one module does one thing."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from infra.settings import ConfigError, get_settings

if TYPE_CHECKING:
    from infra.corpus import ArticleRecord
    from infra.db.articles import UpsertCounts
from infra.status import Queue

app = typer.Typer(
    name="turnout",
    help="Turnout: multilingual question answering over articles, as durable queued jobs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True, soft_wrap=True, emoji=False, highlight=False)


@app.command()
def migrate() -> None:
    """Apply all schema migrations to TURNOUT_DATABASE_URL."""
    from infra.migrate import upgrade

    settings = get_settings()
    settings.require_services(redis=False)
    upgrade(settings.database_url)
    console.print("[green]schema is up to date[/green]")


@app.command("mcp")
def mcp_stdio() -> None:
    """Serve Turnout's tools over MCP on stdio (for a local MCP host); the key is TURNOUT_API_KEY."""
    from api.mcp.stdio import main

    main()


@app.command("import")
def import_corpus(
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="a .jsonl corpus")],
    strict: Annotated[bool, typer.Option(help="write nothing if any line is bad")] = False,
) -> None:
    """Load a JSONL corpus (idempotent upsert). Bad lines are reported by number; the rest loads."""
    from infra.corpus import BadLine, read_corpus
    from infra.migrate import upgrade

    settings = get_settings()
    settings.require_services(redis=False)
    upgrade(settings.database_url)
    records: list[ArticleRecord] = []
    bad: list[BadLine] = []
    with _progress() as progress:
        lines = sum(1 for _ in path.open(encoding="utf-8"))
        task = progress.add_task("reading", total=lines)
        for item in read_corpus(path):
            (bad if isinstance(item, BadLine) else records).append(item)  # type: ignore[arg-type]
            progress.advance(task)
        progress.update(task, completed=lines)
    for line in bad:
        console.print(f"{path}:{line.line_no}: {line.error}", style="red", markup=False)
    if bad and strict:
        console.print(f"[red]{len(bad)} bad line(s); --strict: nothing written[/red]")
        raise typer.Exit(2)
    counts = asyncio.run(_write_records(settings.database_url, records))
    console.print(
        f"[green]{len(records)} records: {counts.inserted} inserted, {counts.updated} updated, "
        f"{counts.unchanged} unchanged[/green]" + (f"; [red]{len(bad)} bad line(s) skipped[/red]" if bad else "")
    )
    if bad:
        raise typer.Exit(1)


async def _write_records(dsn: str, records: list[ArticleRecord]) -> UpsertCounts:
    from infra.db.articles import upsert_records
    from infra.db.pool import create_pool

    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            return await upsert_records(conn, records)
    finally:
        await pool.close()


@app.command()
def worker(
    queues: Annotated[str, typer.Option(help="comma-separated queues to consume")] = ",".join(q.value for q in Queue),
    concurrency: Annotated[int, typer.Option(min=1)] = 4,
    pool: Annotated[str, typer.Option(help="celery pool: threads, prefork or solo")] = "threads",
    beat: Annotated[bool, typer.Option(help="also run Celery beat (periodic tasks); one per deployment")] = False,
    name: Annotated[str | None, typer.Option(help="node name, e.g. front@%h (default celery@%h)")] = None,
) -> None:
    """Start a Celery worker for the given queues."""
    settings = get_settings()
    settings.require_services()
    unknown = set(queues.split(",")) - {q.value for q in Queue}
    if unknown:
        raise typer.BadParameter(f"unknown queue(s) {sorted(unknown)}; known: {[q.value for q in Queue]}")
    from workers.app import process_app

    argv = ["worker", "-Q", queues, "-c", str(concurrency), "-P", pool, "--loglevel", "INFO"]
    if name:
        argv += ["-n", name]
    if beat:  # the schedule's state lives with the deployment's other data
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        argv += ["-B", "--schedule", str(settings.data_dir / "celerybeat-schedule")]
    process_app().worker_main(argv)


@app.command()
def api(
    host: Annotated[str | None, typer.Option()] = None,
    port: Annotated[int | None, typer.Option()] = None,
) -> None:
    """Serve the HTTP API (uvicorn)."""
    import uvicorn

    settings = get_settings()
    settings.require_services()
    # Long polls (`?waitS=`, `Prefer: wait`; up to 30 s) and event streams would otherwise hold a
    # shutdown until they end; after 5 s they are closed (clients poll again, streams resume with
    # Last-Event-ID).
    uvicorn.run("api.main:create_app", factory=True, host=host or settings.api_host, port=port or settings.api_port,
                timeout_graceful_shutdown=5)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=console, transient=not sys.stderr.isatty() and not os.environ.get("CI"),
    )


def main() -> None:
    try:
        app()
    except ConfigError as exc:
        console.print(f"[red]configuration error:[/red] {exc}")
        sys.exit(2)


def _register_subcommands() -> None:
    from turnout.keys_cli import keys_app

    app.add_typer(keys_app, name="keys")
    from turnout.jobs_cli import jobs_app

    app.add_typer(jobs_app, name="jobs")
    from turnout.status_cli import status

    app.command("status")(status)
    from turnout.up_cli import up

    app.command("up")(up)
    from turnout.reembed_cli import eval_rag, reembed

    app.command("reembed")(reembed)
    app.command("eval-rag")(eval_rag)
    from turnout.answer_eval_cli import eval_answers

    app.command("eval-answers")(eval_answers)
    from turnout.llm_cli import llm_app

    app.add_typer(llm_app, name="llm")
    from turnout.eval_cli import eval_app

    app.add_typer(eval_app(), name="eval")


_register_subcommands()
