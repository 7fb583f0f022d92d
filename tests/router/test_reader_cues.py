"""The question reader on real phrasings (issue 22, items 1-3: every class with its exact value
or the "could not read" report) and on generated language-cue forms whose expected roles come
from the structured parameters they were rendered from."""

from __future__ import annotations

from datetime import date
from itertools import permutations

import pytest

from router.fallback import fallback_decision
from router.material_language import material_language
from router.question_reading import read_question, retrieval_text
from router.reader import language_cues, read_cues, read_order

TODAY = date(2026, 11, 29)  # a Sunday
D = date.fromisoformat

# (question, dateFrom, dateTo): the classes issue 22 lists as missed or misread
PERIODS = [
    ("Статьи про Ruby в предыдущем квартале", D("2026-07-01"), D("2026-09-30")),
    ("Ruby posts from the last half-year", D("2026-05-29"), TODAY),
    ("Artikel über Ruby im vorigen Quartal", D("2026-07-01"), D("2026-09-30")),
    ("статьи про OCSP за последние полгода", D("2026-05-29"), TODAY),
    ("Что писали про Docker три месяца назад?", D("2026-08-01"), D("2026-08-31")),
    ("posts about Rails from two months ago", D("2026-09-01"), D("2026-09-30")),
    ("Was wurde vor drei Wochen über Let's Encrypt veröffentlicht?", D("2026-11-02"), D("2026-11-08")),
    ("Ruby articles before 2010", None, D("2009-12-31")),
    ("Artikel über Ruby vor 2012", None, D("2011-12-31")),
    ("posts since April about YJIT", D("2026-04-01"), TODAY),
    ("статьи о YJIT с апреля", D("2026-04-01"), TODAY),
    ("Beiträge über Ruby ab Juli", D("2026-07-01"), TODAY),
    ("Ruby news from 3 to 17 March 2025", D("2025-03-03"), D("2025-03-17")),
    ("статьи с 1 по 14 февраля 2026", D("2026-02-01"), D("2026-02-14")),
    ("Beiträge vom 1. bis 14. Februar 2026", D("2026-02-01"), D("2026-02-14")),
    ("Artikel über Ruby 2014 bis 2017", D("2014-01-01"), D("2017-12-31")),
    ("Ruby posts from the nineties", D("1990-01-01"), D("1999-12-31")),
    ("Artikel über Ruby in den 2010er Jahren", D("2010-01-01"), D("2019-12-31")),
    ("статьи о Ruby в марте прошлого года", D("2025-03-01"), D("2025-03-31")),
    ("Beiträge über Ruby im Mai letzten Jahres", D("2025-05-01"), D("2025-05-31")),
    ("статьи про Ruby до 2015 года", None, D("2014-12-31")),
    ("статьи про Ruby в 2000-х", D("2000-01-01"), D("2009-12-31")),
    ("Ruby posts from the past 10 weeks", D("2026-09-20"), TODAY),
    ("Artikel in den letzten drei Monaten", D("2026-08-29"), TODAY),
    ("статьи с 2011 по 2013 год", D("2011-01-01"), D("2013-12-31")),
    ("Artikel vom 15.03.2019 bis 30.04.2019 über Ruby 2.6", D("2019-03-15"), D("2019-04-30")),
    ("last year's November posts on Certbot", D("2025-11-01"), D("2025-11-30")),
    ("позавчерашние статьи про Ruby", D("2026-11-27"), D("2026-11-27")),
    ("Let's Encrypt posts from last week", D("2026-11-16"), D("2026-11-22")),
    ("Beiträge über Zertifikate seit einem halben Jahr", D("2026-05-29"), TODAY),
    ("posts from 2019 onwards", D("2019-01-01"), TODAY),
    # the last part of a named year ("last" as an ordinal), and German "von" joining a part to its year
    ("Ruby news from the last third of 2024", D("2024-09-01"), D("2024-12-31")),
    ("posts from the last quarter of 2025", D("2025-10-01"), D("2025-12-31")),
    ("статьи за последний квартал 2024 года", D("2024-10-01"), D("2024-12-31")),
    ("в последней трети 2023 года про Ruby", D("2023-09-01"), D("2023-12-31")),
    ("Beiträge aus dem letzten Quartal von 2013", D("2013-10-01"), D("2013-12-31")),
    ("Ruby-News aus dem ersten Drittel von 2013", D("2013-01-01"), D("2013-04-30")),
    ("Artikel aus der zweiten Hälfte von 2019", D("2019-07-01"), D("2019-12-31")),
]


