"""`turnout keys ...`: create, list and revoke API keys."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import asyncpg
import typer
from rich.console import Console
from rich.table import Table

from infra.db.api_keys import create_key, list_keys, revoke_key
from infra.db.pool import create_pool
from infra.settings import get_settings

keys_app = typer.Typer(help="Manage API keys (stored hashed; a key is shown once).", no_args_is_help=True)
out = Console()
T = TypeVar("T")


async def _with_conn(fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    settings = get_settings()
    settings.require_services(redis=False)
    pool = await create_pool(settings.database_url, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            return await fn(conn)
    finally:
        await pool.close()


@keys_app.command("create")
def create(
    name: Annotated[str, typer.Option(help="who the key is for")],
    admin: Annotated[bool, typer.Option(help="may use admin routes")] = False,
) -> None:
    """Create a key and print it (once) with its webhook signing secret."""
    issued = asyncio.run(_with_conn(lambda conn: create_key(conn, name, is_admin=admin)))
    out.print(f"key:            {issued.token}")
    out.print(f"webhook secret: {issued.key.webhook_secret}")
    out.print("Store both now; the key cannot be shown again.", style="yellow")


@keys_app.command("list")
def list_() -> None:
    rows = asyncio.run(_with_conn(list_keys))
    table = Table("id", "name", "admin", "created", "revoked")
    for r in rows:
        table.add_row(r["id"], r["name"], "yes" if r["is_admin"] else "", str(r["created_at"])[:19],
                      str(r["revoked_at"] or "")[:19])
    out.print(table)


@keys_app.command("revoke")
def revoke(key_id: str) -> None:
    if not asyncio.run(_with_conn(lambda conn: revoke_key(conn, key_id))):
        out.print(f"no active key {key_id}", style="red")
        raise typer.Exit(1)
    out.print(f"revoked {key_id}")
