"""The seed's language rule: which language's articles a question is about.

The answer language and the material language "by default coincide", and a user may ask in
Russian for German articles (seed 000). So, in order:
1. a language the question names for the articles ("German articles", "на немецком",
   "auf Englisch") -- a request for the *answer's* language ("answer in English") is not one;
2. "in any / all (three) languages" -> no language filter (None);
3. the client's `language` (a UI locale passed at submission);
4. the language the question is written in.
The same rule runs after a model's call (the gateway) and in the fallback router, so a model
that omits `language` and one that (rightly) sends the question's language run the same search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.results import Language


def _r(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.UNICODE)


# "answer in English", "ответь по-немецки", "antworte auf Deutsch": the answer's language, not the articles'.
ANSWER_LANGUAGE_REQUESTS: tuple[re.Pattern[str], ...] = (
    _r(r"\b(?:answer|reply|respond|write)\w*\s+(?:me\s+)?(?:back\s+)?in\s+(english|german|russian)\b"),
    _r(r"\bin\s+(english|german|russian)\s*,?\s*please\s*[.!]?\s*$"),
    _r(r"(?:ответ\w*|напиши|пиши)\s+(?:мне\s+)?(?:на\s+(английском|немецком|русском)|по-(английски|немецки|русски))"),
    _r(r"\b(?:antworte|antwort|schreib)\w*\s+(?:mir\s+)?(?:bitte\s+)?(?:auf|in)\s+(englisch|deutsch|russisch)\b"),
    _r(r"\bauf\s+(englisch|deutsch|russisch)\s+(?:antworten|beantworten)\b"),
)
LANGUAGE_WORDS: dict[str, Language] = {
    "english": "en", "englisch": "en", "английском": "en", "английски": "en",
    "german": "de", "deutsch": "de", "немецком": "de", "немецки": "de",
    "russian": "ru", "russisch": "ru", "русском": "ru", "русски": "ru",
}
_ALL_LANGUAGES = _r(
    r"\b(?:in\s+|across\s+|from\s+)?(?:any|all|every|each|all\s+three|all\s+the|both)\s+languages?\b"
    r"|\bregardless\s+of\s+(?:the\s+)?language\b|\bno\s+matter\s+(?:the|which|what)\s+language\b"
    r"|\bmultilingual\b"
    r"|на\s+(?:всех|любых|любом|разных|трёх|трех)(?:\s+трёх|\s+трех)?\s+язык\w*|(?:всех|любых|любом)\s+язык\w*"
    r"|независимо\s+от\s+языка|на\s+любом\s+из\s+языков|все\s+языки"
    r"|\b(?:in\s+|auf\s+)?(?:allen|jeder|beliebiger|allen\s+drei)\s+sprachen?\b|\begal\s+in\s+welcher\s+sprache"
    r"|\bsprachunabhängig\w*|\bunabhängig\s+von\s+der\s+sprache|\balle\s+sprachen\b"
)
# The articles' language, named. Word stems, so "немецкие статьи", "deutschsprachige Artikel",
# "German posts" all count; checked after the answer-language requests are cut out.
_NAMED: tuple[tuple[re.Pattern[str], Language], ...] = (
    (_r(r"\bgerman\b|\bdeutsch\w*|немецк\w*|по-немецки"), "de"),
    (_r(r"\benglish\b|\benglisch\w*|английск\w*|англоязычн\w*|по-английски"), "en"),
    (_r(r"\brussian\b|\brussisch\w*|русск\w*|русскоязычн\w*|по-русски"), "ru"),
)


@dataclass(frozen=True)
class LanguageCues:
    """What the question itself says about languages."""

    named: Language | None  # the articles' language the question names (one only)
    all_languages: bool  # "in any/all languages": no filter
    answer: Language | None  # the answer's language the question asks for
    rest: str  # the question without the answer-language request


def answer_language_request(question: str) -> tuple[Language | None, str]:
    """The answer language the question asks for, and the question without that request."""
    for pattern in ANSWER_LANGUAGE_REQUESTS:
        match = pattern.search(question)
        if match:
            word = next(g for g in match.groups() if g).casefold()
            return LANGUAGE_WORDS.get(word), question[: match.start()] + " " + question[match.end():]
    return None, question


def named_language(text: str) -> tuple[Language | None, str]:
    """The one language ``text`` names for its articles (None when none or several), and the
    text without the first naming phrase."""
    found: list[tuple[int, int, Language]] = []
    for pattern, language in _NAMED:
        match = pattern.search(text)
        if match:
            found.append((match.start(), match.end(), language))
    if len(found) != 1:
        return None, text
    start, end, language = found[0]
    before = re.sub(r"(?:\b(?:in|auf|on)|на)\s*$", " ", text[:start], flags=re.IGNORECASE)
    return language, before + " " + text[end:]


# "Summarize the Russian articles about X in English": with another language named, a trailing
# "in <language>" is the answer's.
_TRAILING_LANGUAGE = _r(
    r"\s+(?:in|auf)\s+(english|german|russian|englisch|deutsch|russisch)\s*[.!?]*\s*$"
    r"|\s+(?:на\s+(английском|немецком|русском)(?:\s+языке)?|по-(английски|немецки|русски))\s*[.!?]*\s*$"
)


def language_cues(question: str) -> LanguageCues:
    answer, rest = answer_language_request(question)
    if _ALL_LANGUAGES.search(rest):
        return LanguageCues(None, True, answer, _ALL_LANGUAGES.sub(" ", rest))
    named, stripped = named_language(rest)
    if named is None and answer is None:
        trailing = _TRAILING_LANGUAGE.search(rest)
        if trailing is not None:
            before = rest[: trailing.start()]
            other, before_stripped = named_language(before)
            if other is not None:
                word = next(g for g in trailing.groups() if g).casefold()
                return LanguageCues(other, False, LANGUAGE_WORDS.get(word), before_stripped)
    return LanguageCues(named, False, answer, stripped)


def material_language(
    cues: LanguageCues, *, written_in: Language, client: Language | None = None, proposed: Language | None = None
) -> Language | None:
    """The articles' language to search (None: every language), by the seed's rule.

    ``proposed`` is what a model sent: kept only when it differs from the default it would be
    replaced by and the question names no language itself (the model may have read a naming
    the patterns miss, e.g. a language given by country)."""
    if cues.named is not None:
        return cues.named
    if cues.all_languages:
        return None
    if proposed is not None and proposed != written_in:
        return proposed
    return client or written_in
