"""Holidays with a fixed date, read as the day they fall on before the period grammar reads a question.

"What came out on Christmas 2019", "seit Neujahr", "с прошлого Рождества", "between Christmas and New Year's":
a closed class of named days whose date never moves (Christmas, Christmas Eve, New Year's Day and Eve, May Day,
Valentine's Day, Halloween; Weihnachten, Heiligabend, Silvester, Neujahr, Tag der Arbeit, Valentinstag;
Рождество, католическое Рождество, Новый год, Первомай, День святого Валентина) is rewritten as its day and
month in the message's language ("25 December", "25. Dezember", "25 декабря"), which the grammar reads with
whatever year, operator or "last" goes with it. "Last Christmas" is the latest one, as a bare day is.
Russian "Рождество" is the Orthodox 7 January; "католическое Рождество" is 25 December.
A greeting names no day: "Happy New Year", "С Новым годом", "Frohe Weihnachten", "Merry Christmas".
Movable feasts (Easter, Pentecost) are left alone: they are no fixed day a rewrite could name.
"""

from __future__ import annotations

import re

__all__ = ["HOLIDAY_WISHES", "holidays_as_days"]

_LAST = r"(?:(?:the\s+)?last\s+|прошл\w+\s+|letzte[nms]?\s+|vorige[nms]?\s+)?"
# A holiday naming a thing, not a day: "the Christmas release" (Ruby's), "Christmas tradition".
_NOT_AN_ATTRIBUTE = r"(?!\s+(?:releases?|versions?|traditions?|gifts?|presents?|editions?|релиз\w*|версии?|Release\w*))"
# A holiday's wishes: the holiday is wished, not dated (the request rules read them as a greeting too).
HOLIDAY_WISHES = (
    r"(?:merry|happy)\s+(?:new\s+year|christmas|xmas|holidays|easter)|frohe\w*\s+(?:weihnacht\w*|neujahr|ostern|feiertage)"
    r"|frohes\s+neues(?:\s+jahr)?|guten\s+rutsch|schöne\s+feiertage"
    r"|с\s+(?:наступающим(?:\s+(?:новым\s+годом|рождеством|праздник\w*))?|новым\s+годом|рождеством|праздник\w*)"
)
_GREETING = re.compile(HOLIDAY_WISHES, re.IGNORECASE)
_DAYS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(r"(?<![\w-])" + _LAST + pattern + r"(?![\w-])" + _NOT_AN_ATTRIBUTE, re.IGNORECASE), day)
    for pattern, day in (
        # English
        (r"christmas\s+eve", "24 December"), (r"(?:christmas|xmas)(?:\s+day)?", "25 December"),
        (r"new\s+year'?s\s+eve", "31 December"), (r"new\s+year'?s(?:\s+day)?|the\s+new\s+year", "1 January"),
        (r"may\s+day", "1 May"), (r"valentine'?s(?:\s+day)?", "14 February"), (r"halloween", "31 October"),
        # German
        (r"heilig(?:en)?\s*abend", "24. Dezember"), (r"weihnacht(?:en|stag)?", "25. Dezember"),
        (r"silvester", "31. Dezember"), (r"neujahr(?:stag)?", "1. Januar"), (r"tag\s+der\s+arbeit", "1. Mai"),
        (r"valentinstag", "14. Februar"),
        # Russian: the case of the rest of the phrase stays the preposition's ("с 1 января", "на 25 декабря")
        (r"католическ\w+\s+рождеств(?:о|а|у|ом|е)", "25 декабря"), (r"рождеств(?:о|а|у|ом|е)", "7 января"),
        (r"нов(?:ого|ому|ый)\s+год[ау]?", "1 января"), (r"первома\w+", "1 мая"),
        (r"(?:дн\w+\s+)?святого\s+валентина", "14 февраля"),
    )
)


def holidays_as_days(text: str) -> str:
    """``text`` with each fixed-date holiday it dates by written as its day and month (see above)."""
    if _GREETING.search(text):
        text = _GREETING.sub(lambda m: " " * len(m.group()), text)  # the greeting stays no period; keep offsets
    for pattern, day in _DAYS:
        text = pattern.sub(day, text)
    return text
