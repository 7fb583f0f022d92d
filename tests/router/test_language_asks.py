"""Asks across languages (docs/router.md, round 18): abbreviated language names, a language that does not
matter said in more ways, the languages a thing exists in, a translation's existence, a word to translate
or a letter to write (tasks), a message that only speaks of its writer (small talk), a reading verb typed
one letter off. Phrasings written for these tests, in no eval case. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from router.fallback import fallback_decision
from router.tools import ASK, SEARCH, SEARCH_AND_ASK
from router.write_intent import write_intent
from tests.router._gate_rules import rules_verdict

TODAY = date(2026, 6, 17)


@pytest.mark.parametrize(("question", "language", "answer"), [
    ("статьи про YJIT на англ", "en", None),
    ("что такое YJIT? по англ статьям", "en", "ru"),
    ("Что пишут про YJIT? ответ на англ", "ru", "en"),
])
def test_an_abbreviated_language_name_is_read(question: str, language: str, answer: str | None) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.arguments.get("language") == language, decision.arguments
    if answer is not None:
        assert decision.arguments.get("answerLanguage") == answer, decision.arguments


@pytest.mark.parametrize("question", [
    "posts on YJIT, doesn't matter which language", "статьи про YJIT, язык любой", "статьи про YJIT на любом языке",
])
def test_a_language_that_does_not_matter_said_another_way(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH and "language" not in decision.arguments, decision.arguments


@pytest.mark.parametrize("question", [
    "In which languages is there a post about YJIT?", "на каких языках писали про YJIT?",
    "In welchen Sprachen gibt es den Beitrag zu YJIT?",
])
def test_the_languages_a_thing_exists_in_is_a_search_over_every_language(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH and "language" not in decision.arguments, (decision.tool, decision.arguments)


@pytest.mark.parametrize(("question", "language"), [
    ("Is there a German translation of the YJIT post?", "de"), ("Gibt es eine russische Fassung des Bundler-Beitrags?", "ru"),
    ("Есть ли английский перевод статьи про Bundler?", "en"), ("Wo steht was zu Certbot?", "de"),
    ("where can I read about OCSP stapling?", "en"), ("где почитать про OCSP?", "ru"),
])
def test_whether_or_where_a_thing_is_written_asks_for_the_list(question: str, language: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert (decision.tool, decision.arguments.get("language")) == (SEARCH, language), (decision.tool, decision.arguments)


@pytest.mark.parametrize("question", [
    # a word to translate, a letter to write: tasks
    "how do you say 'renewal' in German?", "Was heißt „Zertifikat“ auf Englisch?", "как по-английски будет «продление»?",
    "write my boss an email in German about the outage", "Schreib eine Nachricht an den Kunden auf Englisch",
    "напиши письмо клиенту на английском про продление",
    # a message that only speaks of its writer
    "my team lead only writes in german and honestly it's exhausting", "ich arbeite seit kurzem im deutschen team",
])
async def test_a_word_to_translate_a_letter_to_write_or_a_word_about_oneself_is_refused(question: str) -> None:
    verdict = await rules_verdict(question)
    assert verdict.refused, question


@pytest.mark.parametrize("question", [
    "How is 'certificate transparency' translated in the German posts?", "I need the posts on OCSP stapling",
    "Write briefly what changed in Bundler 2.5", "Schreib kurz, was die Mailingliste zu YJIT sagt",
    "We run Certbot 2.1 on our servers",
])
async def test_a_question_about_the_articles_words_or_a_statement_naming_a_thing_is_no_refusal(question: str) -> None:
    verdict = await rules_verdict(question)
    assert not verdict.refused, (question, verdict.reason)


@pytest.mark.parametrize("question", ["покжи статьи про OCSP", "pls shwo the posts about YJIT", "zeig die Beiträge",
                                      "смотри английские посты про OCSP"])
def test_a_reading_verb_typed_one_letter_off_or_looked_at_is_no_write(question: str) -> None:
    assert write_intent(question) is None


@pytest.mark.parametrize(("question", "tool", "sort"), [
    ("самые первые немецкие новости покажи", SEARCH, "oldest"),
    ("какие релизы YJIT были в 2024? списком и пару слов о каждом", SEARCH_AND_ASK, None),
])
def test_an_order_with_an_adjective_between_and_a_few_words_on_each(question: str, tool: str, sort: str | None) -> None:
    decision = fallback_decision(question, TODAY)
    assert (decision.tool, decision.arguments.get("sort")) == (tool, sort), decision.arguments


def test_ask_is_still_ask() -> None:
    assert fallback_decision("How does OCSP stapling work?", TODAY).tool == ASK
