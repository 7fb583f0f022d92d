"""Languages said in passing (docs/router.md, rounds 19 and 20): indifference to the language read by its
grammar (a word for language and one of indifference in a sentence), a language adjective that
qualifies the topic's noun (it stays in the topic; the articles keep the question's language), and
the words of a question about what "we" published or what is "on the site" (no topic); language codes
typed in capitals; a request to change a setting of the app (no request to read). Phrasings
written for these tests, in no eval case. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from router.fallback import fallback_decision
from router.tools import SEARCH
from tests.router._gate_rules import rules_verdict

TODAY = date(2026, 6, 17)


@pytest.mark.parametrize("question", [
    "статьи про Bundler, на каком языке — всё равно",
    "Beiträge zu Bundler, in welcher Sprache ist mir wurscht",
    "whatever language they are in, list the OCSP posts",
    "OCSP posts please - language: don't care",
    "найди про OCSP, язык не принципиально",
])
def test_indifference_to_the_language_lifts_the_filter(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH and "language" not in decision.arguments, decision.arguments


@pytest.mark.parametrize(("question", "language"), [
    ("Beiträge über Bundler in der gleichen Sprache wie letztes Mal", "de"),  # "gleich" is no indifference here
    ("which language should I learn first? the posts about Bundler in German", "de"),
])
def test_a_language_word_beside_no_indifference_keeps_the_filter(question: str, language: str) -> None:
    assert fallback_decision(question, TODAY).arguments.get("language") == language


@pytest.mark.parametrize(("question", "language", "kept"), [
    ("posts about the German mirror of rubygems", "en", "german"),
    ("статьи про английскую документацию Bundler", "ru", "английскую"),
    ("Beiträge über die englische Übersetzung der Ruby-Doku", "de", "englische"),
    ("find German posts about the Russian translation of the FAQ", "de", "russian"),
])
def test_a_language_adjective_on_the_topics_noun_is_topic(question: str, language: str, kept: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.arguments.get("language") == language, decision.arguments
    assert kept in (decision.arguments.get("text") or "").casefold(), decision.arguments


@pytest.mark.parametrize(("question", "language"), [
    ("find posts about Bundler in German", "de"),
    ("статьи про Bundler на английском", "en"),
    ("Artikel über Bundler auf Russisch", "ru"),
])
def test_a_language_phrase_after_the_topic_still_names_the_articles(question: str, language: str) -> None:
    assert fallback_decision(question, TODAY).arguments.get("language") == language


@pytest.mark.parametrize(("question", "text"), [
    ("what did we post in German last month?", None),
    ("was haben wir im Mai auf Englisch veröffentlicht?", None),
    ("что мы опубликовали на прошлой неделе?", None),
    ("anything new on the blog this week?", None),
    ("zeig die Beiträge im Blog zu OCSP", "OCSP"),
    ("покажи статьи на сайте про Bundler", "Bundler"),
])
def test_the_asker_and_the_site_are_no_topic(question: str, text: str | None) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.arguments.get("text") == text, decision.arguments


@pytest.mark.parametrize(("question", "language"), [
    ("RU only: posts about Bundler", "ru"),
    ("Beiträge zu Bundler, nur EN", "en"),
    ("статьи про Bundler на DE и EN", "de+en"),
])
def test_a_language_code_in_capitals_names_the_articles(question: str, language: str) -> None:
    got = fallback_decision(question, TODAY).arguments.get("language")
    assert (sorted(got) if isinstance(got, list) else [got]) == sorted(language.split("+")), got


@pytest.mark.parametrize(("question", "language"), [
    ("find posts on ruby-lang.org/de about Bundler", "en"),  # a path, not a language
    ("статьи про Bundler, хоть бы на русском языке", "ru"),  # "хоть бы": at least, not "whichever"
])
def test_a_code_in_lower_case_or_a_wish_for_one_language_is_no_indifference(question: str, language: str) -> None:
    assert fallback_decision(question, TODAY).arguments.get("language") == language


@pytest.mark.parametrize("question", [
    "статьи про Bundler, хоть на каком языке", "статьи про Bundler, язык — по барабану", "Bundler-Beiträge, jede Sprache",
])
def test_more_ways_to_say_the_language_does_not_matter(question: str) -> None:
    assert "language" not in fallback_decision(question, TODAY).arguments


@pytest.mark.parametrize("question", [
    "поменяй тему сайта на светлую", "Schalte die Benutzeroberfläche auf Russisch", "switch the interface to Russian please",
    "change the display language to German",
])
async def test_changing_a_setting_is_no_request(question: str) -> None:
    verdict = await rules_verdict(question)
    assert not verdict.passed, verdict


@pytest.mark.parametrize("question", ["how do I change the theme of the RDoc output?", "switch to German posts about Bundler"])
async def test_a_question_about_a_setting_or_a_switch_of_articles_is_a_request(question: str) -> None:
    assert (await rules_verdict(question)).passed


async def test_a_selection_on_a_topic_is_a_request() -> None:
    assert (await rules_verdict("сделай подборку на тему YJIT")).passed
    assert not (await rules_verdict("включи тёмную тему")).passed
