"""Filters written as fields, the way apps, agents and chat-ops type them: "topic: OCSP; lang: de; since:
2023-01", "lang=any | range=2023-Q1..2024-Q2", '{"query": "Ruby 3.4", "language": "en", "limit": 5}',
"тема: CT; язык: ru; с: 2020-01", "Thema: REXML; Sprache der Artikel: en; Antwort: ru". Each known field is
said again in the words the other readers read ("articles in German", "answer in Russian", "since January
2023", "top 5", "oldest first"); a topic's or a task's key is dropped and its value kept. ISO forms the period
grammar does not read are spelled out too: a month "2023-01", a quarter "2023-Q1", a week "2025-W38", a
range "a..b".

Why not a library: a query-string or "key: value" parser would split the fields, but the keys are the three
languages' words for a language, a period or a topic, and the values are what the question readers read
anyway; rewriting the fields into those words keeps one reading of each filter."""

from __future__ import annotations

import re

from router.reader._patterns import words_pattern as _r

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_LANGUAGE_NAMES = {"de": "German", "en": "English", "ru": "Russian"}
_CODE = {
    "de": "de", "deu": "de", "ger": "de", "german": "de", "deutsch": "de", "немецкий": "de",
    "en": "en", "eng": "en", "english": "en", "englisch": "en", "английский": "en",
    "ru": "ru", "rus": "ru", "russian": "ru", "russisch": "ru", "русский": "ru",
}
_ALL = frozenset("any all alle beliebig jede все любой любые * всё".split())

# keys, by what their value sets (the three languages' words; "_" and "-" join words as in "answer_lang")
_SEP = r"[\s_-]*"
_ANSWER_KEY = (r"(?:answer|reply|response|output)" + _SEP + r"lang(?:uage)?|answer|reply|язык" + _SEP + r"ответа|ответ"
               r"|antwort" + _SEP + r"sprache|sprache" + _SEP + r"der" + _SEP + r"antwort|antwort")
_EXCLUDE_KEY = r"(?:exclude|not|without|skip)" + _SEP + r"lang(?:uage)?s?|кроме" + _SEP + r"языка|ohne" + _SEP + r"sprache"
_LANGUAGE_KEY = (r"(?:articles?|source)?" + _SEP + r"lang(?:uage)?s?|articles?|sources|язык(?:и|" + _SEP + r"статей)?"
                 r"|статьи|источники|sprachen?|sprache" + _SEP + r"der" + _SEP + r"artikel|artikelsprache|artikel|quellen")
_TOPIC_KEY = (r"topic|subject|q|query|search|keywords?|terms?|question|тема|запрос|поиск|ключевые" + _SEP + r"слова"
              r"|вопрос|thema|suche|suchbegriffe?|stichworte?|anfrage|frage")
_TASK_KEY = r"task|action|intent|задача|действие|aufgabe|aktion"
_SORT_KEY = r"sort|order|сортировка|порядок|sortierung|reihenfolge"
_LIMIT_KEY = r"limit|top|count|max|количество|лимит|anzahl"
_SINCE_KEY = r"since|from|after|с|от|после|seit|ab|von|nach"
_UNTIL_KEY = r"until|to|till|по|bis"
_BEFORE_KEY = r"before|до|vor"
_PERIOD_KEY = r"period|range|dates?|time" + _SEP + r"range|период|даты|дата|zeitraum|datum"
_KEYS = {
    "answer": _ANSWER_KEY, "exclude": _EXCLUDE_KEY, "language": _LANGUAGE_KEY, "topic": _TOPIC_KEY,
    "task": _TASK_KEY, "sort": _SORT_KEY, "limit": _LIMIT_KEY, "since": _SINCE_KEY, "until": _UNTIL_KEY,
    "before": _BEFORE_KEY, "period": _PERIOD_KEY,
}
_FIELD = _r(
    r"(?<![\w-])[\"']?(?:" + "|".join(f"(?P<{name}>{pattern})" for name, pattern in _KEYS.items()) + r")[\"']?"
    r"\s*[:=]\s*[\"']?(?P<value>[^;|\n\"{}]*?(?:\s*,\s*(?:en|de|ru)(?![\w-]))*)[\"']?\s*(?=[;|\n,:}]|\s/\s|\s[—–]\s|$"
    r"|\s[\"']?(?:" + "|".join(_KEYS.values()) + r")[\"']?\s*[:=])"  # or the next field's key, lines joined
    # a language's key and code with no sign between: "Sprache en", "lang ru", "язык: de"
    r"|(?<![\w-])(?P<bare>lang(?:uage)?|sprache|язык)\s+(?P<code>en|de|ru)(?![\w-])"
)
# a task's value as the imperative the rules read: "task: explain", "задача: объяснить", "Aufgabe: zusammenfassen"
_TASKS = (
    (_r(r"^(?:explain\w*|erklär\w*|объясн\w*|describe|beschreib\w*|опиш\w*|описать)"), "explain"),
    (_r(r"^(?:summar\w*|zusammenfass\w*|zusammenfassung|суммир\w*|суммариз\w*|резюм\w*|сводк\w*|recap|überblick)"),
     "summarize"),
    (_r(r"^(?:compare|vergleich\w*|сравн\w*)"), "compare"),
    (_r(r"^(?:search|find|list|suchen|finden|auflisten|найти|найди|искать|поиск|показать|покажи|liste)$"), "find"),
)
_YEAR_MONTH = re.compile(r"(?<![\w-])(\d{4})-(0[1-9]|1[0-2])(?![\w-])")
_YEAR_QUARTER = _r(r"(?<![\w-])(\d{4})-?Q([1-4])(?![\w-])")
_YEAR_WEEK = _r(r"(?<![\w-])(?:(?:ISO\s+)?(?:week|KW|неделя)\s+)?(\d{4})-?W(\d{1,2})(?![\w-])")
_SINCE_UNTIL = re.compile(r"\ssince (\S+)\s+[,;]?\s*until (\S+)\s")
_RANGE = re.compile(r"(?<![\w.])(\S+?)\s*\.\.\s*(\S+)(?![\w.])")


