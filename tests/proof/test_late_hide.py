"""The late hide: an article hidden (or unpublished) after its page was cached is gone from every
page of every job at once - the job document, the cached pages, a combined result's answer
sources, and a brand-new job of another API key that shares the cached pages (SPEC §4).

Pages are cached by their filters, shared across jobs and keys, for a day; nothing expires here:
the hide is checked on every read."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.support import query, wait_for_job
from tests.proof.conftest import SEARCH_RUBY, DrillStack, TaggedLLM
from tests.support.llm_server import Text, ToolCall

pytestmark = pytest.mark.slow

PAGE_SIZE = 5
COMBINED_RUBY = ToolCall("SearchAndAskArticles", {"text": "ruby", "language": "en", "question": "What was released? [drill:hide-combined]"})


def _run(c: httpx.Client, question: str) -> dict[str, Any]:
    response = c.post("/v1/questions", json={"question": question, "pageSize": PAGE_SIZE})
    assert response.status_code == 202, response.text
    doc = wait_for_job(c, response.json()["id"], timeout=60)
    assert doc["status"] == "succeeded", doc
    return doc


def _page(c: httpx.Client, job_id: str, n: int) -> dict[str, Any]:
    response = c.get(f"/v1/jobs/{job_id}/pages/{n}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _ids(result: dict[str, Any]) -> set[str]:
    return {item["id"] for item in result["articles"]["items"]} | {s["articleId"] for s in result["sources"]}


def test_hidden_after_its_page_was_cached_is_gone_everywhere_at_once(drill_stack: DrillStack,
                                                                     tagged: TaggedLLM) -> None:
    stack = drill_stack
    tagged.on("hide-search", lambda n, body: SEARCH_RUBY)
    tagged.on("hide-new", lambda n, body: SEARCH_RUBY)
    tagged.on("hide-combined", lambda n, body: COMBINED_RUBY if "tools" in body
              else Text("Ruby versions were released [1] [2]."))
    with stack.client("hide-a") as a, stack.client("hide-b") as b:
        search = _run(a, "find ruby news [drill:hide-search]")
        combined = _run(a, "ruby news and what was released [drill:hide-combined]")
        total_pages = search["result"]["articles"]["totalPages"]
        assert total_pages >= 3, search["result"]["articles"]
        # Every page served once (and so cached), then served again from the cache.
        before = {n: _page(a, search["id"], n) for n in range(1, total_pages + 1)}
        for n in before:
            again = _page(a, search["id"], n)
            assert again["source"] == "cache" and again["result"]["articles"] == before[n]["result"]["articles"]
        sources = combined["result"]["sources"]
        assert sources, combined["result"]
        assert _page(a, combined["id"], 1)["source"] == "cache"

        # Hidden: one article of page 1, one of the cached page 2, and one answer source.
        victims = {before[1]["result"]["articles"]["items"][0]["id"], before[2]["result"]["articles"]["items"][1]["id"],
                   sources[0]["articleId"]}
        query(stack.settings, "UPDATE localizations SET hidden = true WHERE id = ANY($1)", sorted(victims))
        try:
            # At once: no wait, no TTL, no cache flush.
            doc = a.get(f"/v1/jobs/{search['id']}").json()
            assert not victims & _ids(doc["result"]), doc["result"]
            assert len(doc["result"]["articles"]["items"]) == PAGE_SIZE  # refilled, not just shortened
            listed = {item["id"] for page in before.values() for item in page["result"]["articles"]["items"]}
            remaining = search["result"]["articles"]["totalItems"] - len(victims & listed)
            assert doc["result"]["articles"]["totalItems"] == remaining
            pages_now = doc["result"]["articles"]["totalPages"]
            after = {n: _page(a, search["id"], n) for n in range(1, pages_now + 1)}
            served = [item["id"] for page in after.values() for item in page["result"]["articles"]["items"]]
            assert not victims & set(served), served
            assert len(served) == len(set(served)) == remaining  # refilled pages neither repeat nor skip

            kept = [s for s in sources if s["articleId"] not in victims]
            combined_doc = a.get(f"/v1/jobs/{combined['id']}").json()
            assert not victims & _ids(combined_doc["result"]), combined_doc["result"]
            assert combined_doc["result"]["sources"] == kept
            combined_page = _page(a, combined["id"], 2)["result"]
            assert not victims & _ids(combined_page) and combined_page["sources"] == kept

            # Another key's brand-new job with the same filters shares the page cache.
            fresh = _run(b, "find ruby news [drill:hide-new]")
            assert not victims & _ids(fresh["result"])
            for n in range(1, fresh["result"]["articles"]["totalPages"] + 1):
                assert not victims & _ids(_page(b, fresh["id"], n)["result"])
        finally:
            query(stack.settings, "UPDATE localizations SET hidden = false WHERE id = ANY($1)", sorted(victims))
