"""GET /v1/jobs: the caller's jobs newest first in cursor pages, filters, another key's jobs never
listed, bad filters a 422 that names them. On the idle API (jobs stay queued; states are set in
the table where a test needs finished jobs)."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from infra.db.api_keys import IssuedKey
from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, query


def _submit(http: httpx.Client, question: str) -> str:
    response = http.post("/v1/questions", json={"question": question})
    assert response.status_code == 202, response.text
    job_id: str = response.json()["id"]
    return job_id


def _all_pages(http: httpx.Client, params: dict[str, Any], between: Any = None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        response = http.get("/v1/jobs", params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["items"]
        cursor = page["nextCursor"]
        if cursor is None:
            return items
        if between is not None:
            between()


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"] for item in items]


def _finish(settings: Settings, job_id: str, status: str, result: dict[str, Any] | None = None) -> None:
    query(settings, "UPDATE jobs SET status = $2, result = $3, finished_at = now() WHERE id = $1",
          job_id, status, result)


def test_pages_are_newest_first_without_duplicates_or_gaps_while_jobs_are_added(
    idle_api: ApiServer, settings: Settings
) -> None:
    owner = issue_key(settings, "pager")
    with idle_api.client(owner.token) as http:
        before = [_submit(http, f"paging question {i}") for i in range(23)]
        added: list[str] = []
        stop, first_added = threading.Event(), threading.Event()

        def keep_adding() -> None:  # concurrent submissions while the pages are read
            with idle_api.client(owner.token) as other:
                while not stop.is_set() and len(added) < 40:
                    added.append(_submit(other, "arrived while paging"))
                    first_added.set()

        def between_pages() -> None:
            # Under load the listing can outrun the other thread's first submission; waiting for it
            # at the first page boundary makes sure a job arrives while the pages are being read.
            assert first_added.wait(timeout=60), "the concurrent submitter never got a job in"
            _submit(http, "added between pages")

        adder = threading.Thread(target=keep_adding)
        adder.start()
        try:
            seen = _ids(_all_pages(http, {"limit": 4}, between=between_pages))
        finally:
            stop.set()
            adder.join()
    assert len(seen) == len(set(seen)), "a job was listed twice"
    listed_before = [job_id for job_id in seen if job_id in set(before)]
    assert listed_before == list(reversed(before)), "a job that existed before the listing is missing or out of order"
    assert added, "the concurrent submitter added nothing: the test proved nothing about concurrency"


def test_another_keys_jobs_are_never_listed_and_only_an_admin_names_a_key(
    idle_api: ApiServer, settings: Settings
) -> None:
    alice, bob = issue_key(settings, "alice"), issue_key(settings, "bob")
    admin = issue_key(settings, "admin", admin=True)
    with idle_api.client(alice.token) as a, idle_api.client(bob.token) as b, idle_api.client(admin.token) as adm:
        alices = {_submit(a, "alice's question") for _ in range(3)}
        bobs = {_submit(b, "bob's question") for _ in range(2)}
        assert set(_ids(_all_pages(a, {}))) == alices
        assert set(_ids(_all_pages(b, {}))) == bobs
        refused = a.get("/v1/jobs", params={"apiKeyId": bob.key.id})
        assert refused.status_code == 403 and refused.json()["error"]["details"]["field"] == "apiKeyId"
        assert a.get("/v1/jobs", params={"apiKeyId": "*"}).status_code == 403
        assert set(_ids(_all_pages(adm, {"apiKeyId": bob.key.id}))) == bobs
        everyone = set(_ids(_all_pages(adm, {"apiKeyId": "*", "q": "question", "limit": 100})))
        assert alices | bobs <= everyone
        assert _all_pages(adm, {}) == []  # by default an admin lists its own jobs (none)


def test_filters_combine(idle_api: ApiServer, settings: Settings) -> None:
    key = issue_key(settings, "filters")
    with idle_api.client(key.token) as http:
        searched = _submit(http, "kubernetes operators release notes")
        asked = _submit(http, "why did the cluster upgrade fail")
        failed = _submit(http, "broken question")
        cancelled = _submit(http, "cancelled question")
        queued = _submit(http, "still waiting kubernetes")
        _finish(settings, searched, "succeeded", {"resultType": "SearchResult", "status": "answered",
                                                  "tool": "SearchArticles", "routedBy": "fallback",
                                                  "articles": {"totalItems": 7}})
        _finish(settings, asked, "succeeded", {"resultType": "AnswerResult", "status": "answered",
                                               "tool": "AskArticles", "routedBy": "llm"})
        _finish(settings, failed, "failed")
        assert http.delete(f"/v1/jobs/{cancelled}").status_code == 200
        query(settings, "UPDATE jobs SET created_at = now() - interval '10 days' WHERE id = $1", failed)

        def listed(**params: Any) -> list[str]:
            return _ids(_all_pages(http, params))

        assert listed(status=["failed", "cancelled"]) == [cancelled, failed]
        assert listed(status="queued") == [queued]
        assert listed(tool="SearchArticles") == [searched]
        assert listed(routedBy="llm") == [asked]
        assert listed(tool="AskArticles", routedBy="fallback") == []
        assert listed(source="mcp") == [] and len(listed(source="http")) == 5
        assert listed(q="kubernetes") == [queued, searched]
        assert listed(q="kubernetes -waiting") == [searched]
        assert listed(createdBefore="2100-01-01T00:00:00Z", createdAfter=_iso_days_ago(settings, 5)) == \
            [queued, cancelled, asked, searched]
        assert listed(createdBefore=_iso_days_ago(settings, 5)) == [failed]
        item = next(i for i in _all_pages(http, {"tool": "SearchArticles"}))
        assert item["resultSummary"] == {"resultType": "SearchResult", "status": "answered", "tool": "SearchArticles",
                                         "routedBy": "fallback", "totalItems": 7}
        assert "result" not in item and item["source"] == "http" and item["links"]["self"].endswith(searched)


def test_a_follow_up_job_is_listed_and_filtered_by_how_it_was_routed(idle_api: ApiServer, settings: Settings) -> None:
    """`routedBy: followup` (a filter-only follow-up, no LLM) is one of the result's values: the list
    shows it and filters on it (the list's own copy of the vocabulary lacked it: a 500 and a 422)."""
    key = issue_key(settings, "followup-list")
    with idle_api.client(key.token) as http:
        followed = _submit(http, "only the german ones")
        _finish(settings, followed, "succeeded", {"resultType": "SearchResult", "status": "answered",
                                                  "tool": "SearchArticles", "routedBy": "followup"})
        assert _ids(_all_pages(http, {"routedBy": "followup"})) == [followed]
        assert _all_pages(http, {})[0]["resultSummary"]["routedBy"] == "followup"


def _iso_days_ago(settings: Settings, days: int) -> str:
    row = query(settings, "SELECT to_char((now() - make_interval(days => $1)) AT TIME ZONE 'UTC', "
                "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS at", days)
    at: str = row[0]["at"]
    return at


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"status": "finished"}, "status", "queued"),
        ({"tool": "Search"}, "tool", "SearchArticles"),
        ({"source": "email"}, "source", "http"),
        ({"routedBy": "magic"}, "routedBy", "fallback"),
        ({"createdAfter": "yesterday"}, "createdAfter", "datetime"),
        ({"createdAfter": "2025-01-01T00:00:00"}, "createdAfter", "timezone"),
        ({"createdAfter": "2025-02-01T00:00:00Z", "createdBefore": "2025-01-01T00:00:00Z"}, "", "createdAfter must"),
        ({"limit": 101}, "limit", "100"),
        ({"limit": 0}, "limit", "1"),
        ({"q": "   "}, "q", "word"),
        ({"cursor": "not-a-cursor"}, "cursor", "nextCursor"),
        ({"staus": "failed"}, "staus", "Extra"),
    ],
)
def test_bad_filter_values_are_a_422_naming_the_filter(
    idle_client: httpx.Client, params: dict[str, Any], field: str, words: str
) -> None:
    response = idle_client.get("/v1/jobs", params=params)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert field in error["message"] and words in error["message"], error


def test_the_list_needs_a_key(idle_api: ApiServer, key: IssuedKey) -> None:
    with idle_api.client() as anonymous:
        assert anonymous.get("/v1/jobs").status_code == 401


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2026-02-30T00:00:00Z"])
def test_dates_at_the_edges_are_never_a_server_error(idle_client: httpx.Client, when: str) -> None:
    response = idle_client.get("/v1/jobs", params={"createdAfter": when})
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert "createdAfter" in response.json()["error"]["message"]
