"""Question reading: what code reads from a question before any routing rule -- the filters it
names (the articles' language by the seed's rule, the answer's language, the period, the order,
from the question reader `router.reader`) and the words left for the topic.

The deterministic route (`router.fallback`), the request gate's topic (`router.gate`), code-filled
filters for a small model (`router.code_filters`) and follow-ups use this one reading; the
fallback only adds its intent rules on top (issue 26: the reading is not the fallback).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from infra.messages.ask import PublishedPeriod
from infra.results import Language, LanguageFilter
from router.intent import (
    ASK_CLAUSE,
    BRIEF_ANSWER,
    FILLER,
    LISTING_QUESTION,
    OFF_TOPIC,
    PUBLICATION_VERB,
    PUBLISHED_PHRASE,
    QUESTION_FORM,
    strip_greeting,
)
from router.language import written_language
from router.material_language import material_language
from router.reader import (
    COLLECTION_NOUN,
    COLLECTION_PATTERN,
    DateExpectation,
    QuestionCues,
    as_words,
    language_cues,
    read_cues,
    read_period,
)
from router.write_intent import CLAUSES

__all__ = [
    "ASK_WORDS", "INTERROGATIVES", "QuestionReading", "closing_period_question", "keywords", "published_period",
    "question_period", "read_question", "retrieval_text",
]

# Order words, not topic ("die allerersten Beiträge", "die neuesten Beiträge", "новейшие статьи").
_ORDER_WORD = re.compile(r"\b(?:oldest|earliest)\b|стар\w+|ранн\w+|новейш\w+|последн\w+|свеж\w+|перв(?:ые|ых)"
                         r"|\b(?:aller)?(?:älteste\w*|früheste\w*"
                         r"|neueste\w*|aktuellste\w*)|\ballererst\w*", re.I | re.U)
_FILLER = re.compile(FILLER, re.I | re.U)  # a dictated message's fillers ("ну", "um", "äh") are no topic
_STOPWORDS = frozenset(
    """
    find show me list search for about on the a an all some please in from of
    any give get look up display pls plz written published latest recent newest oldest earliest first sorted by date
    announcements announcement there is are gibt gibts es чо чего ли что-нибудь что-то что-либо
    with that mention mentioning related to regarding most
    найди найти покажи показать выведи список про о об по на в за все мне
    пожалуйста самые новые старые последние свежие теме тему
    посвящённые посвященные дай подбери поищи которые где есть связанные с из
    finde zeige zeig suche such liste gib nenne mir alle über zu zum zur von
    im in auf aus die der das den dem des bitte neueste älteste aktuelle aktuellste mit thema rund um und
    also then а потом заодно и danach dann außerdem could would can you kindly please будьте добры покажите
    could könnten können sie du zeig
    whatever everything anything something was were been has have here posted written dig up track down round
    был была было были будет war waren gab what
    можешь можете что это этом этого писали писалось kannst mir raussuchen heraussuchen mal raus heraus
    erschienen erschienenen erschienene вышедшие вышедших опубликованные опубликованных veröffentlichten veröffentlichte
    got hast habt haben findet sich имеются имеется найдется найдётся у вас тебя
    thanks thx danke плиз спасибо need нужны нужна нужен brauche brauch bräuchte wurde wurden всё and out
    take возьми возьмите бери nimm nehmt nach suchen irgendwas irgendwelche поиск new нового новенького neues
    новое новенькое новенькие
    прям прямо вообще чём чем doch genau eigentlich halt denn sind ist подборку подборка selection auswahl
    ищу ищем looking every each
    put alles neue neuen neuer ein eine einen einem einer ever
    aber
    write wrote cover covered ging gingen auflisten schon collect gather собери sammle sammel только but aber но
    exact exactly phrase точной точную точная фразой фразу фраза дословно exakt exakte wortwörtlich wortlaut
    filter filters parameters фильтр фильтры параметрам параметры параметров filter parametern parameter написали освещали geschrieben gebracht berichtet
    site website blog сайт сайта сайте блог блога блоге seite webseite
    """.split()
)
# Closed word classes, never a topic: the asker's pronouns, those that point back at the articles ("list
# them"), and the auxiliary of a question about what was published ("what did we post …", "was haben wir …
# veröffentlicht", "что мы выложили …"). Not when typed as an acronym ("US", "DO"); not "I" ("I/O") nor
# "hat" ("Red Hat").
_FUNCTION_WORDS = frozenset(
    """
    we us our ours my did does do them they these those
    мы нас нам нами наш наша наше наши нашем нашей нашего нашу я их они эти
    wir uns unser unsere unserem unseren unserer unseres ich sie
    """.split()
)
# The site or blog as the place the articles are ("on the site", "на сайте", "im Blog"): the collection.
_ON_THE_SITE = re.compile(
    r"\b(?:on|at|in|from)\s+(?:the|our|this|your)\s+(?:web\s?)?(?:site|blog)\b"
    r"|(?<!\w)(?:на|в|из)\s+(?:нашем\s+|вашем\s+|этом\s+|нашего\s+|этого\s+)?(?:сайте|сайта|блоге|блога)(?!\w)"
    r"|\b(?:auf|in|von|aus)\s+(?:der|dem|unserer|unserem|eurer|eurem|ihrer|ihrem)\s+(?:web)?(?:seite|site|website|blog)\b"
    r"|\b(?:im|vom|aus\s+dem)\s+blog\b",
    re.I | re.U,
)
# Interrogatives open a listing question ("какие статьи есть?", "Welche Beiträge gibt es …?"): no topic
# there. Not stop words everywhere: a follow-up's "which one was two pages back?" is a question, no move.
INTERROGATIVES = frozenset("which what какие какой какая каких какое welche welcher welches welchen worüber wovon".split())
ASK_WORDS = frozenset(
    """
    explain summarize summarise compare describe tell recap объясни расскажи сравни опиши перескажи обобщи резюмируй
    кратко erkläre erklär fasse zusammen vergleiche beschreibe retell paraphrase recount erzähl erzähle schildere wieder
    kurz briefly вкратце коротко
    сводка сводку сводки краткая краткую краткое краткий summary overview recap zusammenfassung überblick
    topics themes main highlights takeaways gist quick short brief темы главные основные главное основное резюме
    themen hauptthemen kernaussagen wichtigsten wichtigste kurze kurzen
    answer answers say ответ ответь ответьте скажи antwort antworte sag
    """.split()
)
_WORD = re.compile(r"[\w.+#-]+", re.U)
_COLLECTION_HEAD = re.compile(r"(?<=\w)-(?:" + COLLECTION_PATTERN + r")$", re.I | re.U)
# The "'s" a removed period leaves behind ("last month's posts" without "last month"); "Let's" keeps its own.
_ORPHAN_POSSESSIVE = re.compile(r"(?:(?<=\s)|^)['’]s\b")


def keywords(text: str, *, drop: frozenset[str] = frozenset()) -> str | None:
    """The topic words of ``text``: without the request and collection words (None: nothing left). A short
    quoted phrase is kept whole, in double quotes: the search reads it as a phrase ("отказ в обслуживании")."""
    parts: list[str] = []
    position = 0
    for quoted in _QUOTED.finditer(text):
        phrase = (quoted.group(1) or quoted.group(2)).split()
        if not 1 <= len(phrase) <= 4:  # a quoted sentence ("User asks: \"find …\"") is read word by word
            continue
        parts += [_topic_words(text[position:quoted.start()], drop), f'"{" ".join(phrase)}"']
        position = quoted.end()
    parts.append(_topic_words(text[position:], drop))
    return " ".join(p for p in parts if p) or None


# A quoted phrase of one to four words ("…", «…», „…“, '…' between spaces: not an apostrophe's "Let's").
_QUOTED = re.compile(r"[\"“«„]\s*([^\"“”«»„]{1,60}?)\s*[\"”»“]|(?<![\w'])'([^'\n]{1,60}?)'(?![\w'])", re.U)


def _topic_words(text: str, drop: frozenset[str]) -> str:
    plain = _ORPHAN_POSSESSIVE.sub(" ", PUBLISHED_PHRASE.sub(" ", _ON_THE_SITE.sub(" ", text)))
    # a compound whose head is the articles' noun names its topic: "Rails-Artikel", "YJIT-статьи"
    words = [_COLLECTION_HEAD.sub("", w.strip(".-")) for w in _WORD.findall(plain)]

    def topical(w: str) -> bool:
        return any(c.isalnum() for c in w) and w.casefold() not in _STOPWORDS and w.casefold() not in drop \
            and (w.casefold() not in _FUNCTION_WORDS or (len(w) > 1 and w.isupper())) \
            and not _ORDER_WORD.fullmatch(w) and not COLLECTION_NOUN.fullmatch(w) \
            and not PUBLICATION_VERB.fullmatch(w) and not _FILLER.fullmatch(w)  # "посты", "Meldungen": the collection

    # A clitic "s" goes with the word it was split from: "gab's", "what's" are dropped whole; "Let's" stays.
    kept = [w for i, w in enumerate(words)
            if topical(w) and not (w.casefold() == "s" and i > 0 and not topical(words[i - 1]))]
    return " ".join(kept)


def closing_period_question(text: str, today: date) -> str | None:
    """The message's last clause when it is a question about a period with no topic of its own and
    something opens the message before it ("Ich war zwei Wochen im Urlaub und will aufholen: was kam in
    den letzten 10 Tagen raus?"): what the collection holds then is asked (None: no such clause)."""
    clauses = [c for c in CLAUSES.split(text) if c.strip()]
    if len(clauses) < 2 or OFF_TOPIC.search(clauses[-1]):
        return None
    last = clauses[-1].strip(" ,")
    if not (QUESTION_FORM.search(last) or LISTING_QUESTION.search(last)):
        return None
    reading = read_question(last, today)
    no_topic = keywords(reading.rest, drop=ASK_WORDS | INTERROGATIVES) is None
    return last if reading.dates is not None and no_topic else None


@dataclass(frozen=True)
class QuestionReading:
    """What code reads from a question: the filters it names and the words left for the topic."""

    text: str  # the question as routed (a leading greeting dropped)
    rest: str  # without its language cues, its period (read or not) and its order words
    language: LanguageFilter | None  # the articles' language(s) by the seed's rule (None: all languages)
    answer: Language  # the answer's language: requested by the client or the user, else the question's
    answer_asked: Language | None  # the answer language the question itself asks for ("answer in English")
    dates: DateExpectation | None
    sort: str | None  # "oldest" when asked for, else None
    asks_for_answer: bool  # "… and explain", "answer in English": an answer is wanted, not only a list
    unread_period: tuple[str, ...] = ()  # period cue words the reader could not read (not in `rest`)
    page_size: int | None = None  # how many articles it asks for ("the 5 newest"), None: not said
    excluded: tuple[str, ...] = ()  # what it leaves out ("but not Rails"): the governed texts, not in `rest`

    @property
    def filters(self) -> dict[str, Any]:
        """The search filters in the tools' wire form (None: not named)."""
        dates = self.dates
        return {
            "language": self.language,
            "dateFrom": dates.date_from.isoformat() if dates and dates.date_from else None,
            "dateTo": dates.date_to.isoformat() if dates and dates.date_to else None,
            "sort": self.sort,
        }

    def keywords(self, *, drop_ask_words: bool = False) -> str | None:
        """The topic: what is left of the question without its filter and request words."""
        return self.with_excluded(keywords(self.rest, drop=ASK_WORDS if drop_ask_words else frozenset()))

    def with_excluded(self, topic: str | None) -> str | None:
        """``topic`` and the words the question leaves out, each with web search's minus ("Ruby -Rails")."""
        left_out = [f"-{word}" for text in self.excluded for word in (keywords(text) or "").split()]
        return " ".join([*([topic] if topic else []), *left_out]) or None


def read_question(
    question: str, today: date, *, answer_language: Language | None = None, client_language: Language | None = None
) -> QuestionReading:
    """The filters ``question`` names, read in code (no refusal rules: see `fallback_decision`)."""
    text = strip_greeting(" ".join(question.split()))
    cues: QuestionCues = read_cues(text, today)
    written_in = written_language(text)
    languages = cues.languages
    return QuestionReading(
        text=text, rest=cues.rest,
        language=material_language(languages, written_in=written_in, client=client_language),
        answer=answer_language or languages.answer or written_in,
        answer_asked=languages.answer,
        dates=cues.period.period,
        sort="oldest" if cues.order.sort == "oldest" or cues.count.oldest else None,
        asks_for_answer=(languages.answer is not None or ASK_CLAUSE.search(cues.rest) is not None
                         or BRIEF_ANSWER.search(cues.rest) is not None),
        unread_period=cues.period.unread,
        page_size=cues.count.count,
        excluded=cues.exclusions.excluded,
    )


_SPACE_BEFORE_MARK = re.compile(r"\s+([,.;:!?])")  # what a cut cue leaves: "Erkläre mir bitte , welche"


def retrieval_text(question: str) -> str | None:
    """The question as RAG retrieval should read it: without its language cues ("auf Russisch",
    "in any language", "Ищи в английских статьях"), None when it names none.

    Those words choose the filter and the answer's language, which are applied apart; left in the
    query they are content to both retrieval lists: "Russisch" was the rarest word of a German
    question about challenge types and brought articles mentioning Russian first (the one that
    answers it fell out of the top 20), and the vector side drifted the same way. The answer model
    still reads the whole question.
    """
    text = " ".join(question.split())
    rest = _SPACE_BEFORE_MARK.sub(r"\1", " ".join(language_cues(text).rest.split()))
    return rest if rest and rest != text else None


def published_period(period: DateExpectation | None) -> PublishedPeriod | None:
    """The period a question names as an ask's preference (`retrieval.hybrid.retrieve_preferring_period`):
    the whole span the phrase may mean ("autumn 2006": September to November); None when it names
    none, or one after today (no article is from it)."""
    if period is None or period.future:
        return None
    start, end = period.period
    return PublishedPeriod(date_from=start if start > date.min else None, date_to=end)


def question_period(question: str, today: date) -> PublishedPeriod | None:
    """`published_period` of the period ``question`` names, read as the router reads it."""
    return published_period(read_period(as_words(" ".join(question.split())), today).period)
