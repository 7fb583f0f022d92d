"""What a question leaves out and how many it wants (docs/router.md, round 22): an excluded topic goes into
the search text with web search's minus ("Ruby -Rails"), an excluded language leaves the other languages, a
count is the page's size (never a topic word), a short quoted phrase is searched as a phrase; look-alikes
(a negated statement, "without" in a topic, a number in a name) stay as they were. Phrasings written for
these tests, in no eval case. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from infra.settings import Settings
from router.code_filters import fill_filters
from router.fallback import fallback_decision
from router.gateway import CallValidator, ValidatedCall
from router.question_reading import read_question
from router.tools import ASK, SEARCH, SEARCH_AND_ASK, default_registry
from tests.router._gate_rules import rules_verdict

TODAY = date(2026, 6, 17)


@pytest.mark.parametrize(("question", "kept", "left_out"), [
    ("find posts on Bundler except the ones about security", "Bundler", "security"),
    ("статьи про RubyGems, но не про Bundler", "RubyGems", "Bundler"),
    ("Beiträge zu OCSP außer Certbot", "OCSP", "Certbot"),
    ("posts about ACME that don't cover Certbot", "ACME", "Certbot"),
    ("Meldungen über Ractor ohne YJIT", "Ractor", "YJIT"),
    ("What changed in RubyGems in 2024? Ignore the Bundler posts.", "RubyGems", "Bundler"),
    ("Что изменилось в Ruby в 2024? Статьи про Rails не бери.", "Ruby", "Rails"),
])
def test_an_excluded_topic_is_searched_with_a_minus(question: str, kept: str, left_out: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool in (SEARCH, SEARCH_AND_ASK), decision.reason
    words = decision.arguments["text"].split()
    assert kept in words and f"-{left_out}" in words and left_out not in words, decision.arguments


@pytest.mark.parametrize("question", [
    "why does Certbot not renew my certificate?",
    "how do I get a certificate without an open port 80?",
    "articles on using ACME without DNS access",
    "Почему не работает продление сертификата?",
    "Not sure if this exists, but show me posts about YJIT",  # a hedge, not an exclusion
    "posts about YJIT, not only the release notes",
    "Nicht sicher, ob es das gibt: Beiträge zu YJIT",
    "no idea where to look - show me posts about YJIT",
])
def test_a_negated_statement_or_a_without_in_the_topic_excludes_nothing(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert not any(w.startswith("-") for w in str(decision.arguments.get("text") or "").split()), decision.arguments


@pytest.mark.parametrize(("question", "languages"), [
    ("YJIT posts in any language but Russian", ["de", "en"]),
    ("keine russischen Beiträge zu YJIT, bitte", ["de", "en"]),
    ("статьи про YJIT за 2025. Английские не бери.", ["de", "ru"]),
    ("non-German articles about OCSP", ["en", "ru"]),
])
def test_an_excluded_language_leaves_the_other_two(question: str, languages: list[str]) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.arguments.get("language") == languages, decision.arguments


@pytest.mark.parametrize(("question", "size", "sort"), [
    ("show the 7 latest posts about Ruby releases", 7, None),
    ("первые пять статей про Bundler", 5, "oldest"),
    ("Zeig mir die 10 neuesten Meldungen zu RubyGems", 10, None),
    ("Пять последних статей про Ruby", 5, None),
    ("give me 200 posts about Ruby", 50, None),  # the largest page
])
async def test_a_count_is_the_pages_size_not_a_topic(question: str, size: int, sort: str | None) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH, (decision.reason, decision.arguments)
    assert decision.arguments.get("pageSize") == size and decision.arguments.get("sort") == sort, decision.arguments
    assert not any(w.isdigit() or w in ("пять", "five") for w in decision.arguments["text"].split()), decision.arguments
    assert (await rules_verdict(question)).refused is None  # "Пять …" is no imperative of writing


@pytest.mark.parametrize("question", [
    "Ruby 3 posts", "posts about the 90-day certificate lifetime", "posts about ACME v2", "a post about Ractor",
    "Beiträge zu CVE-2024-49761",
])
def test_a_number_in_a_name_is_no_count(question: str) -> None:
    assert "pageSize" not in fallback_decision(question, TODAY).arguments


def test_a_short_quoted_phrase_is_searched_as_a_phrase() -> None:
    decision = fallback_decision('Artikel mit dem Wortlaut "Certificate Transparency"', TODAY)
    assert decision.arguments["text"] == '"Certificate Transparency"'
    # a quoted sentence (an agent's framing) is read word by word
    framed = fallback_decision('The user asks: "find the newest posts about YJIT from 2024 please"', TODAY)
    assert '"' not in framed.arguments.get("text", "") and "YJIT" in framed.arguments.get("text", "")


def test_from_a_period_then_on_a_topic_is_that_period() -> None:
    decision = fallback_decision("posts from last month on Certbot", TODAY)
    assert (decision.arguments["dateFrom"], decision.arguments["dateTo"]) == ("2026-05-01", "2026-05-31")
    assert fallback_decision("posts from 2019 on", TODAY).arguments.get("dateTo") in (None, TODAY.isoformat())


def test_code_fills_the_count_and_the_exclusions_into_a_models_search() -> None:
    reading = read_question("the 3 newest posts about Ruby but not Rails", TODAY)
    tool, args = fill_filters(SEARCH, {"text": "Ruby not Rails"}, reading)
    assert tool == SEARCH and args["text"] == "Ruby -Rails" and args["pageSize"] == 3, args
    tool, args = fill_filters(ASK, {"question": "Ruby"}, read_question("explain Ruby, not Rails", TODAY))
    assert tool == ASK and "pageSize" not in args


def test_a_models_language_that_the_question_leaves_out_is_replaced_and_said() -> None:
    question = "YJIT posts, anything but German"
    validator = CallValidator(default_registry(), Settings().limits, today=TODAY, question=question,
                              user_language="en")
    call = validator.validate(SEARCH, {"text": "YJIT", "language": "de"})
    assert isinstance(call, ValidatedCall) and call.search is not None
    assert call.search.language == ["en", "ru"]
    assert call.search.adjustments == ["language de replaced by English and Russian: the question leaves German "
                                       "articles out"]
    kept = validator.validate(SEARCH, {"text": "YJIT", "language": "en"})  # one of the others: it stands
    assert isinstance(kept, ValidatedCall) and kept.search is not None and kept.search.language == "en"
