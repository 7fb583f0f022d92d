"""`turnout up`: the embedded stack in one command (see turnout/embedded/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infra.settings import get_settings


def up(
    data_dir: Annotated[
        Path | None, typer.Option(help="where PostgreSQL, Redis, Qdrant, logs and the admin key live "
                                       "(default: TURNOUT_DATA_DIR, else ./.turnout)")
    ] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="API port (default: TURNOUT_API_PORT, else 8000)")] = None,
    sample: Annotated[bool, typer.Option(help="import the sample corpus when the database has no articles")] = True,
    local_llm: Annotated[bool, typer.Option(
        "--local-llm", help="route and answer with a local llama-server (Qwen2.5-Coder-1.5B, built and downloaded "
                            "once per machine into ~/.cache/turnout/llm; degraded mode until it is ready)")] = False,
) -> None:
    """Start everything on this machine: PostgreSQL, Redis, Qdrant Edge, the API and three workers.

    Services whose URL is set (TURNOUT_DATABASE_URL, TURNOUT_REDIS_URL, TURNOUT_QDRANT_URL) are
    used instead of the embedded ones. Ctrl-C stops everything; the next run reuses the data.
    """
    from turnout.embedded.stack import UpOptions, run_up

    settings = get_settings()
    options = UpOptions(
        data_dir=data_dir or settings.data_dir,
        api_host=settings.api_host,
        api_port=port or settings.api_port,
        import_sample=sample,
        local_llm=local_llm,
    )
    raise typer.Exit(run_up(options))
