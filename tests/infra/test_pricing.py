"""The price table (infra/settings.py `llm_prices`) and `usage.costUsd` as the router adds it up."""

from __future__ import annotations

import pytest

from infra.results import Usage
from infra.settings import ModelPrice, Settings
from router.limits import JobBudget


def test_the_price_table_prices_a_call_and_unknown_models_cost_nothing() -> None:
    settings = Settings(llm_prices={"big": ModelPrice(input=3.0, output=15.0)})
    assert settings.llm_cost_usd("big", 1_000_000, 0) == pytest.approx(3.0)
    assert settings.llm_cost_usd("big", 2_000, 1_000) == pytest.approx(0.006 + 0.015)
    assert settings.llm_cost_usd("local-qwen", 5_000, 500) == 0.0
    assert Settings().llm_cost_usd("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)  # the default


def test_the_price_table_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNOUT_LLM_PRICES", '{"m": {"input": 1, "output": 2}}')
    assert Settings().llm_cost_usd("m", 500_000, 250_000) == pytest.approx(1.0)


def test_a_job_budget_prices_router_rounds_and_adds_a_tool_s_cost() -> None:
    settings = Settings(llm_router_model="r", llm_prices={"r": ModelPrice(input=1.0, output=4.0)})
    budget = JobBudget(settings.limits, settings=settings)
    budget.add_llm_call(1_000, 100)  # $0.001 + $0.0004
    budget.add_usage(Usage(llm_calls=1, input_tokens=10, output_tokens=10, total_tokens=20, cost_usd=0.25))
    assert budget.usage.cost_usd == pytest.approx(0.2514)
    assert budget.usage.wire()["costUsd"] == budget.usage.cost_usd
    assert JobBudget(settings.limits).usage.cost_usd == 0.0
