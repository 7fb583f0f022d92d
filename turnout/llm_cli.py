"""`turnout llm build|serve`: the offline LLM profile on a production host (see docs/local-llm.md).

`build` builds llama-server and fetches the weights into the machine's cache (once, with
progress); `serve` runs llama-server in the foreground on loopback (exec: a service manager
stops it directly) and prints what the Turnout processes need to route through it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from infra.local_llm.build import ensure_server
from infra.local_llm.config import LocalLLMConfig, LocalLLMError
from infra.local_llm.server import server_argv, stack_env
from infra.local_llm.weights import ensure_weights

llm_app = typer.Typer(help="The offline LLM profile: llama.cpp's llama-server with Qwen2.5-Coder-1.5B.",
                      no_args_is_help=True)
console = Console(stderr=True, highlight=False)


def _prepare(config: LocalLLMConfig) -> tuple[list[str], str]:
    tasks: dict[str, TaskID] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        def report(what: str, done: int, total: int) -> None:
            key = what.split(" (")[0]
            if key not in tasks:
                tasks[key] = progress.add_task(key, total=total or None)
            progress.update(tasks[key], completed=done, total=total or None)

        try:
            binary = ensure_server(config, report)
            model = ensure_weights(config, report)
        except LocalLLMError as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(1) from None
    return binary, str(model)


@llm_app.command("build")
def build() -> None:
    """Build llama-server and fetch the weights into the cache (TURNOUT_LOCAL_LLM_CACHE_DIR); once per machine."""
    config = LocalLLMConfig()
    binary, model = _prepare(config)
    console.print(f"llama-server: {' '.join(binary)}\nweights:      {model}\ncache:        {config.cache_dir}")


@llm_app.command("serve")
def serve(
    port: Annotated[int, typer.Option(min=1, max=65535, help="port on loopback (TURNOUT_LOCAL_LLM_HOST)")] = 8090,
) -> None:
    """Run llama-server in the foreground (building it first if needed); prints the TURNOUT_* settings
    for the API and the workers."""
    config = LocalLLMConfig()
    binary, model = _prepare(config)
    console.print("Set these for the Turnout API and workers:")
    for name, value in stack_env(config, port).items():
        console.print(f"  export {name}={value}", markup=False)
    argv = server_argv(binary, config, Path(model), port)
    sys.stderr.flush()
    os.execvp(argv[0], argv)
