"""Budgets in money per key (issue 27), end to end: the real API, workers, PostgreSQL, Redis and the
scripted LLM. Twenty concurrent jobs against a daily budget with room for five never overspend it
(the rest fail `budget_exceeded` with the reset time), the spent-up key's next submission is a 429
saying when it resets, `GET /v1/usage` adds up to the jobs' usage and shows no other key's, and
every LLM call's audit row carries its cost."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from infra.budgets import BudgetLimits
from infra.settings import Settings
from router.engine import Turn, estimate_tokens
from tests.api.support import ApiServer, index_ruby_articles, issue_key, query, wait_for_job
from tests.support.llm_server import Delay, ScriptedLLM, Step, ToolCall, answer_from_passage

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")

CALL_S = 2.0  # every LLM call takes this long: all twenty jobs are submitted before any settles


def worst_case(body: dict[str, Any]) -> Step:
    """A routing reply that uses all the call may use: the prompt as the router estimates it (its
    hold) and every `max_tokens`. So what a job spends is what it held: the budget's edge exactly."""
    turns = [Turn(m["role"], m.get("content")) for m in body["messages"]]
    prompt = estimate_tokens(turns, json.dumps(body["tools"]))
    return Delay(CALL_S, ToolCall("SearchArticles", {"text": "ruby", "language": "en"},
                                  prompt_tokens=prompt, completion_tokens=body["max_tokens"]))


def _question(n: int) -> str:
    return f"ruby release posts, round {n:02d}"  # one length: one estimate; distinct: no decision cache


def _tomorrow() -> str:
    tomorrow = datetime.combine(datetime.now(UTC).date() + timedelta(days=1), time(), UTC)
    return tomorrow.isoformat().replace("+00:00", "Z")


def _spend(settings: Settings, key_id: str) -> list[dict[str, Any]]:
    return query(settings, "SELECT model, calls, input_tokens, output_tokens, cost_usd FROM key_spend "
                           "WHERE api_key_id = $1", key_id)


def test_twenty_concurrent_jobs_never_overspend_a_budget_with_room_for_five(
    api: ApiServer, llm: ScriptedLLM, settings: Settings,
) -> None:
    llm.on_chat(worst_case)
    # What one job costs, measured on a key without a budget (the same question length).
    calibration = issue_key(settings, "calibration")
    with api.client(calibration.token) as http:
        one = wait_for_job(http, http.post("/v1/questions", json={"question": _question(99)}).json()["id"])
    assert one["status"] == "succeeded", one
    [row] = _spend(settings, calibration.key.id)
    per_job: Decimal = row["cost_usd"]
    assert float(per_job) == pytest.approx(one["usage"]["costUsd"], abs=1e-8) and per_job > 0

    budget = 5 * per_job
    key = issue_key(settings, "budgeted", budgets=BudgetLimits(daily_usd=budget))
    with api.client(key.token) as http, ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda n: http.post("/v1/questions", json={"question": _question(n)}), range(20)))
        assert [a.status_code for a in answers] == [202] * 20, [a.text for a in answers if a.status_code != 202]
        docs = [wait_for_job(http, a.json()["id"], timeout=90) for a in answers]

    succeeded = [d for d in docs if d["status"] == "succeeded"]
    failed = [d for d in docs if d["status"] == "failed"]
    assert len(succeeded) == 5 and len(failed) == 15, [d["status"] for d in docs]
    for doc in failed:
        error = doc["error"]
        assert error["code"] == "budget_exceeded", error
        assert error["details"]["period"] == "day" and error["details"]["unit"] == "usd"
        assert error["details"]["resetAt"] == _tomorrow() and _tomorrow() in error["message"]
        assert doc["usage"]["llmCalls"] == 0  # refused before the call: nothing was spent
    [spent] = _spend(settings, key.key.id)
    assert spent["cost_usd"] <= budget and spent["calls"] == 5  # never overspent
    assert float(spent["cost_usd"]) == pytest.approx(sum(d["usage"]["costUsd"] for d in docs), abs=1e-8)
    [ledger] = query(settings, "SELECT day_usd, day_held_usd, month_held_usd FROM key_budget_ledger "
                               "WHERE api_key_id = $1", key.key.id)
    assert ledger["day_usd"] == spent["cost_usd"] and ledger["day_held_usd"] == ledger["month_held_usd"] == 0
    assert query(settings, "SELECT id FROM budget_holds WHERE api_key_id = $1", key.key.id) == []

    # Spent up (5 x the job's cost = the budget): the next submission is a 429 until midnight UTC.
    with api.client(key.token) as http:
        refused = http.post("/v1/questions", json={"question": _question(21)})
        retried = http.post(f"/v1/jobs/{succeeded[0]['id']}/retry")
        usage = http.get("/v1/usage").json()
    assert refused.status_code == 429 and retried.status_code == 429, refused.text
    body = refused.json()["error"]
    assert body["code"] == "budget_exceeded" and body["details"]["resetAt"] == _tomorrow()
    until_midnight = (datetime.fromisoformat(_tomorrow().replace("Z", "+00:00")) - datetime.now(UTC)).total_seconds()
    assert abs(int(refused.headers["Retry-After"]) - until_midnight) <= 5
    assert query(settings, "SELECT count(*) AS n FROM jobs WHERE api_key_id = $1", key.key.id)[0]["n"] == 20

    # The usage report is the jobs' usage; the budget shows spent up, no room, its reset.
    assert usage["apiKeyId"] == key.key.id and [d["apiKeyId"] for d in usage["days"]] == [key.key.id]
    totals = usage["totals"]
    assert totals["calls"] == sum(d["usage"]["llmCalls"] for d in docs) == 5
    assert totals["inputTokens"] == sum(d["usage"]["inputTokens"] for d in docs)
    assert totals["outputTokens"] == sum(d["usage"]["outputTokens"] for d in docs)
    assert totals["costUsd"] == pytest.approx(sum(d["usage"]["costUsd"] for d in docs), abs=1e-8)
    [day_budget] = [b["day"] for b in usage["budgets"]]
    assert day_budget["limitUsd"] == pytest.approx(float(budget)) and day_budget["remainingUsd"] == 0
    assert day_budget["exceeded"] is True and day_budget["resetAt"] == _tomorrow()
    assert usage["budgets"][0]["month"]["limitUsd"] is None  # unlimited


