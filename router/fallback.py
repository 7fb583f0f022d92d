"""The degraded, deterministic route: used when no LLM is configured or the LLM keeps failing.

No model. What the question names (its languages, period, order, topic) is read by
`router.question_reading`; this module adds only the intent, from
the question's form (an imperative "find/show/list" -> search; a question -> ask; both, or a
question about a period, or "summarize the articles about X" -> combined), greetings, meta and
off-topic requests -> refused; an injected clause is dropped and the rest routed. The decision
goes through the same gateway as a model's, so it is validated and audited the same way. The
rules are tuned on the eval set's dev half only; the test half measures them (docs/router.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from infra.results import Language
from router.chat_spelling import in_standard_spelling
from router.intent import (
    ANAPHOR,
    ANSWER_REQUEST,
    ARTICLES_PHRASE,
    ASK_CLAUSE,
    ASK_CUE,
    ASK_VERB,
    BRIEF_ANSWER,
    DIGEST_REQUEST,
    EMBEDDED_QUESTION,
    EXPLAIN_REQUEST,
    FILLERS,
    LIST_ONLY,
    LIST_REQUEST,
    LISTING_QUESTION,
    META,
    POLITE,
    QUESTION_FORM,
    RETELL_QUESTION,
    RETELL_SEPARATED,
    SEARCH_VERB,
    an_aside,
    request_clause,
    small_talk,
    without_asides,
    without_injection,
)
from router.question_reading import (
    ASK_WORDS,
    INTERROGATIVES,
    QuestionReading,
    closing_period_question,
    keywords,
    read_question,
)
from router.reader import COLLECTION_NOUN, WHICH_LANGUAGES
from router.reader import words_pattern as _r
from router.tools import ASK, SEARCH, SEARCH_AND_ASK


@dataclass(frozen=True)
class FallbackDecision:
    tool: str | None  # None: refused
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    reading: QuestionReading | None = None  # what code read from the question (None: refused before reading)
    by_form: bool = True  # the tool is what the question's form says (False: the default branch, no form read)

    @property
    def form_tool(self) -> str | None:
        """The tool the question's form says (None: refused, or no form read)."""
        return self.tool if self.by_form else None


