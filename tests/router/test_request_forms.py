"""Forms the deterministic route reads (docs/router.md, rounds 15–17): a question whose verb is one of
publishing asks for the articles published; a reading verb whose object is a question about what the
articles say asks for that answer; a sentence or clause about the asker after the request is context,
no topic. Phrasings written for these tests, in no eval case. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from router.fallback import fallback_decision
from router.tools import ASK, SEARCH, SEARCH_AND_ASK

TODAY = date(2026, 6, 17)


@pytest.mark.parametrize("question", [
    # a question whose verb is one of publishing: which of the articles came out
    "Welche Bundler-Meldungen wurden im Mai veröffentlicht?",
    "Welche OpenSSL-Lücken wurden letztes Jahr gemeldet?",
    "Was ist im März zu Certbot rausgekommen?",
    "Kam letzte Woche etwas zu YJIT heraus?",
    "What did Let's Encrypt put out on ECDSA roots this year?",
    "What came out about RubyGems in April?",
    "Что вышло про Bundler в прошлом месяце?",
    "Какие уязвимости в REXML публиковали в 2024 году?",
    # whether new items of a kind appeared in a period
    "Gab es im Frühjahr neue Certbot-Versionen?",
    "Were there any new Rails releases last quarter?",
    "Были ли новые релизы Ruby в январе?",
    # which items of a kind there were
    "Welche Sicherheitshinweise gab es 2023?",
    # everything on a thing
    "Alles über OCSP seit 2022?",
    "Всё про YJIT за прошлый год",
])
def test_a_question_about_what_was_published_asks_for_the_list(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH, (question, decision.tool, decision.reason)


@pytest.mark.parametrize(("question", "tool"), [
    # how or why something was published, or what changed: a question about the content
    ("Why was the OCSP shutdown announced so early?", ASK),
    ("Wie wurde die Lücke in REXML gemeldet?", ASK),
    ("Что нового в Bundler 2.5?", ASK),
    ("Was hat sich 2024 bei Certbot geändert?", SEARCH_AND_ASK),
])
def test_a_question_about_how_or_what_changed_is_still_answered(question: str, tool: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == tool, (question, decision.tool, decision.reason)


@pytest.mark.parametrize(("question", "language"), [
    ("Summarize what the Russian posts say about OCSP stapling", "ru"),
    ("Перескажи, о чём пишут английские статьи про Bundler", "en"),
    ("Fass kurz zusammen, was die englischen Beiträge über YJIT schreiben", "en"),
])
def test_retelling_what_the_articles_say_asks_for_the_answer(question: str, language: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == ASK, (question, decision.tool, decision.reason)
    assert decision.arguments["language"] == language


def test_retelling_what_the_articles_of_a_period_say_searches_the_period_first() -> None:
    decision = fallback_decision("Summarize what the posts from May say about OCSP", TODAY)
    assert decision.tool == SEARCH_AND_ASK


@pytest.mark.parametrize(("question", "text"), [
    # a sentence about the asker after the request: context, no topic
    ("What came out in May? I was on leave the whole month.", None),
    ("Что публиковали на позапрошлой неделе? Я был на больничном.", None),
    ("Was ist im Mai erschienen? Ich war die ganze Zeit krank.", None),
    ("Find the posts on OCSP stapling. We are preparing a talk for our meetup.", "OCSP stapling"),
    ("Найди статьи про Bundler 2.5, чтобы я мог обновить наш проект.", "Bundler 2.5"),
    ("Zeig mir Beiträge zu YJIT, damit ich es dem Team erklären kann.", "YJIT"),
    ("Show me the posts from last week, so I can catch up.", None),
])
def test_a_sentence_about_the_asker_after_the_request_is_no_topic(question: str, text: str | None) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH, (question, decision.tool, decision.reason)
    assert decision.arguments.get("text") == text, (question, decision.arguments)


@pytest.mark.parametrize("question", [
    "Anything new? We run Bundler 2.5 in production.", "Was gibt es Neues? Wir nutzen YJIT seit Mai.",
    "Покажи свежие статьи. Мы обновляемся на Rails 8.",
])
def test_a_sentence_about_the_asker_that_names_a_thing_keeps_it_as_the_topic(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool is not None and decision.arguments.get("text"), (question, decision.arguments)


@pytest.mark.parametrize("question", ["the first ever posts on YJIT", "самые первые статьи про YJIT",
                                      "allererste Beiträge zu YJIT"])
def test_the_first_ever_posts_are_the_oldest(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.arguments.get("sort") == "oldest" and decision.arguments.get("text") == "YJIT", decision.arguments


@pytest.mark.parametrize(("question", "tool"), [
    ("so um what exactly is OCSP stapling", ASK), ("ну э что такое CAA", ASK), ("äh was ist eigentlich ACME", ASK),
    ("so what came out last month about Bundler", SEARCH),
])
def test_a_dictated_messages_fillers_do_not_hide_its_form(question: str, tool: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == tool, (question, decision.tool, decision.reason)


@pytest.mark.parametrize("question", ["compare the Bundler 2.4 and 2.5 posts", "сравни YJIT и MJIT",
                                      "Vergleiche Certbot und acme.sh"])
def test_a_request_to_compare_searches_the_things_compared_first(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH_AND_ASK and decision.arguments.get("text"), (question, decision.arguments)


@pytest.mark.parametrize("question", ["ответь по-немецки, что такое OCSP", "answer in Russian: what is ACME?"])
def test_a_request_to_answer_is_a_question_to_answer(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == ASK, (question, decision.tool, decision.reason)


@pytest.mark.parametrize(("question", "tool"), [
    # a question word anywhere in a sentence that asks
    ("YJIT это что вообще?", ASK), ("Bundler 2.5 — how is it different?", ASK),
    # "что-то было" later in the message: whether something came out
    ("про OCSP stapling — в прошлом году что-то было?", SEARCH),
    ("anything new from RubyGems lately?", SEARCH),
    # which versions a period brought is asked; which reports came out is a list
    ("Which Bundler versions came out in 2023?", SEARCH_AND_ASK), ("Welche OpenSSL-Meldungen kamen 2023 raus?", SEARCH),
    # a second question after a listing one, in a sentence of its own
    ("Были уязвимости в REXML в 2024 году? Что там было?", SEARCH_AND_ASK),
])
def test_a_question_word_in_a_question_and_which_versions_a_period_brought(question: str, tool: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == tool, (question, decision.tool, decision.reason)


def test_telling_in_a_language_names_the_answers_language() -> None:
    decision = fallback_decision("Erzähl mir auf Russisch, was es Neues zu YJIT gibt", TODAY)
    assert (decision.arguments.get("language"), decision.arguments.get("answerLanguage")) == ("de", "ru")
