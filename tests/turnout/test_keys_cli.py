"""`turnout keys create|update|list` with budgets (issue 27), against the test database."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from rich.console import Console
from typer.testing import CliRunner

from infra.settings import Settings
from tests.api.support import query
from turnout import keys_cli
from turnout.keys_cli import keys_app

runner = CliRunner()


def _budgets(settings: Settings, key_id: str) -> dict[str, object]:
    [row] = query(settings, "SELECT daily_budget_usd, monthly_budget_usd, daily_budget_tokens, monthly_budget_tokens "
                            "FROM api_keys WHERE id = $1", key_id)
    return row


def test_budgets_are_set_at_creation_changed_one_by_one_and_listed(settings: Settings,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys_cli, "out", Console(width=400))  # the table's rows unwrapped
    created = runner.invoke(keys_app, ["create", "--name", "budget-cli", "--daily-usd", "0.25",
                                       "--monthly-tokens", "100000"])
    assert created.exit_code == 0, created.output
    match = re.search(r"key:\s+(tk_[0-9a-f]+)\.", created.output)
    assert match is not None, created.output
    key_id = match.group(1)
    assert _budgets(settings, key_id) == {"daily_budget_usd": Decimal("0.25"), "monthly_budget_usd": None,
                                          "daily_budget_tokens": None, "monthly_budget_tokens": 100000}

    updated = runner.invoke(keys_app, ["update", key_id, "--monthly-usd", "10", "--daily-usd", "default"])
    assert updated.exit_code == 0, updated.output
    assert f"{key_id} budgets: month $ 10, month tokens 100000" in " ".join(updated.output.split())
    assert _budgets(settings, key_id) == {"daily_budget_usd": None, "monthly_budget_usd": Decimal("10"),
                                          "daily_budget_tokens": None, "monthly_budget_tokens": 100000}
    listed = runner.invoke(keys_app, ["list"])
    [line] = [line for line in listed.output.splitlines() if key_id in line]
    assert listed.exit_code == 0 and "month $ 10, month tokens 100000" in line

    for bad in (["--daily-usd", "-1"], ["--daily-tokens", "lots"], ["--monthly-usd", "NaN"]):
        refused = runner.invoke(keys_app, ["update", key_id, *bad])
        assert refused.exit_code == 2, (bad, refused.output)
    missing = runner.invoke(keys_app, ["update", "tk_nope", "--daily-usd", "1"])
    assert missing.exit_code == 1 and "no key tk_nope" in missing.output