def test_usage_shows_only_the_keys_own_spend_and_the_audit_rows_carry_cost(
    api: ApiServer, llm: ScriptedLLM, settings: Settings,
) -> None:
    llm.on_chat(lambda body: ToolCall("SearchArticles", {"text": "ruby", "language": "en"}, prompt_tokens=700,
                                      completion_tokens=30))
    mine, other = issue_key(settings, "mine"), issue_key(settings, "other")
    admin = issue_key(settings, "usage-admin", admin=True)
    with api.client(mine.token) as http:
        docs = [wait_for_job(http, http.post("/v1/questions", json={"question": f"ruby posts, usage {n}"}).json()["id"])
                for n in range(3)]
        own = http.get("/v1/usage")
        forbidden = http.get("/v1/usage", params={"apiKeyId": other.key.id})
        bad_range = http.get("/v1/usage", params={"from": "2026-12-02", "to": "2026-11-01"})
    assert [d["status"] for d in docs] == ["succeeded"] * 3
    assert own.status_code == 200, own.text
    report = own.json()
    assert report["totals"] == {"calls": 3, "inputTokens": 2100, "outputTokens": 90,
                                "costUsd": pytest.approx(sum(d["usage"]["costUsd"] for d in docs), abs=1e-8)}
    assert [(d["model"], d["calls"]) for d in report["days"]] == [(settings.llm_router_model, 3)]
    assert [b["apiKeyId"] for b in report["budgets"]] == [mine.key.id]
    assert report["from"] == datetime.now(UTC).date().replace(day=1).isoformat()  # this month by default
    assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "forbidden"
    assert bad_range.status_code == 422 and bad_range.json()["error"]["code"] == "invalid_request"

    with api.client(other.token) as http:
        theirs = http.get("/v1/usage").json()
    assert theirs["days"] == [] and theirs["totals"]["calls"] == 0  # another key's spend is never shown
    assert [b["apiKeyId"] for b in theirs["budgets"]] == [other.key.id]

    with api.client(admin.token) as http:
        everyone = http.get("/v1/usage").json()
        one_key = http.get("/v1/usage", params={"apiKeyId": mine.key.id}).json()
        star = http.get("/v1/usage", params={"apiKeyId": "*"}).json()
    assert everyone["apiKeyId"] is None and mine.key.id in {d["apiKeyId"] for d in everyone["days"]}
    assert star["apiKeyId"] is None and star["totals"]["calls"] >= everyone["totals"]["calls"]
    assert {mine.key.id, other.key.id} <= {b["apiKeyId"] for b in everyone["budgets"]}
    assert one_key["totals"] == report["totals"] and {d["apiKeyId"] for d in one_key["days"]} == {mine.key.id}

    for doc in docs:  # the audit row of each LLM call: its cost, the job's usage.costUsd
        rows = query(settings, "SELECT cost_usd FROM audit_events WHERE job_id = $1 AND kind = 'llm_round'", doc["id"])
        assert [r["cost_usd"] for r in rows] == [pytest.approx(doc["usage"]["costUsd"])]
        assert rows[0]["cost_usd"] == pytest.approx((700 * 0.15 + 30 * 0.60) / 1_000_000)