def fallback_decision(
    question: str, today: date, *, answer_language: Language | None = None, client_language: Language | None = None
) -> FallbackDecision:
    """The deterministic routing decision for ``question`` (arguments in the tools' wire form)."""
    text = in_standard_spelling(" ".join(question.split()))
    if not text:
        return FallbackDecision(None, reason="empty question")
    if small_talk(text) or META.search(text):
        return FallbackDecision(None, reason="a greeting or small talk, not a question about the articles")
    cleaned = without_injection(text)
    if cleaned is None:
        return FallbackDecision(None, reason="the question tries to change the rules")
    # Off-topic tasks are the request gate's (router/gate.py: task words and a measured relevance).
    reading = read_question(cleaned, today, answer_language=answer_language, client_language=client_language)
    text, rest, dates, filters = reading.text, reading.rest, reading.dates, reading.filters
    rest = _LEADING_FILLERS.sub("", rest)  # "so um what exactly is …": the form starts after the fillers

    def search(reason: str) -> FallbackDecision:
        if BRIEF_ANSWER.search(rest):  # "… прошлой зимой про Let's Encrypt? кратенько": a digest of them
            return combined(rest, reason + ", in the brief form asked")
        if reading.answer_asked is not None:  # "Russian articles on X, and answer in Russian": an answer is wanted
            return combined(rest, reason + ", with an answer in a named language")
        return listed(rest, reason)

    def listed(topic_text: str, reason: str) -> FallbackDecision:
        """The search of ``topic_text``'s topic, with the filters, the words left out and the page's size."""
        arguments = {"text": reading.with_excluded(keywords(topic_text, drop=INTERROGATIVES)), **filters,
                     "pageSize": reading.page_size}
        return FallbackDecision(SEARCH, _present(arguments), reason, reading)

    def combined(search_text: str, reason: str) -> FallbackDecision:
        # the answer's shape ("the key themes", "кратко") is no topic
        topic = keywords(BRIEF_ANSWER.sub(" ", search_text), drop=ASK_WORDS | INTERROGATIVES)
        if topic is None and search_text != rest:  # "поищи на всех языках и объясни, что за … CVE-…": the topic
            topic = keywords(BRIEF_ANSWER.sub(" ", rest), drop=ASK_WORDS | INTERROGATIVES)  # is in the request to answer
        arguments = {"text": reading.with_excluded(topic), **filters, "question": text, "answerLanguage": reading.answer}
        return FallbackDecision(SEARCH_AND_ASK, _present(arguments), reason, reading)

    def ask(reason: str) -> FallbackDecision:
        if dates is not None or reading.sort is not None:  # a period or an order is the search's: search first
            return combined(rest, reason + ", over the period or in the order asked")
        arguments = {"question": text, "language": reading.language, "answerLanguage": reading.answer}
        return FallbackDecision(ASK, _present(arguments), reason, reading)

    if _LANGUAGES_OF_A_THING.search(text):  # read on the message: the reader cuts the language words from `rest`
        return search("the languages a thing is written in, or whether it is in one: its articles")
    closing = closing_period_question(text, today)
    if closing is not None and not _NAME.search(text[: text.rindex(closing)]):
        # "ich war im Urlaub …: was kam in den letzten 10 Tagen raus?": the opening is about the asker
        return FallbackDecision(SEARCH, _present(dict(filters)), "a closing question about what a period holds, "
                                "no topic", reading)
    rest = without_asides(rest)  # "What came out in May? I was on leave.": no topic, no form
    later = request_clause(rest)
    if later is not None:  # a conversational opening: the request's form and topic are in the later clause
        earlier = rest[: len(rest) - len(later)]
        own = keywords(BRIEF_ANSWER.sub(" ", later), drop=ASK_WORDS | INTERROGATIVES) or ""  # request words: none
        anaphor = ANAPHOR.search(later) is not None
        points_back = not own or anaphor  # the topic is the earlier clause's
        # unless the opening is an aside and nothing points at it: "Я был в отпуске, покажи всё, что вышло …"
        aside = an_aside(earlier) and not anaphor
        back = (' '.join(_NAME.findall(earlier)) or ("" if aside else earlier)) if points_back else ""
        rest = _LEADING_FILLERS.sub("", f"{later} {back}".strip())  # "…, just explain X": the form after "just"
    only = LIST_ONLY.search(rest)
    if only is not None and not SEARCH_VERB.search(rest):
        rest = rest[: only.start()] + " " + rest[only.end():]  # "just the list": how, not what
        return search("a message that asks for the list only")
    produced = _produced(rest)
    if produced is not None:  # a list, a digest or a retelling of the articles, its topic after it
        tool, topic, reason = produced
        if tool == SEARCH:
            return listed(topic, reason)
        if tool == ASK:
            return ask(reason)
        return combined(topic, reason)
    if RETELL_QUESTION.search(rest) and dates is None and reading.sort is None:
        return ask("a request to answer a question (what the articles say, what a thing is)")
    ask_clause = ASK_CLAUSE.search(rest)
    if SEARCH_VERB.search(rest):
        if ask_clause:
            return combined(rest[: ask_clause.start()], "a search followed by a request to answer")
        if reading.answer_asked is not None:  # a list needs no answer language: something is to be answered
            return combined(rest, "a search with an answer in a named language")
        return search("a request for a list of articles")
    if LISTING_QUESTION.search(rest):
        if ask_clause:  # "Какие новости … вышли в этом году? Перескажи их по-русски."
            return combined(rest[: ask_clause.start()], "a question asking for a list followed by a request to answer")
        second = _SECOND_QUESTION.search(rest)
        if second is not None:
            return combined(rest[: second.start()], "a question asking for a list and a question about what it lists")
        if reading.answer_asked is not None:  # a list needs no answer language: something is to be answered
            return combined(rest, "a question asking for a list with an answer in a named language")
        return search("a question asking for a list of articles")
    if _COMPARE.search(rest):  # the things compared are found first: each has its articles
        return combined(rest, "a request to compare what the articles say of two things")
    if ASK_VERB.search(rest) and (ARTICLES_PHRASE.search(rest) or dates is not None or ask_clause):
        return combined(rest, "a request to answer over the articles found")
    if _asks_for_the_articles(text, rest):
        return search("the articles named in a question with no verb: a request for their list")
    if QUESTION_FORM.search(rest) or ASK_CUE.search(rest) or EMBEDDED_QUESTION.search(rest) \
            or _QUESTION_WORD_IN_A_QUESTION.search(rest):
        if dates is not None and keywords(rest, drop=ASK_WORDS | INTERROGATIVES) is None:
            # "что было на прошлой неделе?", "на прошлой неделе что-нибудь публиковали?": no topic to answer
            # about, so what the period holds is asked: its list
            return search("a question about what a period holds, no topic")
        if dates is not None:  # the answer is scoped to the period: search it first
            return combined(rest, "a question about a period of the articles")
        return ask("a question about the articles' content")
    if ask_clause:  # "Go through the posts … and tell me how …"
        found = combined(rest[: ask_clause.start()], "a request for articles followed by a request to answer")
        return replace(found, by_form=False)
    if _names_the_articles(text) and not ASK_VERB.search(rest):
        return search("the articles named, no verb and no question: a request for their list")
    return replace(search("a request for a list of articles (no form read: the default)"), by_form=False)


