"""The period grammar's word classes in ru/en/de: months, units, relative words, seasons,
ordinals, parts of a year, decades and the operators. Inflections are read by stem + ending
sets, so "марте", "мартом", "Märzes", "Jahres", "Quartalen" are one entry each."""

from __future__ import annotations

import re

from router.reader._tokens import Token

Unit = str  # "day" | "week" | "month" | "quarter" | "half" | "year"


def _inflect(stems: dict[str, int], endings: tuple[str, ...]) -> dict[str, int]:
    return {stem + ending: value for stem, value in stems.items() for ending in endings}


_RU_MONTHS = {
    **_inflect({"январ": 1, "феврал": 2, "апрел": 4, "июн": 6, "июл": 7, "сентябр": 9, "октябр": 10,
                "ноябр": 11, "декабр": 12}, ("ь", "я", "е", "ем", "ю")),
    **_inflect({"март": 3, "август": 8}, ("", "а", "е", "ом", "у")),
    "май": 5, "мая": 5, "мае": 5, "маю": 5, "маем": 5,
}
_DE_MONTHS = {
    "januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "april": 4, "mai": 5, "juni": 6, "juli": 7,
    "august": 8, "september": 9, "oktober": 10, "november": 11, "dezember": 12,
}
_EN_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
}
FULL_MONTHS: dict[str, int] = {**_RU_MONTHS, **_DE_MONTHS, **{k + "s": v for k, v in _DE_MONTHS.items()}, **_EN_MONTHS}
_SHORT_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "mär": 3, "mrz": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "okt": 10, "nov": 11, "dec": 12, "dez": 12,
}
# Words that are months only beside a date ("may" is a verb, "Jan" a name): never an unread cue.
AMBIGUOUS_MONTHS = frozenset({"may", *_SHORT_MONTHS})


def month(fold: str) -> int | None:
    return FULL_MONTHS.get(fold) or _SHORT_MONTHS.get(fold)


UNITS: dict[str, Unit] = {
    # with the abbreviations typed in a hurry ("2 yrs ago", "past 3 mos", "last 2 wks", "3 мес назад")
    **dict.fromkeys(("day", "days", "день", "дня", "дней", "дню", "днем", "дни", "tag", "tage", "tagen", "tages"),
                    "day"),
    **dict.fromkeys(("week", "weeks", "неделя", "недели", "неделю", "неделе", "недель", "неделей", "неделям",
                     "woche", "wochen", "wk", "wks", "нед"), "week"),
    **dict.fromkeys(("month", "months", "месяц", "месяца", "месяцев", "месяце", "месяцы", "месяцам", "месяцем",
                     "monat", "monate", "monaten", "monats", "mo", "mos", "mth", "mths", "мес"), "month"),
    **dict.fromkeys(("quarter", "quarters", "квартал", "квартала", "кварталов", "квартале", "кварталы", "кварталам",
                     "quartal", "quartale", "quartalen", "quartals"), "quarter"),
    **dict.fromkeys(("halfyear", "полугодие", "полугодия", "полугодии", "полугодий", "полугодье", "halbjahr",
                     "halbjahres", "halbjahre", "halbjahren", "halbjahrs", "jahreshälfte"), "half"),
    **dict.fromkeys(("decade", "decades", "десятилетие", "десятилетия", "десятилетии", "десятилетий", "jahrzehnt",
                     "jahrzehnte", "jahrzehnten", "jahrzehnts"), "decade"),
    **dict.fromkeys(("year", "years", "год", "года", "году", "годом", "годы", "годов", "лет", "jahr", "jahre",
                     "jahren", "jahres", "jahrs", "yr", "yrs"), "year"),
}
# Plural unit words with no count ("in den letzten Jahren", "за последние годы"): a vague period,
# never this/last + one unit; left as an unread cue.
PLURAL_UNITS = frozenset({"days", "weeks", "months", "quarters", "years", "decades", "wks", "mos", "mths", "yrs", "tage", "tagen", "wochen",
                          "monate", "monaten", "quartale", "quartalen", "jahre", "jahren", "дни", "месяцы", "годы",
                          "годов", "кварталы", "jahrzehnte", "jahrzehnten", "десятилетия"})
VAGUE_COUNTS = frozenset({"few", "several", "couple", "paar", "einigen", "einige", "mehreren", "несколько", "пару",
                          "нескольких"})