@pytest.mark.parametrize(("question", "date_from", "date_to"), PERIODS)
def test_each_missed_period_class_is_read_exactly(question: str, date_from: date | None, date_to: date) -> None:
    cues = read_cues(question, TODAY)
    period = cues.period.period
    assert period is not None, question
    assert (period.date_from, period.date_to) == (date_from, date_to)
    assert not cues.period.unread
    assert period.phrase not in cues.rest  # the period's words are no topic


def test_a_period_after_today_is_read_as_such() -> None:
    period = read_cues("posts from 2032", TODAY).period.period
    assert period is not None and period.future and (period.date_from, period.date_to) == (D("2032-01-01"),
                                                                                            D("2032-12-31"))
    assert read_cues("posts from 2024", TODAY).period.period.future is False  # type: ignore[union-attr]


@pytest.mark.parametrize(("question", "unread", "rest"), [
    ("статьи про Ruby за квартал", ("за квартал",), "статьи про Ruby"),
    ("Zeig mir Artikel über RubyGems aus dem Quartal", ("aus dem Quartal",), "Zeig mir Artikel über RubyGems"),
    ("Ruby posts from three moons ago", ("from three moons ago",), "Ruby posts"),
    ("Ruby posts summer", ("summer",), "Ruby posts"),  # a season alone, with no operator and no year
    # vague amounts are no period the grammar computes: reported, never read as "last year"
    ("Artikel in den letzten Jahren über Ruby", ("in den letzten Jahren",), "Artikel über Ruby"),
    ("статьи за последние годы", ("за последние годы",), "статьи"),
])
def test_a_cue_the_grammar_cannot_read_is_reported_and_cut(question: str, unread: tuple[str, ...], rest: str) -> None:
    cues = read_cues(question, TODAY)
    assert cues.period.period is None
    assert cues.period.unread == unread and cues.rest == rest


# A period word one letter off (a missing, extra, swapped or wrong letter) is read when the
# corrected word completes a period phrase; a word that only looks like one is left alone.
@pytest.mark.parametrize(("question", "spelled_right"), [
    ("Zeig mir Artikle über RubyGems aus dem lezten Quartal", "Zeig mir Artikle über RubyGems aus dem letzten Quartal"),
    ("Ruby posts from the previus quater", "Ruby posts from the previous quarter"),
    ("posts about Certbot from Febuary 2025", "posts about Certbot from February 2025"),
    ("Artikel über Ruby im Setpember 2024", "Artikel über Ruby im September 2024"),
    ("статьи про Ruby за прошлый кватрал", "статьи про Ruby за прошлый квартал"),
    ("статьи про YJIT в октябое 2025", "статьи про YJIT в октябре 2025"),
    ("Beiträge über Ruby seit letzem Jahr", "Beiträge über Ruby seit letztem Jahr"),
    ("Ruby posts from the last three monts", "Ruby posts from the last three months"),
])
def test_a_period_word_with_a_typo_is_read(question: str, spelled_right: str) -> None:
    cues, expected = read_cues(question, TODAY), read_cues(spelled_right, TODAY).period.period
    period = cues.period.period
    assert expected is not None and period is not None, question
    assert (period.date_from, period.date_to) == (expected.date_from, expected.date_to)
    assert not cues.period.unread


@pytest.mark.parametrize("question", [
    "pattern match in Ruby 3.4", "JUnit 5 and Ruby", "posts about the Mach kernel", "Marsch der Entwickler",
    "yearly Ruby surveys", "Juniper routers and Let's Encrypt",
])
def test_a_word_near_a_period_word_is_no_period(question: str) -> None:
    cues = read_cues(question, TODAY)
    assert cues.period.period is None and cues.period.unread == (), question


# A year right after a product's name is its version ("Windows 2000", "Office 2019"): no period,
# no unread cue, and it stays in the search text.
@pytest.mark.parametrize(("question", "version"), [
    ("Ruby on Windows 2000", "Windows 2000"),
    ("Was ist neu in Office 2019?", "Office 2019"),
    ("статьи про Ruby и Windows Server 2019", "Server 2019"),
    ("Certbot on SQL Server 2022 hosts", "Server 2022"),
    ("Does Visual Studio 2022 support Ruby 3.3?", "Studio 2022"),
])
def test_a_year_after_a_product_name_is_its_version(question: str, version: str) -> None:
    cues = read_cues(question, TODAY)
    assert cues.period.period is None and cues.period.unread == (), question
    assert version in cues.rest