def test_a_spent_up_key_gets_429_over_mcp_too(api: ApiServer, settings: Settings) -> None:
    from tests.api.mcp_support import call_tool, text_of

    key = issue_key(settings, "zero", budgets=BudgetLimits(monthly_tokens=0))
    result = call_tool(api, key.token, "SearchArticles", {"text": "ruby"})
    assert result.is_error is True and "monthly budget of 0 tokens" in text_of(result)
    assert result.meta is not None and result.meta["turnout/error"]["code"] == "budget_exceeded"
    first_of_next = (datetime.now(UTC).date().replace(day=28) + timedelta(days=4)).replace(day=1)
    assert result.meta["turnout/error"]["details"]["resetAt"] == f"{first_of_next.isoformat()}T00:00:00Z"
    with api.client(key.token) as http:
        response: httpx.Response = http.post("/v1/questions", json={"question": "ruby posts"})
    assert response.status_code == 429 and response.json()["error"]["details"]["period"] == "month"


@pytest.fixture(scope="module")
def indexed_articles(celery_worker: Any, settings: Settings, shared_corpus: Any) -> list[str]:
    return index_ruby_articles(settings)


def test_the_rag_answer_call_is_held_from_the_budget_too(
    api: ApiServer, llm: ScriptedLLM, settings: Settings, indexed_articles: list[str],
) -> None:
    # Questions of no other test: the decision cache is shared by every key (and the session).
    question = "Which Ruby release came out most recently, budget test?"

    def reply(body: dict[str, Any]) -> Step:
        if "tools" not in body:  # the RAG answer call
            return answer_from_passage(body, prompt_tokens=300, completion_tokens=40)
        turns = [Turn(m["role"], m.get("content")) for m in body["messages"]]
        return ToolCall("AskArticles", {"question": question, "language": "en"},
                        prompt_tokens=estimate_tokens(turns, json.dumps(body["tools"])),
                        completion_tokens=body["max_tokens"])

    llm.on_chat(reply)
    unlimited = issue_key(settings, "rag-unlimited")
    with api.client(unlimited.token) as http:
        answered = wait_for_job(http, http.post("/v1/questions", json={"question": question}).json()["id"])
    assert answered["status"] == "succeeded" and answered["usage"]["llmCalls"] == 2, answered
    routing_tokens = answered["usage"]["totalTokens"] - 340  # the routing round used all it held

    # Room for the routing round, not for the answer's worst case (its prompt alone is hundreds of tokens).
    key = issue_key(settings, "rag-budget", budgets=BudgetLimits(daily_tokens=routing_tokens + 50))
    latest = question.replace("release", "version")  # the same length (estimate), not the cached decision
    with api.client(key.token) as http:
        doc = wait_for_job(http, http.post("/v1/questions", json={"question": latest}).json()["id"])
    assert doc["status"] == "failed" and doc["error"]["code"] == "budget_exceeded", doc
    assert doc["error"]["details"]["unit"] == "tokens" and doc["error"]["details"]["resetAt"] == _tomorrow()
    assert doc["usage"]["llmCalls"] == 1 and doc["usage"]["totalTokens"] == routing_tokens  # the round it made
    rag_calls = [r for r in llm.chat_requests if "tools" not in r]
    assert len(rag_calls) == 1  # only the unlimited key's answer was asked for
    [spent] = _spend(settings, key.key.id)
    assert spent["calls"] == 1 and spent["input_tokens"] + spent["output_tokens"] == routing_tokens
