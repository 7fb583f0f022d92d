"""The seed's language rule in the deterministic fallback (issue 15, item 3): degraded mode,
real Postgres search over the real corpus, no LLM."""

from __future__ import annotations

import asyncpg
import pytest

from infra.results import Language
from infra.settings import Settings
from router.fallback import fallback_decision
from router.material_language import language_cues, material_language
from router.service import RouteRequest, route_question
from tests.router.conftest import TODAY, make_deps
from tests.support.llm_server import ScriptedLLM

pytestmark = pytest.mark.usefixtures("shared_corpus")


@pytest.mark.parametrize(
    ("question", "client_language", "expected"),
    [
        ("Найди статьи о Ruby", None, "ru"),
        ("Finde Artikel über Ruby", None, "de"),
        ("Find articles about Ruby", None, "en"),
        ("Найди немецкие статьи о Ruby", None, "de"),
        ("Finde Artikel über Ruby auf Englisch", None, "en"),
        ("Find Russian articles about Ruby", None, "ru"),
        ("Find articles about Ruby in all languages", None, None),
        ("Найди статьи о Ruby на всех языках", None, None),
        ("Finde Artikel über Ruby in allen Sprachen", None, None),
        ("Find articles about Ruby", "de", "de"),
        ("Найди статьи о Ruby", "en", "en"),
        ("Find German articles about Ruby", "ru", "de"),  # named beats the client's default
        ("Finde deutsche Artikel über Ruby", "en", "de"),  # also when it is the question's own language
        ("Найди статьи о Ruby, вышедшие на русском", "de", "ru"),
        ("Find articles about Ruby in any language", "ru", None),
    ],
)
async def test_fallback_search_follows_the_seed_rule(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, question: str, client_language: Language | None,
    expected: str | None,
) -> None:
    llm.fail_every_call()
    req = RouteRequest(question=question, today=TODAY, client_language=client_language)
    result = await route_question(make_deps(settings, db, None, llm=False), req)
    assert result.routed_by == "fallback" and result.tool == "SearchArticles"
    assert result.search is not None and result.search.language == expected
    assert result.articles is not None and result.articles.items
    languages = {item.language for item in result.articles.items}
    assert languages == {expected} if expected else len(languages) >= 2
    assert llm.chat_requests == []


@pytest.mark.parametrize(
    ("question", "language", "answer"),
    [
        ("Что пишут в немецких статьях о Bundler? Ответь на русском", "de", "ru"),
        ("Summarize the Russian articles about Ruby 2.7, answer in English", "ru", "en"),
        ("Was ist YJIT?", "de", "de"),
        ("Как работает YJIT?", "ru", "ru"),
        ("How does YJIT work, across all languages?", None, "en"),
        ("Erkläre YJIT, antworte auf Englisch", "de", "en"),  # the answer's language is not the articles'
    ],
)
def test_fallback_answer_and_material_language_are_separate(question: str, language: str | None, answer: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool in ("AskArticles", "SearchAndAskArticles")
    assert decision.arguments.get("language") == language and decision.arguments["answerLanguage"] == answer


def test_a_model_language_is_kept_only_where_the_question_names_none() -> None:
    plain = language_cues("Find articles about Ruby")
    assert material_language(plain, written_in="en", proposed="de") == "de"  # it may have read what rules miss
    assert material_language(plain, written_in="en", proposed="en", client="ru") == "ru"  # the default, replaced
    assert material_language(plain, written_in="en") == "en"
    named = language_cues("Find German articles about Ruby")
    assert material_language(named, written_in="en", proposed="ru") == "de"
    everything = language_cues("Find articles about Ruby in all three languages")
    assert material_language(everything, written_in="en", proposed="en", client="de") is None
    two = language_cues("Find German and English articles about Ruby")
    assert two.named is None  # two languages cannot be one filter: the default applies


@pytest.mark.parametrize(("question", "articles", "answer"), [
    ("Was ist ein CAA-Eintrag? In English please", "de", "en"),
    ("Wie funktioniert OCSP Stapling? Answer in English", "de", "en"),
    ("What is YJIT? Antworte bitte auf Deutsch", "en", "de"),
])
def test_the_question_language_is_read_without_its_answer_language_request(question: str, articles: str,
                                                                            answer: str) -> None:
    # the words that ask for the answer's language are no evidence of the language the question is in
    arguments = fallback_decision(question, TODAY).arguments
    assert (arguments["language"], arguments["answerLanguage"]) == (articles, answer)