_WORDS = re.compile(r"[\w.'+#-]+")
_LEADING_FILLERS = _r("^" + FILLERS)
# The languages a thing is written in, or whether it is in one: "на каких языках писали про X?", "In welchen
# Sprachen gibt es X?", "Is there a German translation of X?", "Есть ли английский перевод X?"
_LANGUAGES_OF_A_THING = _r(
    r"^(?:" + WHICH_LANGUAGES + r")"
    r"|^(?:is|are)\s+there\s+(?:an?\s+)?\w+\s+(?:translations?|versions?)\s+of\b"
    r"|^gibt\s+es\s+(?:eine?\s+)?\w+\s+(?:übersetzung|fassung|version)\b|^есть\s+ли\s+(?:\w+\s+)?(?:перевод|верси\w+)(?!\w)"
)
# A request to compare: every writer so far labels it an answer over the articles found (4 of 4 read cases).
_COMPARE = _r(r"^" + POLITE + r"(?:compare|сравни\w*|vergleiche?n?)(?!\w)")
# A second question joined to a listing one asks about what is listed: "which versions came out and what was
# notable about them?", "какие релизы вышли и чем они отличаются?".
_SECOND_QUESTION = _r(r"(?:\s(?:and|und|и|а)|(?<=[.?!]))\s+(?:what|how|why|was|wie|warum|wieso|что|как|чем|почему|зачем)(?!\w)")
# A question word anywhere in a sentence that ends with a question mark: "ZJIT это что вообще?", "Ruby 3.4 — how
# fast is it?" (German "was" is also "something": "gibt's was zu X?" asks for a list, read before this).
_QUESTION_WORD_IN_A_QUESTION = _r(r"(?<![\w-])(?:что|как|почему|зачем|чем|what|how|why|wie|warum|wieso|wozu)(?![\w-])"
                                  r"[^.!?]*\?")


def _names_the_articles(text: str) -> bool:
    """No question mark, and the articles named ("Beiträge zu Certbot seit März 2025", "last month's posts
    pls") or a topic alone ("CVE-2020-10933"): a noun phrase is a request for the list. Measured on the
    tuned cases no other form reads: 187 of 190 such labels are a list, where a small model answered 16."""
    return "?" not in text and (COLLECTION_NOUN.search(text) is not None or len(_WORDS.findall(text)) <= 4)


# The words a question is built with: interrogatives and the verbs of asking ("is there", "gibt es", "есть ли").
_QUESTION_WORDS = frozenset(
    """
    what which how why when where who whose whom is are was were do does did can could will would should has have had
    might must shall welche welcher welches welchen wie warum wieso wann wo wer ist sind war waren gibt gab
    hat haben hatte kann können wird werden wurde wurden soll sollte что какие какой какая каких как почему зачем
    когда где кто есть ли был была было были будет можно чем чём
    """.split()
)
_RU_PAST = _r(r"(?<!\w)[а-яё]{3,}(?:ли|ла|ло)(?!\w)")  # a Russian verb in the past: "что-нибудь писали о …?"
_ANYTHING = _r(r"^\W*(?:any|anything|something|что-нибудь|что-то|irgendwas|irgendwelche|etwas)(?!\w)")


def _asks_for_the_articles(text: str, rest: str) -> bool:
    """ "newest posts about Ruby 3.4?", "… 2025 - any ruby 4.0 previews?": a question with no verb that names
    the articles or asks for any: their list is asked (on the tuned cases, 13 of 13 such labels are a list)."""
    if not text.rstrip().endswith("?") or ASK_VERB.search(rest) or QUESTION_FORM.search(rest):
        return False
    if {w.casefold().strip("'") for w in _WORDS.findall(rest)} & _QUESTION_WORDS or _RU_PAST.search(rest):
        return False  # read without the period: "May" is a month there, not a verb
    return COLLECTION_NOUN.search(text) is not None or _ANYTHING.search(rest) is not None


def _produced(rest: str) -> tuple[str, str, str] | None:
    """(tool, the text its topic is read from, why) for a request to produce something of the
    articles: "Составь список статей про …" (a search), "Write a short summary of the net-imap
    advisories" (an answer over them), "Gib den Beitrag über Certbot kurz wieder" (a retelling)."""
    if ANSWER_REQUEST.search(rest):
        return ASK, rest, "a request to write the answer to a question"
    if EXPLAIN_REQUEST.search(rest):
        return ASK, rest, "a request to explain a thing in other words"
    listing = LIST_REQUEST.search(rest)
    if listing is not None:
        return SEARCH, rest[listing.end():], "a request for a list of articles"
    digest = DIGEST_REQUEST.search(rest)
    if digest is not None:
        return SEARCH_AND_ASK, rest[digest.end():], "a request for a digest of the articles"
    if RETELL_SEPARATED.search(rest):
        return SEARCH_AND_ASK, rest, "a request to retell the articles found"
    return None


# A thing named by its shape (capitals, CamelCase, letters with digits): an earlier clause's topic.
_NAME = re.compile(r"(?<![\w.])(?:[A-Z][\w'.+#-]*[A-Z0-9][\w.+#-]*|[A-Z][a-z]+[A-Z]\w*)(?![\w])"
                   r"(?:\s+v?\d+(?:\.\d+)*(?![\w.]))?")  # with its version: "RubyGems 3.6"


def _present(arguments: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if v is not None}
