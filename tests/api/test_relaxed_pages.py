"""A relaxed search through the real API and workers: the result and every page say how the text
was relaxed, and pages 2..N come without the LLM, the same page N every time."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.api.support import wait_for_job
from tests.api.test_lifecycle import _submit
from tests.retrieval.test_search import corpus, full_text
from tests.support.llm_server import ScriptedLLM, ToolCall

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")


def test_a_relaxed_search_is_reported_and_its_pages_are_llm_free_and_stable(
    client: httpx.Client, llm: ScriptedLLM
) -> None:
    text = "REXML zqxwnotices"
    llm.script(ToolCall("SearchArticles", {"text": text, "language": "en"}))
    doc = wait_for_job(client, _submit(client, question="REXML notices in English", pageSize=5))
    assert doc["status"] == "succeeded", doc
    result = doc["result"]
    note = f"no article has all of '{text}'; showing those with 'REXML'"
    assert note in result["search"]["adjustments"] and result["articles"]["adjustments"] == [note]
    expected = {r.id for r in corpus() if r.language == "en"
                and re.search(r"(?<![\w/.])rexml(?![\w/])", full_text(r), re.I)}
    assert result["articles"]["totalItems"] == len(expected)

    llm.reset()
    llm.fail_every_call("pages must not call the LLM")
    seen = {item["id"] for item in result["articles"]["items"]}
    for n in range(2, result["articles"]["totalPages"] + 1):
        body = client.get(f"/v1/jobs/{doc['id']}/pages/{n}").json()
        assert body["result"]["articles"]["adjustments"] == [note]
        assert note in body["result"]["search"]["adjustments"]
        items = {item["id"] for item in body["result"]["articles"]["items"]}
        assert not items & seen
        seen |= items
        assert client.get(f"/v1/jobs/{doc['id']}/pages/{n}").json()["result"] == body["result"]
    assert seen == expected
    assert llm.chat_requests == []
