"""Messages typed the way people chat or write at work (docs/router.md, round 14): chat spellings of
function words, no question mark, all lower case, a spoken opener before the question word; context
first and the request after it, a reported question. Phrasings written for these tests, in no eval case.
No database: the request gate runs on its rules alone."""

from __future__ import annotations

from datetime import date

import pytest

from infra.settings import get_settings
from router.chat_spelling import in_standard_spelling
from router.deterministic import decide_fallback
from router.question_reading import keywords, read_question
from router.request import RouteRequest
from router.tools import ASK, SEARCH, SEARCH_AND_ASK
from router.write_intent import write_intent

TODAY = date(2026, 6, 17)


async def _decide(question: str) -> tuple[str | None, dict[str, object]]:
    decision = await decide_fallback(get_settings(), RouteRequest(question, today=TODAY))
    return decision.tool, decision.arguments


@pytest.mark.parametrize(("typed", "read"), [
    ("can u list the yjit posts", "can you list the yjit posts"),
    ("go thru the bundler posts n sum them up", "go through the bundler posts and sum them up"),
    ("Чё нового по рельсам", "Что нового по рельсам"),
    ("gibts was zu prism", "gibt's was zu prism"),
    ("Kannste mir nen überblick geben", "Kannst du mir einen überblick geben"),
    # a Russian hyphen left out
    ("объясни по немецки", "объясни по-немецки"),
    ("посты 90х годов", "посты 90-х годов"),
    ("есть чтонибудь про bundler", "есть что-нибудь про bundler"),
    # the soft sign typed for a prefix's hard sign
    ("обьясни разницу", "объясни разницу"), ("подьезд", "подъезд"), ("Разьясни", "Разъясни"),
])
def test_chat_spellings_of_function_words_are_read_in_standard_spelling(typed: str, read: str) -> None:
    assert in_standard_spelling(typed) == read


@pytest.mark.parametrize("text", ["вьюга", "семья", "Обь", "posts about the U.S. mirrors", "n-gram search in Ruby", "U2 and Ruby", "CVE-2024-u"])
def test_a_chat_form_inside_a_name_or_abbreviation_keeps_its_spelling(text: str) -> None:
    assert in_standard_spelling(text) == text


@pytest.mark.parametrize(("question", "tool"), [
    # a written-out "you" makes the polite request a request to change the collection
    ("could u rename the post about rubygems 3.5", None),
    # "n" joins a request to answer to the search
    ("pull up the certbot posts n tell me what changed", SEARCH_AND_ASK),
    # "что есть про X" is "what there is about X": a list
    ("чё есть про bundler", SEARCH),
    # an entry in another system: no tool makes one; asking how to make one is a question
    ("My cert renewal keeps slipping. Create a reminder for next Monday.", None),
    ("У нас обновление Bundler на следующей неделе. Заведи мне задачу в трекере.", None),
    ("Trag mir einen Termin für das Zertifikats-Update ein.", None),
    ("How do I set a reminder to renew certificates?", ASK),
])
async def test_chat_spellings_and_actions_elsewhere_route_by_their_form(question: str, tool: str | None) -> None:
    assert (await _decide(question))[0] == tool


@pytest.mark.parametrize("question", [
    # the question after a sentence about the asker, no question mark
    "we moved our site to a new cdn. why does ocsp stapling fail now",
    "у нас старый nginx на проде. как включить ocsp stapling",
    "wir haben certbot auf dem server. muss ich für ari etwas umstellen",
    # a spoken opener before the question word
    "а почему ocsp больше не поддерживают",
    "and how does the rubygems trusted publishing work",
    # "чем" asks how two things differ
    "чем dns-01 отличается от http-01",
    # a question reported or wished for
    "I want to know how OCSP stapling works",
    "Mein Teamleiter fragt, warum Let's Encrypt die Laufzeit verkürzt.",
    "коллега спрашивает, зачем нужен CAA",
    "Ich frage mich, ob Certbot schon ARI kann",
])
async def test_a_question_without_its_mark_or_reported_is_read_as_a_question(question: str) -> None:
    assert (await _decide(question))[0] == ASK