@pytest.mark.parametrize(("question", "date_from", "date_to"), [
    ("Ruby on Windows 2000: articles from 2019", D("2019-01-01"), D("2019-12-31")),
    ("Artikel über Ruby 2014 bis 2017", D("2014-01-01"), D("2017-12-31")),
    ("Sicherheitslücken 2019 in RubyGems", D("2019-01-01"), D("2019-12-31")),
    ("Ruby-Beiträge 2020", D("2020-01-01"), D("2020-12-31")),
    ("Let's Encrypt Posts 2021", D("2021-01-01"), D("2021-12-31")),
    ("Show 2019 articles about Ruby", D("2019-01-01"), D("2019-12-31")),
])
def test_a_year_after_a_collection_noun_or_a_range_is_still_a_period(question: str, date_from: date,
                                                                      date_to: date) -> None:
    period = read_cues(question, TODAY).period.period
    assert period is not None and (period.date_from, period.date_to) == (date_from, date_to), question


@pytest.mark.parametrize("question", [
    "Find articles about Ruby 3.4", "CVE-2025-25186 details", "Ruby 2.7.1 release notes", "What may change in Rails?",
    "Let's Encrypt ACME v2 rate limits", "Найди статьи про YJIT", "Zeige Artikel über Ruby 3.3",
    "posts about six-day certificates", "90-day certificate lifetimes", "die 6-Tage-Zertifikate",
])
def test_no_period_and_no_cue_where_none_is_named(question: str) -> None:
    cues = read_cues(question, TODAY)
    assert cues.period.period is None and cues.period.unread == ()


@pytest.mark.parametrize("question", ["show me the", "Zeig mir die", "Ruby in the", "only the", "nur die"])
def test_a_question_ending_in_an_article_is_read(question: str) -> None:
    """An article as the last word ("... in the") once ran the grammar past the last token (IndexError)."""
    cues = read_cues(question, TODAY)
    assert cues.period.period is None and cues.period.unread == ()


@pytest.mark.parametrize(("question", "sort"), [
    ("Find articles about Ruby in chronological order", "oldest"),
    ("List posts about Certbot in date order", "oldest"),
    ("Artikel über Ruby chronologisch", "oldest"),
    ("Beiträge zu Docker zeitlich aufsteigend", "oldest"),
    ("статьи о Ruby в хронологическом порядке", "oldest"),
    ("статьи про REXML по возрастанию даты", "oldest"),
    ("Zeig mir die Beiträge über Ractor von alt nach neu", "oldest"),
    ("posts about YJIT from earliest to latest", "oldest"),
    ("статьи про ACME от ранних к поздним", "oldest"),
    ("Certbot posts, oldest first please", "oldest"),
    ("Show the oldest articles about Rails", "oldest"),
    # the order of publication, read as a phrase (phrasings written for this test)
    ("list the Certbot posts in the order they were published", "oldest"),
    ("posts on RubyGems in publication order", "oldest"),
    ("статьи про OCSP в порядке выхода", "oldest"),
    ("выведи новости о YJIT по порядку", "oldest"),
    ("Beiträge zu Bundler in der Reihenfolge, in der sie veröffentlicht wurden", "oldest"),
    ("Beiträge über Ractor der Reihe nach", "oldest"),
    ("read me everything on ACME from the very beginning", "oldest"),
    ("статьи о Certbot с самого начала", "oldest"),
    ("Artikel über Ruby 3 von Anfang an", "oldest"),
    # where to start (phrasings written for this test)
    ("Summarize the Bundler posts, start with the early ones", "oldest"),
    ("Как менялся Certbot в старых версиях? Начни со старых.", "oldest"),
    ("Fass die OCSP-Meldungen zusammen und fang mit den alten an", "oldest"),
    ("Walk me through the posts on old Ruby versions, beginning with the new ones", "newest"),
    ("the order of operations in Ruby blocks", None),
    ("in which order should I upgrade Ruby and Rails?", None),
    ("posts about Ruby in reverse chronological order", "newest"),
    ("статьи про Let's Encrypt, сначала самые свежие", "newest"),
    ("Beiträge über Ruby, neueste zuerst", "newest"),
    ("Find articles about Ruby", None),
])
def test_order_cues(question: str, sort: str | None) -> None:
    assert read_order(question).sort == sort


