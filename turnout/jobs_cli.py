"""`turnout jobs list|show|cancel|retry`: a client of the HTTP API (the same routes, checks and
webhooks as any client: `cancel` is `DELETE /v1/jobs/{id}`, `retry` is `POST .../retry`).

The API is `--url` (default TURNOUT_API_URL, else TURNOUT_PUBLIC_BASE_URL, else the local API at
TURNOUT_API_HOST:TURNOUT_API_PORT); the key is `--key` (default TURNOUT_API_KEY).
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.table import Table

from infra.settings import get_settings

jobs_app = typer.Typer(help="List, show, cancel and retry jobs (over the HTTP API).", no_args_is_help=True)
out = Console(soft_wrap=True, emoji=False, highlight=False)
err = Console(stderr=True, soft_wrap=True, emoji=False, highlight=False)

URL_ENV, KEY_ENV = "TURNOUT_API_URL", "TURNOUT_API_KEY"
TIMEOUT_S = 30.0
QUESTION_COLUMN = 60

UrlOpt = Annotated[str | None, typer.Option("--url", help=f"API base URL (default: {URL_ENV} or the local API)")]
KeyOpt = Annotated[str | None, typer.Option("--key", help=f"API key (default: {KEY_ENV})")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the API's JSON")]


def _client(url: str | None, key: str | None) -> httpx.Client:
    token = key or os.environ.get(KEY_ENV)
    if not token:
        err.print(f"[red]no API key[/red]: pass --key or set {KEY_ENV}")
        raise typer.Exit(2)
    base = url or os.environ.get(URL_ENV)
    if base is None:
        settings = get_settings()
        base = settings.public_base_url or f"http://{settings.api_host}:{settings.api_port}"
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT_S)


def _call(url: str | None, key: str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """The response, or exit: 1 with the API's error message, 2 when the API cannot be reached."""
    with _client(url, key) as client:
        try:
            response = client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            err.print(f"[red]cannot reach the API at {client.base_url}[/red]: {exc}")
            raise typer.Exit(2) from None
    if response.is_error:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text
        err.print(f"[red]{response.status_code}[/red] {message}", markup=True)
        raise typer.Exit(1)
    return response


def _print_json(data: Any) -> None:
    out.print_json(json.dumps(data))


@jobs_app.command("list")
def list_command(
    status: Annotated[list[str] | None, typer.Option("--status", help="queued, running, succeeded, failed, "
                                                    "cancelled (repeatable)")] = None,
    tool: Annotated[str | None, typer.Option(help="SearchArticles, AskArticles or SearchAndAskArticles")] = None,
    source: Annotated[str | None, typer.Option(help="http or mcp")] = None,
    routed_by: Annotated[str | None, typer.Option("--routed-by", help="llm, fallback, cache or caller")] = None,
    after: Annotated[str | None, typer.Option("--after", help="created at or after (ISO 8601 with offset)")] = None,
    before: Annotated[str | None, typer.Option("--before", help="created before (ISO 8601 with offset)")] = None,
    q: Annotated[str | None, typer.Option("-q", "--query", help="words of the question")] = None,
    key_id: Annotated[str | None, typer.Option("--key-id", help="admin: another key's id, or * for all")] = None,
    limit: Annotated[int, typer.Option(min=1, max=100)] = 20,
    cursor: Annotated[str | None, typer.Option(help="nextCursor of a previous page")] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    key: KeyOpt = None,
) -> None:
    """The key's jobs, newest first, one page (the next page's cursor is printed after it)."""
    params: dict[str, Any] = {"status": status or [], "tool": tool, "source": source, "routedBy": routed_by,
                              "createdAfter": after, "createdBefore": before, "q": q, "apiKeyId": key_id,
                              "limit": limit, "cursor": cursor}
    page = _call(url, key, "GET", "/v1/jobs", params={k: v for k, v in params.items() if v not in (None, [])}).json()
    if as_json:
        _print_json(page)
        return
    table = Table("id", "status", "created", "tool", "question")
    for item in page["items"]:
        summary = item.get("resultSummary") or {}
        question = item["question"] if len(item["question"]) <= QUESTION_COLUMN else item["question"][:QUESTION_COLUMN - 1] + "…"
        table.add_row(item["id"], item["status"], item["createdAt"], summary.get("tool") or "", question)
    out.print(table)
    if page["nextCursor"]:
        err.print(f"more: --cursor {page['nextCursor']}")


@jobs_app.command("show")
def show_command(job_id: str, url: UrlOpt = None, key: KeyOpt = None) -> None:
    """A job's document (GET /v1/jobs/{id}) as JSON."""
    _print_json(_call(url, key, "GET", f"/v1/jobs/{job_id}").json())


@jobs_app.command("cancel")
def cancel_command(job_id: str, as_json: JsonOpt = False, url: UrlOpt = None, key: KeyOpt = None) -> None:
    """Cancel a job (DELETE /v1/jobs/{id}); a job that cannot be cancelled exits 1 with the reason."""
    response = _call(url, key, "DELETE", f"/v1/jobs/{job_id}")
    document = response.json()
    if as_json:
        _print_json(document)
    else:
        out.print(f"{job_id}: {document['status']}" + (" (cancel requested)" if response.status_code == 202 else ""))


@jobs_app.command("retry")
def retry_command(
    job_id: str,
    force: Annotated[bool, typer.Option(help="another retry even if the job was retried before")] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    key: KeyOpt = None,
) -> None:
    """Retry a finished job (POST /v1/jobs/{id}/retry); prints the retry's id."""
    response = _call(url, key, "POST", f"/v1/jobs/{job_id}/retry", params={"force": "true"} if force else None)
    document = response.json()
    if as_json:
        _print_json(document)
    else:
        replayed = response.headers.get("Idempotent-Replayed") == "true"
        out.print(document["id"] + (" (its existing retry; --force for another)" if replayed else ""))
