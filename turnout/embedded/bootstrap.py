"""First-run data for `turnout up`: the sample corpus, the local admin key and the first vector
indexing run. Each happens once; a later start finds them and changes nothing.

- The sample corpus is imported when the database has no articles at all.
- The admin key lives in ``<data_dir>/admin-key`` (mode 0600); it is re-checked against the
  database on every start and replaced only when the database no longer knows it.
- Indexing is started once per data directory (recorded in ``<data_dir>/state.json``) when there
  are articles; the run itself executes on the `embeddings` queue in the vector worker.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from infra.corpus import SAMPLE_CORPUS, ArticleRecord, BadLine, read_corpus
from infra.db.api_keys import create_key, verify_token
from infra.db.articles import count_localizations, upsert_records
from infra.db.pool import create_pool
from infra.settings import Settings
from turnout.embedded import EmbeddedError

ADMIN_KEY_FILE = "admin-key"
STATE_FILE = "state.json"
ADMIN_KEY_NAME = "local admin (turnout up)"


@dataclass(frozen=True)
class BootstrapReport:
    admin_key: str
    key_created: bool
    imported: int | None  # sample records imported by this start; None = no import
    localizations: int
    index_run_id: str | None
    index_started: bool  # by this start
    index_note: str | None  # why no indexing run exists, when there is none


def load_sample_corpus(path: Path = SAMPLE_CORPUS) -> list[ArticleRecord]:
    records: list[ArticleRecord] = []
    for item in read_corpus(path):
        if isinstance(item, BadLine):
            raise EmbeddedError(f"the sample corpus is damaged: {path}:{item.line_no}: {item.error}")
        records.append(item)
    return records


def read_state(data_dir: Path) -> dict[str, Any]:
    path = data_dir / STATE_FILE
    if not path.exists():
        return {}
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddedError(f"{path} is unreadable ({exc}); delete it to redo the first-run steps") from exc
    return state


def write_state(data_dir: Path, state: dict[str, Any]) -> None:
    path = data_dir / STATE_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_secret(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    os.chmod(tmp, 0o600)  # an old file may have been created with other bits
    os.replace(tmp, path)


def read_admin_key(path: Path) -> str | None:
    if not path.exists():
        return None
    return path.read_text(encoding="utf-8").strip() or None


async def ensure_admin_key(conn: asyncpg.Connection, saved: str | None) -> tuple[str, bool]:
    """The saved local admin key if the database still accepts it, else a new one (True = new)."""
    if saved:
        key = await verify_token(conn, saved)
        if key is not None and key.is_admin:
            return saved, False
    issued = await create_key(conn, ADMIN_KEY_NAME, is_admin=True)
    return issued.token, True


async def bootstrap(settings: Settings, data_dir: Path, *, import_sample: bool,
                    corpus: Path = SAMPLE_CORPUS) -> BootstrapReport:
    state = read_state(data_dir)
    pool = await create_pool(settings.database_url, min_size=1, max_size=2)
    try:
        async with pool.acquire() as conn:
            count = await count_localizations(conn)
            imported: int | None = None
            if count == 0 and import_sample:
                counts = await upsert_records(conn, load_sample_corpus(corpus))
                imported = counts.inserted
                count = await count_localizations(conn)
                state["sample_imported_at"] = datetime.now(UTC).isoformat()
                write_state(data_dir, state)
            key_path = data_dir / ADMIN_KEY_FILE
            token, key_created = await ensure_admin_key(conn, read_admin_key(key_path))
            if key_created:
                write_secret(key_path, token)

        run_id: str | None = state.get("index_run_id")
        started = False
        note: str | None = None
        if run_id is None:
            from retrieval.reembed import ReembedError, RunConflict
            from workers.reembed import start_reembed_run

            if count == 0:
                note = "no articles yet: import a corpus (`turnout import FILE.jsonl`), then restart"
            else:
                try:
                    run_id = await start_reembed_run(pool, settings=settings)
                except RunConflict as exc:  # someone (`turnout reembed`) already indexes: let it finish
                    note = f"not started: {exc}"
                except ReembedError as exc:
                    note = f"vector indexing could not start: {exc}; run `turnout reembed` to retry"
                else:
                    started = True
                    state["index_run_id"] = run_id
                    state["index_started_at"] = datetime.now(UTC).isoformat()
                    write_state(data_dir, state)
        return BootstrapReport(
            admin_key=token, key_created=key_created, imported=imported, localizations=count,
            index_run_id=run_id, index_started=started, index_note=note,
        )
    finally:
        await pool.close()