HALF_WORDS = frozenset({"half", "половина", "половине", "половину", "половины", "hälfte"})
THIRD_WORDS = frozenset({"third", "треть", "трети", "третью", "drittel", "jahresdrittel"})

# Relative words: the offset from the unit that holds today (0 = this one, -1 = the previous).
_REL_STEMS: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"^(?:this|current|этот|этом|этого|эту|этой|это|текущ\w*|нынешн\w*|dies\w*|laufend\w*|aktuell\w*)$"), 0),
    (re.compile(r"^(?:позапрошл\w*|vorletzt\w*)$"), -2),
    (re.compile(r"^(?:last|past|previous|прошл\w*|предыдущ\w*|минувш\w*|прошедш\w*|letzt\w*|vorig\w*|vergangen\w*)$"), -1),
    (re.compile(r"^(?:next|coming|следующ\w*|будущ\w*|наступающ\w*|nächst\w*|kommend\w*)$"), 1),
]
# "the past N weeks", "за последние N месяцев", "in den letzten N Tagen": a window ending today.
ROLLING = re.compile(r"^(?:past|last|последн\w*|letzt\w*|vergangen\w*|recent)$")


def relative(fold: str) -> int | None:
    return next((offset for pattern, offset in _REL_STEMS if pattern.match(fold)), None)


# One-word relatives: unit and offset.
COMPOUND_RELATIVE: dict[str, tuple[Unit, int]] = {
    "vorjahr": ("year", -1), "vorjahres": ("year", -1), "vormonat": ("month", -1), "vormonats": ("month", -1),
    "vorwoche": ("week", -1), "vorquartal": ("quarter", -1), "vorquartals": ("quarter", -1),
    "heuer": ("year", 0), "ytd": ("year", 0), "jahresbeginn": ("year", 0), "jahresanfang": ("year", 0), "diesjährig": ("year", 0), "diesjährige": ("year", 0), "diesjährigen": ("year", 0),
    "today": ("day", 0), "сегодня": ("day", 0), "heute": ("day", 0),
}
_DAYS_BACK = {
    **dict.fromkeys(("yesterday", "вчера", "вчерашние", "вчерашних", "вчерашний", "gestern", "gestrige", "gestrigen"), 1),
    **dict.fromkeys(("позавчера", "позавчерашние", "позавчерашних", "позавчерашний", "vorgestern"), 2),
}


# The days of the week (Monday 0), in the forms a period phrase puts them: "since Monday", "с понедельника",
# "в прошлую пятницу", "seit Montag", "letzten Freitag".
WEEKDAYS: dict[str, int] = {
    **dict.fromkeys(("monday", "понедельник", "понедельника", "понедельнику", "понедельником", "montag", "montags"), 0),
    **dict.fromkeys(("tuesday", "вторник", "вторника", "вторнику", "вторником", "dienstag", "dienstags"), 1),
    **dict.fromkeys(("wednesday", "среда", "среду", "среды", "средой", "mittwoch", "mittwochs"), 2),
    **dict.fromkeys(("thursday", "четверг", "четверга", "четвергу", "четвергом", "donnerstag", "donnerstags"), 3),
    **dict.fromkeys(("friday", "пятница", "пятницу", "пятницы", "пятницей", "freitag", "freitags"), 4),
    **dict.fromkeys(("saturday", "суббота", "субботу", "субботы", "субботой", "samstag", "samstags", "sonnabend"), 5),
    **dict.fromkeys(("sunday", "воскресенье", "воскресенья", "воскресеньем", "sonntag", "sonntags"), 6),
}


def days_back(tokens: list[Token], i: int) -> tuple[int, int] | None:
    """ "yesterday", "позавчерашние", "the day before yesterday": days before today, and the index after."""
    words = [t.fold for t in tokens[i:i + 4]]
    if words[:3] == ["day", "before", "yesterday"]:
        return 2, i + 3
    if words and words[0] in _DAYS_BACK:
        return _DAYS_BACK[words[0]], i + 1
    return None
AGO = frozenset({"ago", "назад"})
# What may close "N units ago" in the grammar; "back" only there ("three years back"), never a cue alone
# ("bring back the posts").
AGO_AFTER = AGO | {"back"}
BEFORE_LAST = ("before", "last")  # "the year before last"

