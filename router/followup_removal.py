"""Follow-ups that remove a filter (issue 28): "drop the language filter", "язык не важен",
"die Sprache ist mir egal", "without the date limit", "за всё время", "ohne Zeitraum".

A removal is a remover ("drop", "without", "no", "any", "убери", "без", "ohne", "egal") and the
filter's noun ("language", "date", "period", "язык", "дата", "Zeitraum"), with an optional
"filter"/"limit" noun, or the noun and a predicate of indifference ("language doesn't matter",
"язык без разницы", "Sprache ist egal"). Regular expressions: no library reads these in ru/en/de.
"""

from __future__ import annotations

from router.reader import cut_match
from router.reader import words_pattern as _r

# "drop the language filter", "убери фильтр по языку", "ohne Sprachfilter", "язык не важен": no language filter.
_NO_LANGUAGE = _r(
    r"\b(?:drop|remove|clear|reset|lose|disable|turn\s+off|without|no|ignore|forget)\s+(?:the\s+|a\s+|any\s+)?"
    r"language(?:\s+(?:filter|restriction|limit))?\b|\blanguage\s+(?:filter\s+off|(?:doesn'?t|does\s+not)\s+matter)\b"
    r"|(?<!\w)(?:убери|уберите|сними|отключи|сбрось|без)\s+(?:фильтр\w*\s+(?:по\s+)?язык\w*|языков\w+\s+фильтр\w*)"
    r"|(?<!\w)язык\s+(?:не\s*важен|любой)(?!\w)|(?<!\w)не\s*важно,?\s+(?:на\s+)?как\w*\s+язык\w*"
    r"|(?<!\w)язык\s+(?:мне\s+)?(?:без\s+разницы|вс[её]\s+равно|неважен)(?:\s+как\w*)?(?!\w)"
    r"|(?<!\w)(?:мне\s+)?(?:без\s+разницы|вс[её]\s+равно),?\s+(?:на\s+)?как\w*\s+язык\w*"
    r"|\b(?:any|whatever|every)\s+language\s+(?:is\s+|will\s+do|works)?\s*(?:fine|ok|okay|good)?\b"
    r"|\blanguage\s+(?:is\s+)?(?:irrelevant|unimportant|not\s+important)\b"
    r"|\b(?:don'?t|do\s+not)\s+care\s+about\s+(?:the\s+)?language\b"
    r"|\bsprache\s+(?:ist\s+)?(?:mir\s+|uns\s+)?(?:egal|wurscht|gleich|unwichtig)\b"
    r"|\begal\s+(?:welche|in\s+welcher)\s+sprache\b|\b(?:jede|beliebige)\s+sprache\b"
    r"|\b(?:ohne|kein\w*)\s+sprach(?:filter|einschränkung)\w*|\bsprachfilter\s+(?:entfernen|weg|aus|raus)\b"
    r"|\b(?:entfern\w*|lösch\w*)\s+(?:den\s+)?sprachfilter\b|\bsprache\s+(?:ist\s+)?egal\b|\b(?:all|any)\s+langs?\b"
)
# "without the date limit", "no time restriction", "any date", "all time", "убери ограничение по дате",
# "без дат", "за всё время", "ohne Zeitraum", "kein Datumsfilter", "egal wann", "aus allen Jahren".
_PERIOD_NOUN = (r"(?:dates?|time|times|period|periods|years?|time\s*frame|time\s+range|date\s+range|range|window"
                r"|дат\w*|период\w*|времен\w*|срок\w*|год\w*|datum\w*|zeit\w*|jahr\w*|period\w*)")
_LIMIT = r"(?:\s+(?:filter|restrictions?|limits?|limitations?|constraints?|window|range|bounds?))?"
_NO_PERIOD = _r(
    r"\b(?:drop|remove|clear|reset|lose|disable|turn\s+off|without|no|ignore|forget|regardless\s+of|any|from\s+any"
    r"|irrespective\s+of)\s+(?:the\s+|a\s+|any\s+|that\s+)?" + _PERIOD_NOUN + _LIMIT + r"\b"
    r"|\b(?:of\s+)?all\s+time\b|\bno\s+matter\s+when\b|\bwhenever\b"
    r"|(?<!\w)(?:убери|уберите|убрать|сними|снимите|отключи|сбрось|без|не\s+ограничивай)\s+"
    r"(?:(?:ограничени\w*|фильтр\w*)\s+)?(?:(?:по|на|во)\s+)?" + _PERIOD_NOUN + r"(?!\w)"
    r"|(?<!\w)за\s+(?:вс[её]\s+время|все\s+годы|любо[йе]\s+(?:период|время|год))(?!\w)"
    r"|(?<!\w)(?:неважно|не\s+важно|без\s+разницы|вс[её]\s+равно),?\s+когда(?!\w)"
    r"|\b(?:ohne|kein\w*|entfern\w*|lösch\w*|beliebig\w*|jede[nrms]?)\s+(?:den\s+|die\s+|das\s+)?"
    r"(?:datum\w*|zeit\w*|jahr\w*|period\w*)(?:\s*(?:filter|grenze|beschränkung|einschränkung))?\b"
    r"|\begal\s+wann\b|\baus\s+allen\s+jahren\b|\bjederzeit\b"
)


def cut_removals(text: str) -> tuple[str, frozenset[str]]:
    """``text`` without its filter removals, and the filters removed ("language", "period")."""
    removed = set()
    for name, pattern in (("language", _NO_LANGUAGE), ("period", _NO_PERIOD)):
        match = pattern.search(text)
        if match is not None:
            removed.add(name)
            text = cut_match(text, match)
    return text, frozenset(removed)
