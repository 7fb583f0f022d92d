"""What the site's team put out (docs/router.md, round 21): the verbs of putting something on the site
("uploaded", "went up", "выложили", "gepostet", "ging … online") and what "we" wrote or covered ask for
the articles' list, never a topic; a digest's content ("the main topics", "главные темы", "Kernaussagen")
asks for an answer over them; a German request whose verb ends its main clause before a subordinate one.
Phrasings written for these tests, in no eval case. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from router.fallback import fallback_decision
from router.tools import ASK, SEARCH, SEARCH_AND_ASK

TODAY = date(2026, 6, 17)


@pytest.mark.parametrize(("question", "date_from"), [
    ("what went live on the blog last week?", "2026-06-08"),
    ("did we put any posts up in May?", "2026-05-01"),
    ("что мы выкладывали в мае?", "2026-05-01"),
    ("что запостили на прошлой неделе", "2026-06-08"),
    ("Was haben wir im Mai hochgeladen?", "2026-05-01"),
    ("was ist letzte woche online gegangen", "2026-06-08"),
    ("Welche Beiträge haben wir im Mai gepostet?", "2026-05-01"),
])
def test_what_was_put_on_the_site_in_a_period_is_its_list_with_no_topic(question: str, date_from: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH, (decision.tool, decision.reason)
    assert "text" not in decision.arguments and decision.arguments["dateFrom"] == date_from, decision.arguments


@pytest.mark.parametrize(("question", "topic"), [
    ("have we ever written anything on the Bundler 2 upgrade?", "bundler"),
    ("what did we write about WEBrick in 2019?", "webrick"),
    ("мы вообще писали что-нибудь про YJIT?", "yjit"),
    ("что мы писали про RubyGems.org в 2024?", "rubygems.org"),
    ("Haben wir schon mal was über den Umzug von bugs.ruby-lang.org auf Redmine berichtet?", "umzug"),
    ("welche posts zu Ruby 3.3 haben wir 2024 rausgebracht", "ruby 3.3"),
])
def test_what_we_wrote_about_a_thing_is_its_list(question: str, topic: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH, (decision.tool, decision.reason)
    text = (decision.arguments.get("text") or "").casefold()
    assert text.startswith(topic), decision.arguments
    assert not {"wrote", "written", "писали", "berichtet", "rausgebracht"} & set(text.split()), decision.arguments


@pytest.mark.parametrize("question", [
    "how did we explain the move to Git?",  # how, not what: an answer
    "как мы объясняли переход на Git?",
    "Wie haben wir den Wechsel zu Git begründet?",
])
def test_how_we_explained_a_thing_is_still_an_answer(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == ASK


@pytest.mark.parametrize("question", [
    "what were the key themes on the blog in spring?",
    "какие были основные темы в прошлом квартале?",
    "Was waren die Hauptthemen im letzten Quartal?",
    "Worüber haben wir im Mai geschrieben? Bitte mit den Kernaussagen",
])
def test_the_main_topics_of_a_period_are_an_answer_over_its_articles(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH_AND_ASK, (decision.tool, decision.reason)
    assert "text" not in decision.arguments and "dateFrom" in decision.arguments, decision.arguments


def test_a_german_request_verb_before_its_subordinate_clause_asks_for_the_list() -> None:
    decision = fallback_decision("Kannst du mir auflisten, was wir zu Ruby 3.3 veröffentlicht haben?", TODAY)
    assert decision.tool == SEARCH and decision.arguments["text"] == "Ruby 3.3", decision.arguments


@pytest.mark.parametrize(("question", "tool"), [
    ("just explain the OCSP shutdown", ASK),
    ("просто объясни, что такое YJIT", ASK),
    ("simply show me the Bundler posts", SEARCH),
])
def test_an_adverb_that_softens_the_imperative_keeps_its_form(question: str, tool: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == tool, (decision.tool, decision.reason, decision.arguments)
    assert "just" not in str(decision.arguments.get("text")), decision.arguments


@pytest.mark.parametrize(("question", "tool", "topic"), [
    ("collect everything on REXML and tell me which version fixes it", SEARCH_AND_ASK, "REXML"),
    ("собери все статьи про Bundler", SEARCH, "Bundler"),
    ("sammle alles zu RubyGems", SEARCH, "RubyGems"),
    ("Finde die ersten Beiträge über Bundler und erzähl mir, wie es anfing", SEARCH_AND_ASK, "Bundler"),
])
def test_gathering_the_articles_is_a_search_and_telling_about_them_an_answer(question: str, tool: str,
                                                                             topic: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == tool and _names(decision.arguments.get("text"), topic), (decision.reason, decision.arguments)


@pytest.mark.parametrize(("question", "language", "topic"), [
    ("do we have the Bundler 2 release post in German?", "de", "Bundler 2"),
    ("Haben wir was zu YJIT?", "de", "YJIT"),
    ("Was gibt es auf Russisch zu YJIT?", "ru", "YJIT"),
    ("what's there on RubyConf Taiwan?", "en", "RubyConf Taiwan"),
])
def test_what_the_collection_holds_on_a_thing_is_its_list(question: str, language: str, topic: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH, (decision.reason, decision.arguments)
    assert decision.arguments.get("language") == language and _names(decision.arguments.get("text"), topic), \
        decision.arguments


@pytest.mark.parametrize(("question", "topic", "answer_language"), [
    ("статьи про OCSP за прошлый год, в двух словах", "OCSP", "ru"),
    ("englische Beiträge zu Bundler, kurz zusammengefasst", "Bundler", "de"),
    ("German posts about YJIT, answer in English", "YJIT", "en"),
    ("RubyGems outages from last year - list them and say what caused them", "RubyGems", "en"),
    ("посты про Bundler 2 — собери их и объясни суть, без воды", "Bundler 2", "ru"),
])
def test_a_list_asked_in_brief_or_with_an_answer_is_an_answer_over_it(question: str, topic: str,
                                                                       answer_language: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH_AND_ASK, (decision.reason, decision.arguments)
    assert _names(decision.arguments.get("text"), topic), decision.arguments
    assert decision.arguments["answerLanguage"] == answer_language, decision.arguments
    assert not {"answer", "say", "them"} & set(str(decision.arguments.get("text")).casefold().split()), decision.arguments


def _names(text: str | None, topic: str) -> bool:
    """The eval's rule for free text: each of the topic's words starts a word of the value."""
    words = (text or "").casefold().split()
    return all(any(w.startswith(t) for w in words) for t in topic.casefold().split())