SEASONS: dict[str, int] = {
    **dict.fromkeys(("spring", "весна", "весной", "весны", "весну", "весне", "frühling", "frühjahr", "frühlings",
                     "frühjahrs"), 3),
    **dict.fromkeys(("summer", "лето", "летом", "лета", "лете", "sommer", "sommers"), 6),
    **dict.fromkeys(("autumn", "fall", "осень", "осенью", "осени", "herbst", "herbstes", "herbsts"), 9),
    **dict.fromkeys(("winter", "зима", "зимой", "зимы", "зиму", "зиме", "winters"), 12),
}
AMBIGUOUS_SEASONS = frozenset({"fall", "лета"})  # "fall back", "5 лета": not an unread cue alone

_ORDINALS: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"^(?:1|i|first|1st|перв\w*|erst\w*)$"), 1),
    (re.compile(r"^(?:2|ii|second|2nd|втор\w*|zweit\w*)$"), 2),
    (re.compile(r"^(?:3|iii|third|3rd|трет\w*|dritt\w*)$"), 3),
    (re.compile(r"^(?:4|iv|fourth|4th|четверт\w*|viert\w*)$"), 4),
]


def ordinal(fold: str) -> int | None:
    return next((n for pattern, n in _ORDINALS if pattern.match(fold)), None)


QUARTER_CODES = {"q1": 1, "q2": 2, "q3": 3, "q4": 4}
HALF_CODES = {"h1": 1, "h2": 2}

PARTS: dict[str, str] = {
    **dict.fromkeys(("early", "beginning", "start", "начало", "начале", "начала", "anfang", "beginn"), "early"),
    **dict.fromkeys(("mid", "middle", "середина", "середине", "середину", "середины", "mitte"), "mid"),
    **dict.fromkeys(("late", "end", "конец", "конце", "конца", "ende"), "late"),
}

_DECADE_WORDS = {
    "seventies": 1970, "eighties": 1980, "nineties": 1990, "noughties": 2000,
    **_inflect({"семидесят": 1970, "восьмидесят": 1980, "девяност": 1990, "двухтысячн": 2000, "нулев": 2000,
                "десят": 2010}, ("ые", "ых", "ым", "ыми")),
    **_inflect({"siebziger": 1970, "achtziger": 1980, "neunziger": 1990, "nuller": 2000, "zehner": 2010},
               ("", "n", "jahre", "jahren")),
}
_DECADE_TOKEN = re.compile(r"^(\d{2}|\d{4})(?:s|er|ern|erjahre|erjahren)$")


def decade(fold: str) -> int | None:
    """ "1990s", "90s", "2010er", "nineties", "девяностые" -> the decade's first year."""
    if fold in _DECADE_WORDS:
        return _DECADE_WORDS[fold]
    match = _DECADE_TOKEN.match(fold)
    if match is None:
        return None
    return _full_decade(match.group(1))


def _full_decade(digits: str) -> int | None:
    value = int(digits)
    if len(digits) == 2:
        value += 1900 if value >= 30 else 2000
    return value if value % 10 == 0 and 1900 <= value <= 2090 else None


def decade_number(digits: str) -> int | None:
    """ "2000" in "2000-х", "90" in "90-е": a decade named by its number and a suffix."""
    return _full_decade(digits) if digits.isdigit() and len(digits) in (2, 4) else None


DECADE_SUFFIXES = frozenset({"х", "е", "ых", "ые", "x", "s"})
DAY_SUFFIX = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)$")

# Operators. A word may be several ("с": since, or the start of "с … по …"); the grammar tries each.
RANGE_OPEN = frozenset({"between", "from", "с", "со", "между", "от", "zwischen", "von", "vom"})
RANGE_JOIN = frozenset({"and", "to", "until", "till", "through", "thru", "по", "до", "и", "bis", "und"})
SINCE = frozenset({"since", "seit", "ab", "с", "со", "starting"})
AFTER = frozenset({"after", "после", "nach"})
BEFORE = frozenset({"before", "до", "vor", "раньше", "ранее"})
UNTIL = frozenset({"until", "till", "through", "по", "bis"})
IN = frozenset({"in", "during", "within", "from", "of", "for", "on", "at", "в", "во", "за", "на", "im", "während",
                "aus", "von", "vom", "am", "um", "over", "around"})
OPERATORS = IN | SINCE | AFTER | BEFORE | UNTIL | RANGE_OPEN  # every word that can open a period phrase
ARTICLES = frozenset({"the", "dem", "den", "der", "des", "die", "das", "a"})
YEAR_WORDS = frozenset({"год", "года", "году", "годом", "годы", "годами", "годах", "г", "jahr", "jahre", "jahres", "jahrs", "year"})
