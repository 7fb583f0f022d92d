"""Forms the deterministic route and the reader read (docs/router.md, round 13): a question with no
verb that names the articles, a question about a period with no topic, taking the articles, German
"aller-" superlatives, the cross-language cue, a clitic "'s", German "an" after a period, short German
questions by their function words, and a closing question about a period after a personal opening
(the request gate). Phrasings written for these tests, in no eval case. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from router.fallback import fallback_decision
from router.gate import check_request
from router.language import detect_language
from router.question_reading import keywords, read_question
from router.relevance import Coverage
from router.tools import ASK, SEARCH, SEARCH_AND_ASK, default_registry

TODAY = date(2026, 6, 17)


@pytest.mark.parametrize(("question", "tool"), [
    # no verb, the articles named or "any" asked for: their list
    ("latest posts on OCSP stapling?", SEARCH),
    ("Beiträge zu Certbot aus dem letzten Quartal?", SEARCH),
    ("свежие новости про RubyGems?", SEARCH),
    ("spring 2025 — any Bundler advisories?", SEARCH),
    # whether the collection has or will have something
    ("Будут ли статьи про Ruby 4.2 в следующем году?", SEARCH),
    ("Has anything on Certbot been published this year?", SEARCH),
    ("Will there be any posts about RubyConf 2027?", SEARCH),
    # a verb or a question word: a question about their content
    ("what do the posts on OCSP stapling say?", ASK),
    ("Что писали в новостях про RubyGems весной?", SEARCH_AND_ASK),
    ("is YJIT on by default?", ASK),
])
def test_a_verbless_or_existence_question_about_the_articles_asks_for_their_list(question: str, tool: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == tool, (question, decision.reason)


@pytest.mark.parametrize("question", ["was there anything new in May?", "что нового выходило в мае?",
                                      "Gab es im Mai irgendwas?"])
def test_a_question_about_a_period_with_no_topic_asks_for_its_list(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH and "text" not in decision.arguments, (question, decision)
    assert (decision.arguments["dateFrom"], decision.arguments["dateTo"]) == ("2026-05-01", "2026-05-31")


def test_a_question_about_a_period_with_a_topic_is_still_answered_over_it() -> None:
    decision = fallback_decision("what changed in Bundler in May?", TODAY)
    assert decision.tool == SEARCH_AND_ASK and decision.arguments["text"] == "changed Bundler"


@pytest.mark.parametrize(("question", "sort"), [
    ("Take the earliest posts on Bundler and explain what went wrong", "oldest"),
    ("Возьми самые старые статьи про REXML и расскажи, что там было", "oldest"),
    ("Nimm die allerältesten Beiträge über WEBrick und erklär sie mir", "oldest"),
])
def test_taking_the_articles_searches_them_first_and_is_no_topic(question: str, sort: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH_AND_ASK and decision.arguments["sort"] == sort, decision
    assert decision.arguments["text"] in ("Bundler", "REXML", "WEBrick"), decision


@pytest.mark.parametrize(("question", "sort"), [
    ("die allerersten Artikel über Ruby", "oldest"), ("die allerneuesten Beiträge zu Ruby", None),  # newest: the default
])
def test_a_german_aller_superlative_is_the_order_and_no_topic(question: str, sort: str | None) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.arguments.get("sort", None) in (sort, "newest" if sort is None else sort)
    assert decision.arguments["text"] == "Ruby", decision


@pytest.mark.parametrize("question", ["sprachübergreifend nach Beiträgen zu Sunlight suchen",
                                      "cross-language search for posts on Sunlight",
                                      "многоязычный поиск статей про Sunlight"])
def test_a_cross_language_cue_searches_every_language(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH and "language" not in decision.arguments, decision
    assert decision.arguments["text"] == "Sunlight"


def test_a_clitic_goes_with_the_word_it_was_split_from() -> None:
    assert keywords("Gibt's Beiträge zu Sunlight?") == "Sunlight"
    assert keywords("what's the word on Sunlight") == "word Sunlight"
    assert keywords("Let's Encrypt posts") == "Let s Encrypt"  # a name keeps it


def test_german_an_after_a_period_opens_what_follows_unless_von_or_ab_began_it() -> None:
    then = read_question("Was gab es vor drei Monaten an Certbot-Updates?", TODAY).dates
    assert then is not None and (then.date_from, then.date_to_options[0]) == (date(2026, 3, 1), date(2026, 3, 31))
    since = read_question("Beiträge von März 2025 an", TODAY).dates
    assert since is not None and since.date_from == date(2025, 3, 1) and None in since.date_to_options


@pytest.mark.parametrize("question", ["Was gab's vor drei Wochen an Ruby-Releases?", "Gab es gestern was zu ACME?"])
def test_a_short_german_question_is_read_as_german(question: str) -> None:
    assert detect_language(question) == "de"


class _LowCoverage:
    """A collection that holds little of any topic: the opening's words alone would be off-topic."""

    async def coverage(self, text: str, language: str) -> Coverage | None:
        return Coverage(together=0.05, anywhere=0.05, lexemes=len(text.split()))

    async def similarity(self, message: str) -> float | None:
        return 0.1

    async def request_vote(self, message: str) -> None:
        return None