ADJ = {  # the articles' language as an adjective: en, ru (accusative plural), de (accusative plural)
    "en": {"en": "English", "de": "German", "ru": "Russian"},
    "ru": {"en": "английские", "de": "немецкие", "ru": "русские"},
    "de": {"en": "englische", "de": "deutsche", "ru": "russische"},
}
PHRASE = {  # "in German", "на немецком", "auf Deutsch"
    "en": {"en": "in English", "de": "in German", "ru": "in Russian"},
    "ru": {"en": "на английском", "de": "на немецком", "ru": "на русском"},
    "de": {"en": "auf Englisch", "de": "auf Deutsch", "ru": "auf Russisch"},
}
ANSWER = {  # an answer verb governing the phrase
    "en": "Find {adj} posts about Docker and summarize them {phrase}",
    "ru": "Найди {adj} статьи про Docker и перескажи их {phrase}",
    "de": "Such {adj} Beiträge über Docker und fass sie {phrase} zusammen",
}
TWO = {
    "en": "What do the {a} and the {b} announcements say about Ruby 3.0?",
    "ru": "Что пишут {a} и {b} статьи о Ruby 3.0?",
    "de": "Was schreiben die {a}n und {b}n Artikel zu Ruby 3.0?",
}
NAMED = {"en": "Find {adj} articles about Ruby", "ru": "Найди {adj} статьи о Ruby", "de": "Finde {adj} Artikel über Ruby"}
NAMED_PHRASE = {"en": "Find articles about Ruby {phrase}", "ru": "Найди статьи о Ruby {phrase}",
                "de": "Finde Artikel über Ruby {phrase}"}
CODES = ("en", "de", "ru")


def _language_cases() -> list[tuple[str, tuple[str, ...], str | None]]:
    out: list[tuple[str, tuple[str, ...], str | None]] = []
    for lang in CODES:
        for code in CODES:
            out.append((NAMED[lang].format(adj=ADJ[lang][code]), (code,), None))
            out.append((NAMED_PHRASE[lang].format(phrase=PHRASE[lang][code]), (code,), None))
        for articles, answer in permutations(CODES, 2):
            out.append((ANSWER[lang].format(adj=ADJ[lang][articles], phrase=PHRASE[lang][answer]), (articles,), answer))
            out.append((TWO[lang].format(a=ADJ[lang][articles], b=ADJ[lang][answer]), (articles, answer), None))
    return out


@pytest.mark.parametrize(("question", "articles", "answer"), _language_cases())
def test_language_roles(question: str, articles: tuple[str, ...], answer: str | None) -> None:
    cues = language_cues(question)
    assert cues.several == articles and cues.answer == answer
    assert cues.named == (articles[0] if len(articles) == 1 else None)
    expected = articles[0] if len(articles) == 1 else sorted(articles)
    assert material_language(cues, written_in="en") == expected  # a list of two is one filter


# The answer's language named as a phrase beside an adjective naming the articles' language, with
# no answer verb governing it, before or after the adjective (generated for every pair).
BESIDE = {
    "en": ("Tell me {phrase} what the {adj} article about Docker says", PHRASE["en"], ADJ["en"]),
    "ru": ("Перескажи {phrase} {adj} пост о Docker",
           {"en": "по-английски", "de": "по-немецки", "ru": "по-русски"},
           {"en": "английский", "de": "немецкий", "ru": "русский"}),
    "de": ("Gib den {adj} Beitrag über Docker {phrase} wieder", PHRASE["de"],
           {"en": "englischen", "de": "deutschen", "ru": "russischen"}),
}


@pytest.mark.parametrize(("lang", "articles", "answer"),
                         [(lang, a, b) for lang in CODES for a, b in permutations(CODES, 2)])
def test_a_phrase_beside_the_articles_adjective_is_the_answer_language(lang: str, articles: str, answer: str) -> None:
    template, phrases, adjectives = BESIDE[lang]
    cues = language_cues(template.format(phrase=phrases[answer], adj=adjectives[articles]))
    assert (cues.several, cues.answer) == ((articles,), answer)


def test_a_second_noun_between_keeps_two_articles_languages() -> None:
    cues = language_cues("Find Russian articles and articles in German about Ruby 3.0")
    assert set(cues.several) == {"ru", "de"} and cues.answer is None


