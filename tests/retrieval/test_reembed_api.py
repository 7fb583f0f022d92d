"""The admin re-embedding API and the `turnout reembed` command (planning side; the batches
run in the worker test)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from typer.testing import CliRunner

from infra.db.api_keys import create_key
from infra.db.pool import create_pool
from infra.settings import Settings
from tests.retrieval.rag_fixtures import load, rag_db, rag_settings

# Shared fixtures (edge/server stores, the own database) used by the tests below.
FIXTURES = (rag_db, rag_settings)


@pytest.fixture
async def api(rag_settings: Settings, rag_db: asyncpg.Pool) -> AsyncIterator[tuple[httpx.AsyncClient, str, str]]:
    from api.main import create_app

    await load(rag_db)
    async with rag_db.acquire() as conn:
        admin = await create_key(conn, "reembed-admin", is_admin=True)
        user = await create_key(conn, "reembed-user")
    app = create_app(rag_settings)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as client:
        yield client, admin.token, user.token


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_start_watch_list_and_cancel_a_run(api: tuple[httpx.AsyncClient, str, str]) -> None:
    client, admin, _ = api
    started = await client.post("/v1/admin/reembed", json={"language": "de"}, headers=_auth(admin))
    assert started.status_code == 202, started.text
    run = started.json()
    assert started.headers["location"] == f"/v1/admin/reembed/{run['id']}"
    assert run["status"] == "queued" and run["total"] == 2 and run["done"] == 0
    assert run["model"] == "use-multilingual-v3" and run["dimension"] == 512
    assert run["scope"] == {"language": "de", "ids": None}
    assert {"ratePerS", "etaS", "chunksEmbedded", "chunksSkipped", "pendingBatches"} <= set(run)

    got = await client.get(f"/v1/admin/reembed/{run['id']}", headers=_auth(admin))
    assert got.status_code == 200 and got.json()["id"] == run["id"]
    listed = await client.get("/v1/admin/reembed?limit=5", headers=_auth(admin))
    assert [r["id"] for r in listed.json()["runs"]] == [run["id"]]

    conflict = await client.post("/v1/admin/reembed", json={}, headers=_auth(admin))
    assert conflict.status_code == 409
    assert conflict.json()["error"]["details"] == {"runId": run["id"]}

    cancelled = await client.delete(f"/v1/admin/reembed/{run['id']}", headers=_auth(admin))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = await client.delete(f"/v1/admin/reembed/{run['id']}", headers=_auth(admin))
    assert again.status_code == 409 and again.json()["error"]["code"] == "reembed_not_cancellable"


async def test_admin_only_and_bad_input_is_a_clear_422(api: tuple[httpx.AsyncClient, str, str]) -> None:
    client, admin, user = api
    assert (await client.post("/v1/admin/reembed", json={})).status_code == 401
    forbidden = await client.post("/v1/admin/reembed", json={}, headers=_auth(user))
    assert forbidden.status_code == 403
    assert (await client.get("/v1/admin/reembed", headers=_auth(user))).status_code == 403

    cases = [
        ({"language": "fr"}, "language"),
        ({"ids": []}, "ids"),
        ({"unknown": 1}, "unknown"),
        ({"ids": ["bike-de", "no-such-article"]}, "ids"),
        ({"model": "text-embedding-3-large"}, "model"),
    ]
    for body, field in cases:
        response = await client.post("/v1/admin/reembed", json=body, headers=_auth(admin))
        assert response.status_code == 422, (body, response.text)
        error = response.json()["error"]
        assert error["code"] == "invalid_request" and field in error["message"], error
    unknown = await client.post("/v1/admin/reembed", json={"ids": ["no-such-article"]}, headers=_auth(admin))
    assert "no-such-article" in unknown.json()["error"]["message"]
    missing = await client.get("/v1/admin/reembed/rr_nope", headers=_auth(admin))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert (await client.get("/v1/admin/reembed", headers=_auth(admin))).json()["runs"] == []


def test_cli_starts_a_run_and_reports_errors(rag_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from turnout.cli import app

    def sql(statement: str, *args: object) -> list[asyncpg.Record]:
        async def go() -> list[asyncpg.Record]:
            pool = await create_pool(rag_settings.database_url, min_size=1, max_size=1)
            try:
                if statement == "load":
                    await pool.execute("TRUNCATE reembed_batches, reembed_runs, collection_versions, "
                                       "localizations, articles CASCADE")
                    await load(pool)
                    return []
                return list(await pool.fetch(statement, *args))
            finally:
                await pool.close()

        return asyncio.run(go())

    sql("load")
    monkeypatch.setattr("turnout.reembed_cli.get_settings", lambda: rag_settings)
    runner = CliRunner()
    bad = runner.invoke(app, ["reembed", "--language", "fr"])
    assert bad.exit_code == 2 and "language must be ru, en or de" in bad.output
    ok = runner.invoke(app, ["reembed", "--ids", "bike-de,bike-en", "--ids", "garden-en", "--no-wait"])
    assert ok.exit_code == 0, ok.output
    run_id = ok.output.splitlines()[0].strip()
    [row] = sql("SELECT status, total, scope FROM reembed_runs WHERE id = $1", run_id)
    assert row["status"] == "queued" and row["total"] == 3
    assert row["scope"]["ids"] == ["bike-de", "bike-en", "garden-en"]
    busy = runner.invoke(app, ["reembed", "--no-wait"])
    assert busy.exit_code == 2 and run_id in busy.output
    sql("UPDATE reembed_runs SET status = 'cancelled' WHERE id = $1", run_id)