@pytest.mark.parametrize(("question", "passed"), [
    ("Я неделю был в отпуске и хочу наверстать: что вышло за последние семь дней?", True),
    ("I was at a wedding all weekend, so: what came out over the last 3 days?", True),
    ("Ich war auf Dienstreise: was gab es seit Montag?", True),
    ("I was at a wedding all weekend, so: what is a good gift for the couple?", False),  # no period: measured
])
async def test_a_closing_question_about_a_period_after_a_personal_opening_is_a_request(
    question: str, passed: bool
) -> None:
    verdict = await check_request(question, language="en", tools=default_registry().names,
                                  relevance=_LowCoverage(), today=TODAY)
    assert verdict.passed is passed, (question, verdict.reason)


# TODAY is a Wednesday: Monday was 2026-06-15, the Friday before it 2026-06-12.
@pytest.mark.parametrize(("question", "date_from", "open_end"), [
    ("posts since Monday", date(2026, 6, 15), True), ("статьи с понедельника", date(2026, 6, 15), True),
    ("Beiträge seit Montag", date(2026, 6, 15), True),
    ("what was posted last Friday?", date(2026, 6, 12), False),
    ("что писали в прошлую пятницу?", date(2026, 6, 12), False),
    ("Was kam letzten Freitag raus?", date(2026, 6, 12), False),
    ("Beiträge vom Montag", date(2026, 6, 15), False),
])
def test_a_day_of_the_week_is_read_as_the_latest_such_day(question: str, date_from: date, open_end: bool) -> None:
    dates = read_question(question, TODAY).dates
    assert dates is not None and dates.date_from == date_from, (question, dates)
    assert (None in dates.date_to_options) is open_end and (open_end or dates.date_to_options[0] == date_from)


@pytest.mark.parametrize("question", ["Cyber Monday certificate deals", "Black Friday sale on certificates?"])
def test_a_day_of_the_week_in_a_name_is_no_period(question: str) -> None:
    assert read_question(question, TODAY).dates is None


def test_a_closing_question_about_a_period_searches_the_period_unless_the_opening_names_a_thing() -> None:
    personal = fallback_decision("Я неделю был в отпуске и хочу наверстать: что вышло за последние семь дней?", TODAY)
    assert personal.tool == SEARCH and "text" not in personal.arguments, personal
    assert (personal.arguments["dateFrom"], personal.arguments["dateTo"]) == ("2026-06-10", "2026-06-17")
    named = fallback_decision("RubyGems 3.6 is out: what came out last week?", TODAY)
    assert named.arguments.get("text") == "RubyGems 3.6", named


@pytest.mark.parametrize("question", ["Статьи про Sunlight, язык не важен", "Posts on Sunlight, the language doesn't matter",
                                      "Beiträge zu Sunlight, Sprache egal", "Поищи по всем языкам статьи про Sunlight"])
def test_a_language_that_does_not_matter_searches_every_language(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == SEARCH and "language" not in decision.arguments and decision.arguments["text"] == "Sunlight"


def test_a_german_imperative_without_its_e_asks_to_answer_and_an_order_may_start_bei_the_first() -> None:
    compared = fallback_decision("Such die Beiträge zu Certbot und vergleich die Versionen", TODAY)
    assert compared.tool == SEARCH_AND_ASK and compared.arguments["text"] == "Certbot", compared
    told = fallback_decision("Erzähl mir, wie sich Certbot entwickelt hat – fang bei den allerersten Beiträgen an", TODAY)
    assert told.tool == SEARCH_AND_ASK and told.arguments["sort"] == "oldest", told


def test_a_word_of_both_languages_does_not_vote_for_english() -> None:
    assert detect_language("Was plant Ruby eigentlich in Sachen Typprüfung?") == "de"
    assert detect_language("What was planned in Ruby 3.4?") == "en"


@pytest.mark.parametrize("question", ["bring back the old posts about YJIT", "go back to the Certbot posts"])
def test_back_alone_is_no_period_cue(question: str) -> None:
    reading = read_question(question, TODAY)
    assert reading.dates is None and reading.unread_period == () and "back" in reading.rest
