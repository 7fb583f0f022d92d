"""`turnout import`: the real CLI against a fresh real database."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import asyncpg

from tests.support import services


def run_import(dsn: str, path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TURNOUT_DATABASE_URL": dsn, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "turnout", "import", str(path), *extra],
        env=env, capture_output=True, text=True, timeout=300, cwd=services.REPO_ROOT,
    )


async def fetch(dsn: str, query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetch(query)
    finally:
        await conn.close()


def test_shared_corpus_loads_once_and_twice_changes_nothing(fresh_dsn: str) -> None:
    first = run_import(fresh_dsn, services.SHARED_CORPUS)
    assert first.returncode == 0, first.stderr
    assert "1209 inserted" in first.stderr
    rows = asyncio.run(fetch(fresh_dsn, "SELECT language, count(*) AS n FROM localizations GROUP BY 1"))
    assert {r["language"]: r["n"] for r in rows} == {"en": 672, "de": 318, "ru": 219}
    before = asyncio.run(fetch(fresh_dsn, "SELECT id, imported_at, xmin::text AS x FROM localizations ORDER BY id"))

    second = run_import(fresh_dsn, services.SHARED_CORPUS)
    assert second.returncode == 0, second.stderr
    assert "0 inserted, 0 updated, 1209 unchanged" in second.stderr
    after = asyncio.run(fetch(fresh_dsn, "SELECT id, imported_at, xmin::text AS x FROM localizations ORDER BY id"))
    assert before == after  # not a single row rewritten


def test_corrupted_line_is_reported_by_number_and_the_rest_loads(fresh_dsn: str, tmp_path: Path) -> None:
    lines = services.SHARED_CORPUS.read_text(encoding="utf-8").splitlines()
    bad_json = lines[16][: len(lines[16]) // 2]  # line 17: cut in half
    bad_date = json.loads(lines[99])
    bad_date["created_at"] = "yesterday"  # line 100: a field that does not validate
    lines[16] = bad_json
    lines[99] = json.dumps(bad_date)
    corrupted = tmp_path / "corrupted.jsonl"
    corrupted.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = run_import(fresh_dsn, corrupted)
    assert result.returncode == 1
    assert f"{corrupted}:17: not valid JSON" in result.stderr
    assert f"{corrupted}:100: created_at" in result.stderr
    count = asyncio.run(fetch(fresh_dsn, "SELECT count(*) AS n FROM localizations"))[0]["n"]
    assert count == 1207


def test_strict_mode_writes_nothing_on_a_bad_line(fresh_dsn: str, tmp_path: Path) -> None:
    lines = services.SHARED_CORPUS.read_text(encoding="utf-8").splitlines()[:50]
    lines[3] = '{"id": "x"}'
    path = tmp_path / "strict.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_import(fresh_dsn, path, "--strict")
    assert result.returncode == 2
    assert ":4: language" in result.stderr
    assert asyncio.run(fetch(fresh_dsn, "SELECT count(*) AS n FROM localizations"))[0]["n"] == 0


async def test_reimport_keeps_operator_visibility_flags(db: asyncpg.Pool, shared_corpus: Path) -> None:
    from infra.corpus import ArticleRecord, read_corpus
    from infra.db.articles import set_visibility, upsert_records

    first = next(r for r in read_corpus(shared_corpus) if isinstance(r, ArticleRecord))
    async with db.acquire() as conn:
        assert await set_visibility(conn, [first.id], hidden=True) == 1
        counts = await upsert_records(conn, [first])
        assert counts.unchanged == 1
        assert await conn.fetchval("SELECT hidden FROM localizations WHERE id = $1", first.id) is True
        await set_visibility(conn, [first.id], hidden=False)