async def test_a_later_sentence_is_no_question_when_an_earlier_one_already_asks() -> None:
    tool, arguments = await _decide("были ли в марте патчи для bundler? что в них исправили?")
    assert tool == SEARCH_AND_ASK
    assert "bundler" in str(arguments.get("text")).casefold()


@pytest.mark.parametrize(("question", "writes"), [
    # typed all in lower case, a plural noun at the end is no infinitive
    ("zeig mal die neuesten einträge zu den challenge typen", False),
    ("gib mir die artikel über die neuen zertifikatslaufzeiten", False),
    # a verb of change at the end still writes, lower case or not
    ("bitte den beitrag über ocsp löschen", True),
    ("den artikel über yjit bitte offline nehmen", True),
    ("Bitte den Artikel über YJIT aktualisieren", True),
    # a change whose object points back at the item the message named in an earlier sentence
    ("Im Beitrag über Bundler 2.5 fehlt ein Link. Korrigier ihn bitte.", True),
    ("The post on YJIT is listed twice. Remove the newer duplicate.", True),
    ("В новости про RubyKaigi неверная дата. Исправь её.", True),
    # a verb that shapes the answer, or a reading verb, on the same pronoun
    ("Summarize the article about YJIT. Make it short.", False),
    ("Найди статью про OCSP и напиши это по-немецки.", False),
    ("Find the post about OCSP. Explain it in simple words.", False),
])
def test_a_message_writes_only_with_a_verb_of_change_on_the_collection(question: str, writes: bool) -> None:
    assert (write_intent(question) is not None) is writes


def test_a_misspelt_reading_verb_read_in_standard_spelling_is_no_write() -> None:
    typed = "обьясни записи CAA из статьи про DNS"
    assert write_intent(typed) is not None  # as typed, "обьясни" is no verb of reading
    assert write_intent(in_standard_spelling(typed)) is None


async def test_a_hyphen_left_out_still_names_the_answer_language_and_the_decade() -> None:
    tool, arguments = await _decide("найди немецкие статьи про certbot и объясни по английски")
    assert (tool, arguments["language"], arguments["answerLanguage"]) == (SEARCH_AND_ASK, "de", "en")
    tool, arguments = await _decide("посты 90х годов про ruby")
    assert (tool, arguments["dateFrom"], arguments["dateTo"]) == (SEARCH, "1990-01-01", "1999-12-31")


@pytest.mark.parametrize(("question", "topic"), [
    ("покажи прям все посты про bundler", "bundler"),
    ("zeig doch mal die beiträge zu yjit", "yjit"),
    ("о чём вообще писали про prism", "prism"),
    # a dictated message's fillers
    ("ну эээ покажи посты про bundler", "bundler"), ("um so uh show me posts about yjit", "yjit"),
    ("äh zeig mal beiträge zu prism", "prism"), ("короче найди статьи про rexml", "rexml"),
])
def test_spoken_particles_are_no_topic(question: str, topic: str) -> None:
    assert keywords(read_question(question, TODAY).rest) == topic


# ---- context first, the request after it (round 14) ----

def test_a_period_in_a_sentence_of_context_gives_way_to_the_requests_own() -> None:
    reading = read_question("Wir migrieren im Sommer auf Ruby 4.0. Welche Beiträge zu YJIT kamen in diesem Quartal?",
                            TODAY)
    assert reading.dates is not None and (reading.dates.date_from, reading.dates.date_to) == (date(2026, 4, 1),
                                                                                                date(2026, 6, 30))
    # a colon ends the context too: "We plan the upgrade around Christmas: show me …"
    colon = read_question("Wir planen das Upgrade rund um Weihnachten: zeig mir Beiträge aus dem Mai 2026", TODAY).dates
    assert colon is not None and (colon.date_from, colon.date_to) == (date(2026, 5, 1), date(2026, 5, 31))
    # two periods in one sentence are still joined
    joined = read_question("posts from March 2025 and April 2025", TODAY).dates
    assert joined is not None and (joined.date_from, joined.date_to) == (date(2025, 3, 1), date(2025, 4, 30))