def as_words(text: str) -> str:
    """``text`` with its fields and ISO periods said in the words the readers read."""
    text = _fields_in_words(text)
    text = _SINCE_UNTIL.sub(lambda m: f" from {m.group(1)} to {m.group(2)} ", text)  # two fields, one range
    text = _RANGE.sub(lambda m: f"from {m.group(1)} to {m.group(2)}", text)
    text = _YEAR_QUARTER.sub(lambda m: f"Q{m.group(2)} {m.group(1)}", text)
    text = _YEAR_WEEK.sub(lambda m: f"week {int(m.group(2))} {m.group(1)}", text)
    return _YEAR_MONTH.sub(lambda m: f"{_MONTHS[int(m.group(2)) - 1]} {m.group(1)}", text)


# A field opens the message, a line or a part after a separator, or follows the field before it (lines joined
# with spaces): "другой вопрос: статьи про X" is prose, "вопрос: X" alone a field.
_OPENS_FIELD = re.compile(r"(?:^|[\n;|{,/(.?!\"'])\s*$")


def _fields_in_words(text: str) -> str:
    parts: list[str] = []
    position, last_end = 0, -1
    start = 0
    while (match := _FIELD.search(text, start)) is not None:
        between = text[last_end:match.start()] if last_end >= 0 else None
        if match.group("bare") or _OPENS_FIELD.search(text[:match.start()]) or (between is not None
                                                                                 and not between.strip()):
            parts += [text[position:match.start()], _field_words(match)]
            position = last_end = start = match.end()
        else:
            start = match.start() + 1
        if start > len(text):
            break
    parts.append(text[position:])
    return "".join(parts)


def _field_words(match: re.Match[str]) -> str:
    if match.group("bare"):
        return f" articles in {_LANGUAGE_NAMES[match.group('code').casefold()]} "
    key = next(name for name in _KEYS if match.group(name))
    value = match.group("value").strip()
    if not value:
        return match.group(0)
    if key in ("answer", "exclude", "language"):
        codes = [_CODE.get(v.casefold()) for v in re.split(r"\s*[,+/&]\s*|\s+(?:and|und|и)\s+", value)]
        if key == "language" and value.casefold() in _ALL:
            return " in all languages "
        if not codes or None in codes:
            return match.group(0)  # not a language: left as typed
        names = " and ".join(_LANGUAGE_NAMES[c] for c in dict.fromkeys(codes) if c)
        if key == "answer":
            return f" answer in {names} "
        return f" not in {names} " if key == "exclude" else f" articles in {names} "
    if key == "sort":
        folded = value.casefold()
        if re.match(r"old|asc|стар|ранн|ält|früh|alt", folded):
            return " oldest first "
        return " newest first " if re.match(r"new|desc|нов|свеж|neu|jüng", folded) else match.group(0)
    if key == "limit":
        return f" top {value} " if value.isdigit() else match.group(0)
    if key in ("since", "until", "before"):  # the period grammar's own operators
        return f" {key} {value} "
    if key == "task":
        verb = next((verb for pattern, verb in _TASKS if pattern.match(value)), None)
        if verb is not None:  # "explain", or "summarize the advisories": the verb in the form the rules read
            return f" {verb} {value.split(maxsplit=1)[1] if ' ' in value else ''} "
    return f" {value} "  # a topic, a task or a period: its value is read as words
