"""Conversations end to end (issue 28): the real API, workers, Postgres, Redis and the real
corpus; only the LLM is scripted.

Filter-only follow-ups run with no LLM call (the scripted server's log does not grow, and any
call would fail); "summarize them" answers from exactly the previous page; another key's job
cannot be continued; a chain of five model follow-ups keeps the history within its bound."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from router.engine import Turn, estimate_tokens
from tests.api.support import (
    ApiServer,
    index_ruby_articles,
    issue_key,
    query,
    settings_env,
    submit_and_succeed,
    wait_for_job,
)
from tests.support.llm_server import ScriptedLLM, ToolCall, answer_from_passage

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")


def _routing_requests(llm: ScriptedLLM) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if "tools" in body]


def _in_period(items: list[dict[str, Any]], start: str, end: str) -> bool:
    return all(start <= item["createdAt"][:10] <= end for item in items)


# (follow-up, the fields it changes, a check of the page it returns)
FILTER_FOLLOWUPS: list[tuple[str, dict[str, Any], Any]] = [
    ("только на немецком", {"language": "de"}, lambda items: {i["language"] for i in items} == {"de"}),
    ("а за 2024 год?", {"dateFrom": "2024-01-01", "dateTo": "2024-12-31"},
     lambda items: _in_period(items, "2024-01-01", "2024-12-31")),
    ("сначала старые", {"sort": "oldest"}, lambda items: items == sorted(items, key=lambda i: i["createdAt"])),
    ("страница 2", {"page": 2}, None),
    ("по 5 на странице", {"pageSize": 5}, lambda items: len(items) <= 5),
    ("only the English ones", {"language": "en"}, lambda items: {i["language"] for i in items} == {"en"}),
    ("and from 2023?", {"dateFrom": "2023-01-01", "dateTo": "2023-12-31"},
     lambda items: _in_period(items, "2023-01-01", "2023-12-31")),
    ("older first", {"sort": "oldest"}, lambda items: items == sorted(items, key=lambda i: i["createdAt"])),
    ("page 3", {"page": 3}, None),
    ("show 10 per page", {"pageSize": 10}, lambda items: len(items) <= 10),
    ("nur auf Russisch", {"language": "ru"}, lambda items: {i["language"] for i in items} == {"ru"}),
    ("und 2024?", {"dateFrom": "2024-01-01", "dateTo": "2024-12-31"},
     lambda items: _in_period(items, "2024-01-01", "2024-12-31")),
    ("ältere zuerst", {"sort": "oldest"}, lambda items: items == sorted(items, key=lambda i: i["createdAt"])),
    ("nächste Seite", {"page": 2}, None),
    ("zeig 5 pro Seite", {"pageSize": 5}, lambda items: len(items) <= 5),
    # sloppy forms: typos read over the reader's vocabulary, a switch, a size by its count noun
    ("тлько на анлийском", {"language": "en"}, lambda items: {i["language"] for i in items} == {"en"}),
    ("switch to russian", {"language": "ru"}, lambda items: {i["language"] for i in items} == {"ru"}),
    ("nur 5 Stück", {"pageSize": 5}, lambda items: len(items) <= 5),
]


def test_filter_only_followups_change_the_filters_with_no_llm_call(client: httpx.Client, llm: ScriptedLLM) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby"}))
    first = submit_and_succeed(client, question="Find articles about Ruby in all languages, please")
    base = {k: v for k, v in first["result"]["search"].items() if k != "adjustments"}
    assert base["language"] is None and base["page"] == 1 and base["sort"] == "newest"
    assert first["conversationId"] == first["id"] and first["previousJobId"] is None
    calls = len(llm.requests)
    llm.fail_every_call("a filter-only follow-up must not call the LLM")
    for followup, change, check in FILTER_FOLLOWUPS:
        doc = submit_and_succeed(client, question=followup, previousJobId=first["id"])
        result = doc["result"]
        expected = {**base, "page": 1, **change}
        assert {k: v for k, v in result["search"].items() if k != "adjustments"} == expected, followup
        assert (result["routedBy"], result["tool"], result["usage"]["llmCalls"]) == ("followup", "SearchArticles", 0)
        assert doc["usage"]["llmCalls"] == 0
        for name, value in change.items():
            shown = "none" if value is None else str(value)
            assert f"follow-up: {name} {shown}" in " ".join(result["search"]["adjustments"]), result["search"]
        items = result["articles"]["items"]
        assert result["articles"]["page"] == expected["page"]
        if check is not None:
            assert items and check(items), (followup, items)
        assert (doc["previousJobId"], doc["conversationId"]) == (first["id"], first["id"])
    assert len(llm.requests) == calls  # the scripted server's log did not grow


def test_a_followup_of_a_followup_keeps_every_change(client: httpx.Client, llm: ScriptedLLM) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby", "language": "en"}))
    first = submit_and_succeed(client, question="Find English articles about Ruby")
    llm.fail_every_call()
    second = submit_and_succeed(client, question="oldest first", previousJobId=first["id"])
    third = submit_and_succeed(client, question="und 2024?", conversationId=first["id"])  # continues the newest: `second`
    search = third["result"]["search"]
    assert (search["language"], search["sort"], search["dateFrom"], search["dateTo"]) == (
        "en", "oldest", "2024-01-01", "2024-12-31")
    assert third["previousJobId"] == second["id"]
    chain = client.get(f"/v1/conversations/{first['id']}")
    assert chain.status_code == 200
    jobs = chain.json()["jobs"]
    assert [j["id"] for j in jobs] == [first["id"], second["id"], third["id"]]
    assert [j["previousJobId"] for j in jobs] == [None, first["id"], second["id"]]
    assert client.get(f"/v1/conversations/{second['id']}").status_code == 404  # not a conversation's id


def test_summarize_them_answers_from_exactly_the_previous_page(
    client: httpx.Client, llm: ScriptedLLM, settings: Settings
) -> None:
    index_ruby_articles(settings)
    llm.script(ToolCall("SearchArticles", {"text": "Ruby", "language": "en", "pageSize": 5}))
    first = submit_and_succeed(client, question="Find English articles about Ruby, 5 per page")
    page_ids = [item["id"] for item in first["result"]["articles"]["items"]]
    assert page_ids
    llm.script(ToolCall("SearchAndAskArticles", {"text": "Ruby", "question": "Summarize these Ruby articles"}))
    llm.on_chat(answer_from_passage)
    doc = submit_and_succeed(client, question="summarize them", previousJobId=first["id"])
    result = doc["result"]
    assert (result["routedBy"], result["tool"], result["status"]) == ("llm", "SearchAndAskArticles", "answered")
    assert result["sources"] and {s["articleId"] for s in result["sources"]} <= set(page_ids)
    [row] = query(settings, "SELECT normalized_arguments FROM audit_events WHERE job_id = $1 AND kind = "
                  "'tool_execution'", doc["id"])
    executed = row["normalized_arguments"]
    assert (json.loads(executed) if isinstance(executed, str) else executed)["scope"] == page_ids
    routing = _routing_requests(llm)[-1]["messages"]
    history = " ".join(str(m.get("content")) for m in routing[1:-1])
    assert "Find English articles about Ruby" in history and page_ids[0] in history


def test_them_after_an_empty_page_is_nothing_found(client: httpx.Client, llm: ScriptedLLM) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby", "language": "en", "dateFrom": "1990-01-01",
                                           "dateTo": "1990-12-31"}))
    first = submit_and_succeed(client, question="Find English articles about Ruby from 1990")
    assert first["result"]["articles"]["items"] == []
    llm.script(ToolCall("SearchAndAskArticles", {"text": "Ruby", "question": "What do they say?"}))
    before = len(llm.chat_requests)
    doc = submit_and_succeed(client, question="what do they say?", previousJobId=first["id"])
    assert (doc["result"]["status"], doc["result"]["tool"]) == ("no_results", "SearchAndAskArticles")
    assert len(llm.chat_requests) == before + 1  # the routing round only: nothing to answer from, no RAG call


def test_another_keys_job_or_conversation_cannot_be_continued(
    idle_api: ApiServer, idle_client: httpx.Client, settings: Settings
) -> None:
    job = idle_client.post("/v1/questions", json={"question": "Find articles about Ruby"}).json()
    other: IssuedKey = issue_key(settings, "other")
    with idle_api.client(other.token) as stranger:
        for body in ({"previousJobId": job["id"]}, {"conversationId": job["id"]}):
            response = stranger.post("/v1/questions", json={"question": "only the German ones", **body})
            assert response.status_code == 404, response.text
            assert response.json()["error"]["code"] == "not_found"
        assert stranger.get(f"/v1/conversations/{job['id']}").status_code == 404
        assert stranger.post(f"/v1/jobs/{job['id']}/feedback", json={"rating": "up"}).status_code == 404
    running = idle_client.post("/v1/questions", json={"question": "page 2", "previousJobId": job["id"]})
    assert running.status_code == 409 and running.json()["error"]["code"] == "previous_job_running"
    assert idle_client.post("/v1/questions", json={"question": "x", "previousJobId": "job_nope"}).status_code == 404
    assert idle_client.post(f"/v1/jobs/{job['id']}/feedback", json={"rating": "up"}).status_code == 409
    # The submission's 404 and 409 are in its documented contract (the OpenAPI fuzz checks every status).
    documented = idle_client.get("/openapi.json").json()["paths"]["/v1/questions"]["post"]["responses"]
    assert {"404", "409"} <= set(documented), sorted(documented)


def test_a_chain_of_five_followups_keeps_the_history_within_its_bound(
    client: httpx.Client, llm: ScriptedLLM, settings: Settings
) -> None:
    index_ruby_articles(settings)
    bound = settings.limits.followup_history_tokens
    previous_id: str | None = None
    previous_question = previous_answer = ""
    questions = ["What is new in Ruby?", "why was that?", "and what about YJIT?", "why?", "was sagt man dazu?",
                 "а почему?"]
    for question in questions:
        # The scripted answer repeats an English passage: the model asks for an English answer (it stands).
        llm.script(ToolCall("AskArticles", {"question": f"{question} Ruby YJIT", "language": "en", "answerLanguage": "en"}))
        llm.on_chat(lambda body: answer_from_passage(body, repeat=60))  # a long answer: the bound must cut it
        body: dict[str, Any] = {"question": question}
        if previous_id:
            body["previousJobId"] = previous_id
        doc = submit_and_succeed(client, **body)
        assert doc["result"]["tool"] == "AskArticles" and doc["result"]["answer"]
        if previous_id:
            messages = _routing_requests(llm)[-1]["messages"]
            history = [Turn(m["role"], m.get("content")) for m in messages[1:-1]]
            assert len(history) == 2 and history[0].content == previous_question
            assert estimate_tokens(history) <= bound
            assert len(previous_answer) // 3 > bound and "…" in str(history[1].content)  # it was cut, not dropped
        previous_id, previous_question, previous_answer = doc["id"], question, doc["result"]["answer"]
    chain = client.get(f"/v1/conversations/{doc['conversationId']}").json()["jobs"]
    assert len(chain) == 6 and chain[-1]["id"] == previous_id


def test_feedback_is_one_per_job_replaceable_and_counted(
    api: ApiServer, client: httpx.Client, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby"}))
    job = submit_and_succeed(client, question="Find articles about Ruby, please")
    admin = issue_key(settings, "admin", admin=True)

    def counted() -> float:
        with api.client(admin.token) as ops:
            text = ops.get("/metrics").text
        line = next((ln for ln in text.splitlines() if ln.startswith("turnout_job_feedback{")
                     and 'tool="SearchArticles"' in ln and 'routed_by="llm"' in ln and 'rating="down"' in ln), None)
        return float(line.rsplit(" ", 1)[1]) if line else 0.0

    down_before = counted()
    first = client.post(f"/v1/jobs/{job['id']}/feedback", json={"rating": "up"})
    assert first.status_code == 200 and first.json()["feedback"]["rating"] == "up"
    again = client.post(f"/v1/jobs/{job['id']}/feedback", json={"rating": "down", "comment": "missed\x00 one"})
    assert again.json()["feedback"]["rating"] == "down" and again.json()["feedback"]["comment"] == "missed one"
    assert client.get(f"/v1/jobs/{job['id']}").json()["feedback"]["rating"] == "down"
    assert counted() == down_before + 1
    bad = client.post(f"/v1/jobs/{job['id']}/feedback", json={"rating": "meh"})
    assert bad.status_code == 422
    [row] = query(settings, "SELECT feedback_rating FROM jobs WHERE id = $1", job["id"])
    assert row["feedback_rating"] == "down"
    assert date.fromisoformat(again.json()["feedback"]["ratedAt"][:10]) <= date.today()


def test_export_feedback_writes_rated_jobs_as_cases_to_label(
    client: httpx.Client, llm: ScriptedLLM, settings: Settings, tmp_path: Path
) -> None:
    llm.script(ToolCall("SearchArticles", {"text": "Ruby", "language": "en"}))
    first = submit_and_succeed(client, question="Find English articles about Ruby")
    llm.fail_every_call()
    followup = submit_and_succeed(client, question="older first", previousJobId=first["id"])
    assert client.post(f"/v1/jobs/{followup['id']}/feedback", json={"rating": "down", "comment": "wrong order"}
                       ).status_code == 200
    out = tmp_path / "rated.jsonl"
    proc = subprocess.run([sys.executable, "-m", "turnout", "eval", "export-feedback", "--out", str(out)],
                          env=settings_env(settings), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    cases = {c["jobId"]: c for c in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    case = cases[followup["id"]]
    assert (case["question"], case["rating"], case["comment"], case["expected"]) == (
        "older first", "down", "wrong order", None)
    assert case["decision"]["routedBy"] == "followup" and case["decision"]["arguments"]["sort"] == "oldest"
    assert case["previous"]["question"] == "Find English articles about Ruby"
    assert first["id"] not in cases  # not rated: not exported


def test_a_retried_follow_up_stays_in_its_conversation(client: httpx.Client, llm: ScriptedLLM) -> None:
    """A retry repeats the job as it was asked: a follow-up's retry continues the same previous job."""
    llm.script(ToolCall("SearchArticles", {"text": "Ruby"}))
    first = submit_and_succeed(client, question="Find articles about Ruby in all languages, please")
    followup = submit_and_succeed(client, question="only the German ones", previousJobId=first["id"])
    llm.fail_every_call("a filter-only follow-up's retry must not call the LLM")
    retried = client.post(f"/v1/jobs/{followup['id']}/retry")
    assert retried.status_code == 201, retried.text
    doc = wait_for_job(client, retried.json()["id"])
    assert doc["status"] == "succeeded", doc
    assert (doc["retryOf"], doc["previousJobId"], doc["conversationId"]) == (followup["id"], first["id"], first["id"])
    assert doc["result"]["routedBy"] == "followup" and doc["result"]["search"]["language"] == "de"
    chain = client.get(f"/v1/conversations/{first['id']}").json()
    assert doc["id"] in json.dumps(chain)