@pytest.mark.parametrize("question", [
    "сделай подборку статей про Certbot", "make me a selection of posts about OCSP",
    "Stell mir eine Auswahl an Beiträgen zu YJIT zusammen",
])
async def test_a_selection_of_the_articles_is_their_list(question: str) -> None:
    assert (await _decide(question))[0] == SEARCH


async def test_a_reported_question_about_which_articles_exist_asks_for_their_list() -> None:
    assert (await _decide("I want to know which posts cover OCSP stapling"))[0] == SEARCH


@pytest.mark.parametrize(("question", "topic"), [
    # the later request points back ("this", "their", "этот"): the earlier sentence's thing is the topic
    ("Мы переписываем сервис на YJIT. Выведи статьи про этот компилятор.", "yjit"),
    ("I'm documenting how Certbot began. List their posts from the very start.", "certbot"),
])
async def test_a_pointing_word_in_the_request_takes_the_topic_from_the_context(question: str, topic: str) -> None:
    tool, arguments = await _decide(question)
    assert tool == SEARCH and topic in str(arguments.get("text")).casefold()


async def test_a_request_with_its_own_topic_leaves_the_contexts_names_out() -> None:
    tool, arguments = await _decide("Unser Team nutzt GitHub-Actions. Gibt es Artikel über Bundler?")
    assert tool == SEARCH and "github" not in str(arguments.get("text")).casefold()


async def test_a_language_named_in_a_sentence_of_context_gives_way_to_the_requests_own() -> None:
    tool, arguments = await _decide("Die russischen Seiten sind hier dünn. Such englische Beiträge über YJIT.")
    assert (tool, arguments["language"]) == (SEARCH, "en")
    # two languages in the request itself are both kept
    tool, arguments = await _decide("Such deutsche und englische Beiträge über YJIT.")
    languages = arguments["language"]
    assert isinstance(languages, list) and sorted(languages) == ["de", "en"]


@pytest.mark.parametrize("question", [
    "найди статьи про YJIT, язык статей неважен", "Such Beiträge zu YJIT, die Sprache der Artikel ist egal",
    "find posts about YJIT, the article language doesn't matter",
])
async def test_the_articles_language_that_does_not_matter_searches_every_language(question: str) -> None:
    tool, arguments = await _decide(question)
    assert tool == SEARCH and arguments.get("language") is None


@pytest.mark.parametrize(("question", "span"), [
    ("posts about Bundler from Q3/24", (date(2024, 7, 1), date(2024, 9, 30))),
    ("Beiträge zu Bundler aus H1/25", (date(2025, 1, 1), date(2025, 6, 30))),
    ("посты про Bundler за Q1 '26", (date(2026, 1, 1), date(2026, 3, 31))),
])
def test_a_quarter_or_half_takes_a_two_digit_year_after_a_slash_or_an_apostrophe(
    question: str, span: tuple[date, date]
) -> None:
    dates = read_question(question, TODAY).dates
    assert dates is not None and (dates.date_from, dates.date_to) == span


@pytest.mark.parametrize(("question", "since"), [
    ("We moved to Certbot in 2022. List every post about Certbot since then.", date(2022, 1, 1)),
    ("Wir nutzen Certbot seit März 2023. Zeig mir alle Beiträge dazu seitdem.", date(2023, 3, 1)),
    ("В 2021 мы перешли на Ruby 3. Покажи статьи про YJIT с тех пор.", date(2021, 1, 1)),
])
def test_since_then_runs_from_the_period_named_before_to_today(question: str, since: date) -> None:
    dates = read_question(question, TODAY).dates
    assert dates is not None and dates.date_from == since and dates.date_to == TODAY