@pytest.mark.parametrize("question", [
    "Find posts about IPv6 in any language", "Artikel über ECDSA, egal in welcher Sprache",
    "Найди посты о Certbot на любом языке", "Beiträge über Ruby in allen Sprachen",
])
def test_all_languages_means_no_filter(question: str) -> None:
    cues = language_cues(question)
    assert cues.all_languages and material_language(cues, written_in="en", client="de") is None


@pytest.mark.parametrize(("question", "named"), [
    ("find germna posts about Bundler", "de"), ("russain articles on YJIT", "ru"), ("Zeig englsiche Beiträge über Ruby", "en"),
    ("статьи на немцком про Ruby", None),  # a phrase, not an adjective on the noun: left as it is
    ("the Germans posts", None),  # an edit at the end is an inflection, not a typo
])
def test_a_language_adjective_with_a_typo_on_a_collection_noun_is_read(question: str, named: str | None) -> None:
    assert language_cues(question).named == named


@pytest.mark.parametrize(("question", "proven"), [
    ("German articles about Ruby", ("de",)), ("немецкие статьи про Ruby", ("de",)),
    ("Beiträge über Ruby auf Deutsch", ("de",)), ("Ruby and the German locale", ()),
    ("What is YJIT? Answer in German", ()),
])
def test_a_language_on_a_collection_noun_is_proven(question: str, proven: tuple[str, ...]) -> None:
    assert language_cues(question).on_collection == proven


@pytest.mark.parametrize(("question", "sort"), [
    ("Расскажи, как заканчивалась поддержка старых веток Ruby", None),
    ("что изменилось в ранних версиях Ruby", None),
    ("покажи старые статьи про Ruby", "oldest"),
    ("статьи про Ruby, сначала старые", "oldest"),
    ("начни с самых ранних статей", "oldest"),
    ("старейшие публикации о Certbot", "oldest"),
    ("отсортируй по дате, старые сверху", "oldest"),
])
def test_old_and_early_are_an_order_only_of_the_articles(question: str, sort: str | None) -> None:
    assert read_order(question).sort == sort


# A noun for the answer's form governs the phrase (no collection noun between them), and beside "in
# any language" a language phrase can only be the answer's (generated for every language).
FORM = {
    "en": ("Give me the gist {phrase} of what is known about Docker", "Is there anything on Docker in any language? "
           "The gist {phrase}, please."),
    "ru": ("Сделай обзор {phrase} про Docker", "Есть что-нибудь про Docker на любом языке? Выжимку {phrase}."),
    "de": ("Gib mir einen Überblick {phrase} über Docker", "Gibt es etwas zu Docker in allen Sprachen? "
           "Eine Zusammenfassung {phrase} bitte."),
}
FORM_ON_ARTICLES = {"en": "A summary of posts {phrase} about Docker", "ru": "Обзор статей {phrase} про Docker",
                    "de": "Eine Zusammenfassung der Beiträge {phrase} über Docker"}


@pytest.mark.parametrize(("lang", "answer"), [(lang, code) for lang in CODES for code in CODES])
def test_a_noun_for_the_answers_form_governs_its_language_phrase(lang: str, answer: str) -> None:
    plain, everything = FORM[lang]
    cues = language_cues(plain.format(phrase=PHRASE[lang][answer]))
    assert (cues.several, cues.answer) == ((), answer)
    cues = language_cues(everything.format(phrase=PHRASE[lang][answer]))
    assert (cues.all_languages, cues.answer) == (True, answer)
    cues = language_cues(FORM_ON_ARTICLES[lang].format(phrase=PHRASE[lang][answer]))
    assert (cues.several, cues.answer) == ((answer,), None)


@pytest.mark.parametrize(("question", "client", "language"), [
    # a compound adjective on the articles ("Russian-language", "English-speaking")
    ("What do the German-language posts say about YJIT? Reply in English.", None, "de"),
    ("Show English-speaking blog posts on Certbot", "ru", "en"),
    # a phrase before the noun, a participle between them: the articles' language, over the client's
    ("Welche auf Deutsch veröffentlichten Beiträge gibt es über OCSP?", "en", "de"),
    ("Какие на русском вышедшие статьи есть про Bundler?", "de", "ru"),
])
def test_a_compound_adjective_or_a_phrase_before_the_noun_names_the_articles(
    question: str, client: str | None, language: str,
) -> None:
    reading = read_question(question, TODAY, client_language=client)  # type: ignore[arg-type]
    # named on the collection: proven, so neither the client's language nor a model's replaces it
    assert reading.language == language and language_cues(question).on_collection == (language,)


