"""The seed's language rule end to end (issue 15, item 3): the real API, workers, Postgres,
Redis and the scripted LLM. The articles' language defaults to the question's; a language the
question names overrides it (and the model's); "in all languages" means no filter; a client's
`language` at submission (a UI locale) replaces the question's default."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from infra.settings import Settings
from tests.api.support import query, submit_and_succeed
from tests.support.llm_server import ScriptedLLM, Text, ToolCall, answer_from_passage

pytestmark = pytest.mark.usefixtures("celery_worker", "shared_corpus")


@pytest.mark.parametrize(
    ("question", "model_arguments", "client_language", "expected"),
    [
        # default: the question's language, whether the model omits it or sends it
        ("Найди статьи о Ruby", {"text": "Ruby"}, None, "ru"),
        ("Finde Artikel über Ruby", {"text": "Ruby", "language": "de"}, None, "de"),
        # a named language wins over the default and over a model that sent the default
        ("Найди немецкие статьи о Ruby", {"text": "Ruby", "language": "ru"}, None, "de"),
        ("Zeige Artikel über Ruby auf Englisch", {"text": "Ruby"}, None, "en"),
        # "in all languages": no filter, even when the model sent one
        ("Find articles about Ruby in all languages", {"text": "Ruby", "language": "en"}, None, None),
        ("Статьи про Ruby на всех языках", {"text": "Ruby"}, None, None),
        # the client's language replaces the question's default, but not a named language
        ("Find articles about Ruby", {"text": "Ruby"}, "de", "de"),
        ("Show me the articles about Ruby", {"text": "Ruby", "language": "en"}, "ru", "ru"),
        ("Find German articles about Ruby", {"text": "Ruby"}, "ru", "de"),
    ],
)
def test_search_language_follows_the_seed_rule(
    client: httpx.Client, llm: ScriptedLLM, settings: Settings, question: str, model_arguments: dict[str, Any],
    client_language: str | None, expected: str | None,
) -> None:
    llm.script(ToolCall("SearchArticles", model_arguments))
    body: dict[str, Any] = {"question": question}
    if client_language is not None:
        body["language"] = client_language
    doc = submit_and_succeed(client, **body)
    result = doc["result"]
    assert result["routedBy"] == "llm" and result["search"]["language"] == expected
    languages = {item["language"] for item in result["articles"]["items"]}
    if expected:
        assert languages == {expected}
    else:
        assert len(languages) >= 2, languages
    assert doc["language"] == client_language
    [row] = query(settings, "SELECT language FROM jobs WHERE id = $1", doc["id"])
    assert row["language"] == client_language


def _answer_calls(body: dict[str, Any]) -> Text | None:
    """An answer for the RAG call; a router call is not answered here (it was scripted)."""
    return answer_from_passage(body) if ">>>\n" in str(body["messages"][-1]["content"]) else None


def test_ask_language_defaults_to_the_question_and_the_client_replaces_it(
    client: httpx.Client, llm: ScriptedLLM, settings: Settings
) -> None:
    llm.on_chat(_answer_calls)  # the answer call, when the corpus is loaded (else no passage, no call)
    for question, client_language, expected in (("Was ist YJIT?", None, "de"), ("Was ist YJIT genau?", "en", "en")):
        llm.script(ToolCall("AskArticles", {"question": question}))
        body: dict[str, Any] = {"question": question}
        if client_language:
            body["language"] = client_language
        doc = submit_and_succeed(client, **body)
        assert doc["result"]["answerLanguage"] == "de"  # the answer stays in the question's language
        rows = query(
            settings,
            "SELECT arguments, normalized_arguments FROM audit_events WHERE job_id = $1 AND kind = 'tool_execution' ORDER BY id",
            doc["id"],
        )
        # The router's row: the model's arguments, without a language (the RAG worker records the
        # run it was handed too, which carries one; the two may commit in either order).
        [row] = [r for r in rows if "language" not in r["arguments"]]
        assert row["normalized_arguments"]["language"] == expected


def test_language_must_be_one_of_ours(idle_client: httpx.Client) -> None:
    response = idle_client.post("/v1/questions", json={"question": "Ruby", "language": "fr"})
    assert response.status_code == 422, response.text
    assert "language" in response.text
    accepted = idle_client.post("/v1/questions", json={"question": "Ruby", "language": "de"})
    assert accepted.status_code == 202 and accepted.json()["language"] == "de"
