"""`turnout jobs list|show|cancel|retry`: the real command (a subprocess) against the real API,
whose jobs stay queued (no worker consumes its queue prefix)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, query, settings_env, stack_settings


@pytest.fixture(scope="module")
def quiet_api(test_environment: None, settings: Settings) -> Iterator[ApiServer]:
    idle = stack_settings(settings, redis_prefix=settings.redis_prefix + "cli-idle:", job_lease_s=86_400.0)
    server = ApiServer(idle).start()
    yield server
    server.stop()


def _turnout(api: ApiServer, key: IssuedKey, settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **settings_env(settings), "TURNOUT_API_URL": api.base_url, "TURNOUT_API_KEY": key.token,
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "turnout", "jobs", *args], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_list_show_cancel_and_retry(quiet_api: ApiServer, settings: Settings) -> None:
    key = issue_key(settings, "cli")
    with quiet_api.client(key.token) as http:
        first = http.post("/v1/questions", json={"question": "cli first question"}).json()["id"]
        second = http.post("/v1/questions", json={"question": "cli second question"}).json()["id"]

    listed = _turnout(quiet_api, key, settings, "list", "--json", "--limit", "1")
    assert listed.returncode == 0, listed.stderr
    page = json.loads(listed.stdout)
    assert [item["id"] for item in page["items"]] == [second] and page["nextCursor"]
    table = _turnout(quiet_api, key, settings, "list", "--cursor", page["nextCursor"], "-q", "first")
    assert table.returncode == 0 and first in table.stdout and second not in table.stdout

    shown = _turnout(quiet_api, key, settings, "show", first)
    assert shown.returncode == 0 and json.loads(shown.stdout)["question"] == "cli first question"

    not_yet = _turnout(quiet_api, key, settings, "retry", first)
    assert not_yet.returncode == 1 and "only a finished job can be retried" in not_yet.stderr
    cancelled = _turnout(quiet_api, key, settings, "cancel", first)
    assert cancelled.returncode == 0 and f"{first}: cancelled" in cancelled.stdout
    again = _turnout(quiet_api, key, settings, "cancel", first)
    assert again.returncode == 1 and "409" in again.stderr

    retried = _turnout(quiet_api, key, settings, "retry", first)
    assert retried.returncode == 0, retried.stderr
    retry_id = retried.stdout.strip()
    assert query(settings, "SELECT retry_of FROM jobs WHERE id = $1", retry_id) == [{"retry_of": first}]
    replayed = _turnout(quiet_api, key, settings, "retry", first)
    assert replayed.stdout.startswith(retry_id) and "existing retry" in replayed.stdout
    bad = _turnout(quiet_api, key, settings, "list", "--status", "finished")
    assert bad.returncode == 1 and "422" in bad.stderr and "status" in bad.stderr
    query(settings, "UPDATE jobs SET status = 'cancelled' WHERE id = ANY($1)", [second, retry_id])


def test_no_key_is_a_clear_error(quiet_api: ApiServer, settings: Settings) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TURNOUT_API_KEY"} | settings_env(settings)
    env.pop("TURNOUT_API_KEY", None)
    result = subprocess.run([sys.executable, "-m", "turnout", "jobs", "list", "--url", quiet_api.base_url], env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and "no API key" in result.stderr