@pytest.mark.parametrize(("question", "kept"), [
    ("Posts about the Ruby Summer of Code students", "Summer"),
    ("Beiträge zum Google Winter of Code", "Winter"),
])
def test_a_season_in_a_name_is_no_period(question: str, kept: str) -> None:
    reading = read_question(question, TODAY)
    assert reading.dates is None and reading.unread_period == () and kept in reading.rest


@pytest.mark.parametrize("question", [
    "Хочу почитать что-нибудь про Sunlight на английском — какие статьи есть?",
    "I'd like to read up on Sunlight — which posts are there?",
])
def test_an_interrogative_is_no_topic_so_the_earlier_clause_gives_it(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == "SearchArticles" and "Sunlight" in decision.arguments["text"].split()


@pytest.mark.parametrize(("question", "languages"), [
    ("Gibt es was zu YJIT in russischer Sprache?", "ru"),
    ("Покажи статьи про Certbot на английском и немецком языках", ["de", "en"]),
    ("Find articles about OCSP in English or German", ["de", "en"]),
    ("Artikel über YJIT auf Deutsch und Englisch", ["de", "en"]),
    ("Найди статьи про YJIT на немецком языке", "de"),
])
def test_a_language_cue_takes_its_noun_and_its_list_joiner_out_of_the_topic(
    question: str, languages: str | list[str],
) -> None:
    # "YJIT Sprache" or "OCSP or" would be searched as words every article must hold
    decision = fallback_decision(question, TODAY)
    assert decision.arguments["language"] == languages
    assert decision.arguments["text"] in ("YJIT", "Certbot", "OCSP"), decision.arguments


@pytest.mark.parametrize(("question", "sort"), [
    ("List the Ruby release posts, oldest on top", "oldest"), ("Статьи про Bundler, старые сверху", "oldest"),
    ("Beiträge zu Bundler, die ältesten oben", "oldest"), ("Статьи про Bundler, сначала самые старые", "oldest"),
    ("Beiträge zu Bundler aufsteigend nach Datum sortiert", "oldest"), ("Show Bundler posts from first to last", "oldest"),
    ("Статьи про Bundler от первых до последних", "oldest"),
])
def test_an_order_cue_takes_its_place_words_out_of_the_topic(question: str, sort: str) -> None:
    # "on top", "сначала", "nach Datum sortiert", "last" would be searched as words every article must hold
    decision = fallback_decision(question, TODAY)
    assert decision.arguments.get("sort") == sort
    assert decision.arguments["text"] in ("Ruby release", "Bundler"), decision.arguments


@pytest.mark.parametrize(("question", "articles", "answer"), [
    ("Bitte auf Englisch: wie funktioniert OCSP?", "de", "en"),
    ("По-английски, пожалуйста: что такое YJIT?", "ru", "en"),
    ("Auf Russisch bitte – was ist YJIT?", "de", "ru"),
    # the articles are named after the colon: the phrase is theirs
    ("На немецком: какие статьи есть про YJIT?", "de", None),
    ("In German: find articles about YJIT", "de", None),
])
def test_a_language_phrase_heading_the_message_before_a_colon_says_how_to_answer(
    question: str, articles: str, answer: str | None,
) -> None:
    reading = read_question(question, TODAY)
    assert (reading.language, reading.answer_asked) == (articles, answer)


@pytest.mark.parametrize(("question", "expected"), [
    ("Erkläre mir bitte auf Russisch, welche Challenge-Typen es gibt.", "Erkläre mir bitte, welche Challenge-Typen es gibt."),
    ("Что нового в Ruby 3.1? Ищи в английских статьях.", "Что нового в Ruby 3.1? Ищи в статьях."),
    ("Where did the Germany.rb 2010 meetup take place? Search articles in any language.",
     "Where did the Germany.rb 2010 meetup take place? Search articles."),
    ("Ответь по-английски: что такое CAA?", "Ответь: что такое CAA?"),
    ("Was ist Ruby Box? Antworte auf Englisch oder Deutsch.", "Was ist Ruby Box? Antworte."),
    ("How does Ruby 3.4 parse its code?", None),  # no cue: retrieval reads the question as asked
    ("Was ist neu in Ruby 3.4?", None),
])
def test_retrieval_reads_the_question_without_its_language_cues(question: str, expected: str | None) -> None:
    assert retrieval_text(question) == expected
