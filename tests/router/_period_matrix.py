"""The generated period matrix: anchors x operators x languages, rendered with the grammar of
each language (case, number agreement), each with the range computed here from the structured
parameters by plain calendar arithmetic -- never by the reader it tests."""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

TODAYS = (date(2026, 11, 29), date(2026, 3, 10))


@dataclass(frozen=True)
class Case:
    phrase: str
    today: date
    date_from: date | None
    date_to: date | None  # the canonical upper bound (today for a window or an open end)


# ---- calendar arithmetic, independent of router.reader ----
def last_day(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def months_back(day: date, n: int) -> date:
    total = day.year * 12 + (day.month - 1) - n
    year, month0 = total // 12, total % 12
    return date(year, month0 + 1, min(day.day, calendar.monthrange(year, month0 + 1)[1]))


def span(unit: str, day: date) -> tuple[date, date]:
    if unit == "day":
        return day, day
    if unit == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=6)
    size = {"month": 1, "quarter": 3, "half": 6, "year": 12}[unit]
    first = (day.month - 1) // size * size + 1
    return date(day.year, first, 1), last_day(day.year, first + size - 1)


def back(day: date, unit: str, n: int) -> date:
    if unit == "day":
        return day - timedelta(days=n)
    if unit == "week":
        return day - timedelta(weeks=n)
    return months_back(day, n * {"month": 1, "quarter": 3, "half": 6, "year": 12}[unit])


# ---- vocabularies ----
EN_MONTHS = [calendar.month_name[m] for m in range(1, 13)]
DE_MONTHS = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
             "November", "Dezember"]
RU_MONTHS_NOM = ["январь", "февраль", "март", "апрель", "май", "июнь", "июль", "август", "сентябрь", "октябрь",
                 "ноябрь", "декабрь"]
RU_MONTHS_GEN = ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября",
                 "ноября", "декабря"]
RU_MONTHS_PREP = ["январе", "феврале", "марте", "апреле", "мае", "июне", "июле", "августе", "сентябре", "октябре",
                  "ноябре", "декабре"]
EN_NUM = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
DE_NUM = ["einem", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn", "elf", "zwölf"]
RU_NUM_M = ["один", "два", "три", "четыре", "пять", "шесть", "семь", "восемь", "девять", "десять", "одиннадцать",
            "двенадцать"]
RU_NUM_F = ["одну", "две", *RU_NUM_M[2:]]
UNITS = ("day", "week", "month", "year")
EN_UNIT = {"day": "day", "week": "week", "month": "month", "year": "year"}
DE_UNIT_DAT = {"day": ("Tag", "Tagen"), "week": ("Woche", "Wochen"), "month": ("Monat", "Monaten"),
               "year": ("Jahr", "Jahren")}
# ru: the form after 1, after 2-4, after 5-20
RU_UNIT = {"day": ("день", "дня", "дней"), "week": ("неделю", "недели", "недель"),
           "month": ("месяц", "месяца", "месяцев"), "year": ("год", "года", "лет")}
YEARS = (2012, 2019, 2023, 2025)


def ru_count(n: int, unit: str) -> str:
    forms = RU_UNIT[unit]
    return forms[0] if n == 1 else forms[1] if 2 <= n <= 4 else forms[2]


def _year_cases(lang: str) -> Iterator[tuple[str, str, int]]:
    """(template, operator, year) per language; the operator decides the expected range."""
    forms = {
        "en": [("in {y}", "in"), ("during {y}", "in"), ("from {y}", "in"), ("{y}", "in"), ("since {y}", "since"),
               ("before {y}", "before"), ("until {y}", "until"), ("after {y}", "after"),
               ("from {y} onwards", "since"), ("{y} and later", "since"), ("in the year {y}", "in")],
        "ru": [("в {y} году", "in"), ("за {y} год", "in"), ("{y} года", "in"), ("в {y}", "in"),
               ("с {y} года", "since"), ("начиная с {y} года", "since"), ("до {y} года", "before"),
               ("после {y} года", "after"), ("за {y}", "in"), ("в течение {y} года", "in"), ("{y} г.", "in")],
        "de": [("im Jahr {y}", "in"), ("{y}", "in"), ("aus {y}", "in"), ("von {y}", "in"), ("seit {y}", "since"),
               ("ab {y}", "since"), ("vor {y}", "before"), ("bis {y}", "until"), ("nach {y}", "after"),
               ("aus dem Jahr {y}", "in"), ("im Laufe des Jahres {y}", "in")],
    }[lang]
    for template, operator in forms:
        for year in YEARS:
            yield template.format(y=year), operator, year


def _apply(operator: str, start: date, end: date, today: date) -> tuple[date | None, date | None]:
    if operator == "in":
        return start, end
    if operator == "since":
        return start, today
    if operator == "after":
        return end + timedelta(days=1), today
    if operator == "before":
        return None, start - timedelta(days=1)
    return None, end  # until


def years(lang: str) -> Iterator[Case]:
    for today in TODAYS:
        for phrase, operator, year in _year_cases(lang):
            yield Case(phrase, today, *_apply(operator, date(year, 1, 1), date(year, 12, 31), today))


def year_ranges(lang: str) -> Iterator[Case]:
    forms = {
        "en": ["from {a} to {b}", "between {a} and {b}", "{a}-{b}", "{a} to {b}", "from {a} through {b}"],
        "ru": ["с {a} по {b} год", "с {a} по {b} годы", "между {a} и {b} годами", "от {a} до {b} года", "{a}–{b}"],
        "de": ["von {a} bis {b}", "zwischen {a} und {b}", "{a} bis {b}", "{a}–{b}", "von {a} bis zum Jahr {b}"],
    }[lang]
    for a, b in ((2010, 2013), (2015, 2018), (2020, 2022), (2023, 2025)):
        for template in forms:
            yield Case(template.format(a=a, b=b), TODAYS[0], date(a, 1, 1), date(b, 12, 31))


def months(lang: str) -> Iterator[Case]:
    for today in TODAYS:
        for m in range(1, 13):
            for year in (2019, 2024):
                start, end = date(year, m, 1), last_day(year, m)
                forms = {
                    "en": [(f"in {EN_MONTHS[m - 1]} {year}", "in"), (f"{EN_MONTHS[m - 1]} {year}", "in"),
                           (f"since {EN_MONTHS[m - 1]} {year}", "since"), (f"before {EN_MONTHS[m - 1]} {year}", "before")],
                    "ru": [(f"в {RU_MONTHS_PREP[m - 1]} {year} года", "in"), (f"за {RU_MONTHS_NOM[m - 1]} {year}", "in"),
                           (f"с {RU_MONTHS_GEN[m - 1]} {year} года", "since"),
                           (f"до {RU_MONTHS_GEN[m - 1]} {year} года", "before")],
                    "de": [(f"im {DE_MONTHS[m - 1]} {year}", "in"), (f"{DE_MONTHS[m - 1]} {year}", "in"),
                           (f"seit {DE_MONTHS[m - 1]} {year}", "since"), (f"vor {DE_MONTHS[m - 1]} {year}", "before")],
                }[lang]
                for phrase, operator in forms:
                    yield Case(phrase, today, *_apply(operator, start, end, today))


def month_of_relative_year(lang: str) -> Iterator[Case]:
    for today in TODAYS:
        for m in range(1, 13):
            for offset in (0, -1):
                year = today.year + offset
                if lang == "en":
                    phrases = [f"in {EN_MONTHS[m - 1]} {'this' if offset == 0 else 'last'} year",
                               f"in {EN_MONTHS[m - 1]} of {'this' if offset == 0 else 'last'} year"]
                elif lang == "ru":
                    phrases = [f"в {RU_MONTHS_PREP[m - 1]} {'этого' if offset == 0 else 'прошлого'} года"]
                else:
                    phrases = [f"im {DE_MONTHS[m - 1]} {'dieses' if offset == 0 else 'letzten'} Jahres"]
                for phrase in phrases:
                    yield Case(phrase, today, date(year, m, 1), last_day(year, m))


def ago(lang: str) -> Iterator[Case]:
    for today in TODAYS:
        for unit in UNITS:
            for n in range(1, 13):
                if lang == "en":
                    plural = EN_UNIT[unit] + ("s" if n > 1 else "")
                    phrases = [f"{EN_NUM[n - 1]} {plural} ago", f"{n} {plural} ago"]
                elif lang == "ru":
                    words = RU_NUM_F if unit == "week" else RU_NUM_M
                    phrases = [f"{words[n - 1]} {ru_count(n, unit)} назад", f"{n} {ru_count(n, unit)} назад"]
                else:
                    word = ("einer" if unit == "week" else "einem") if n == 1 else DE_NUM[n - 1]
                    phrases = [f"vor {word} {DE_UNIT_DAT[unit][0 if n == 1 else 1]}"]
                for phrase in phrases:
                    yield Case(phrase, today, *span(unit, back(today, unit, n)))


def rolling(lang: str) -> Iterator[Case]:
    for today in TODAYS:
        for unit in UNITS:
            for n in range(2, 13):
                if lang == "en":
                    phrases = [f"the past {EN_NUM[n - 1]} {unit}s", f"the last {n} {unit}s", f"over the past {n} {unit}s"]
                elif lang == "ru":
                    words = RU_NUM_F if unit == "week" else RU_NUM_M
                    phrases = [f"за последние {words[n - 1]} {ru_count(n, unit)}",
                               f"за последние {n} {ru_count(n, unit)}"]
                else:
                    phrases = [f"in den letzten {DE_NUM[n - 1]} {DE_UNIT_DAT[unit][1]}",
                               f"in den letzten {n} {DE_UNIT_DAT[unit][1]}"]
                for phrase in phrases:
                    yield Case(phrase, today, back(today, unit, n), today)


def relative_units(lang: str) -> Iterator[Case]:
    forms = {
        "en": {("month", 0): ["this month"], ("month", -1): ["last month", "the previous month"],
               ("month", -2): ["the month before last"], ("quarter", 0): ["this quarter"],
               ("quarter", -1): ["last quarter", "the previous quarter"], ("half", -1): ["the previous half-year"],
               ("year", 0): ["this year", "the current year"], ("year", -1): ["last year", "the previous year"],
               ("year", -2): ["the year before last"]},
        "ru": {("month", 0): ["в этом месяце", "за текущий месяц"], ("month", -1): ["в прошлом месяце",
               "за предыдущий месяц"], ("month", -2): ["в позапрошлом месяце"], ("quarter", 0): ["в этом квартале"],
               ("quarter", -1): ["в прошлом квартале", "в предыдущем квартале"],
               ("half", -1): ["в прошлом полугодии"], ("year", 0): ["в этом году", "за текущий год"],
               ("year", -1): ["в прошлом году", "за прошлый год"], ("year", -2): ["в позапрошлом году"]},
        "de": {("month", 0): ["diesen Monat", "im laufenden Monat"], ("month", -1): ["letzten Monat",
               "im vorigen Monat"], ("month", -2): ["im vorletzten Monat"], ("quarter", 0): ["in diesem Quartal"],
               ("quarter", -1): ["im letzten Quartal", "im vorigen Quartal"], ("half", -1): ["im vorigen Halbjahr"],
               ("year", 0): ["dieses Jahr", "im laufenden Jahr"], ("year", -1): ["letztes Jahr", "im vergangenen Jahr"],
               ("year", -2): ["im vorletzten Jahr"]},
    }[lang]
    since = {"en": "since {p}", "ru": "с {p}", "de": "seit {p}"}[lang]
    since_forms = {"en": {"last month": "last month", "last year": "last year", "last quarter": "last quarter"},
                   "ru": {"прошлого месяца": "", "прошлого года": "", "прошлого квартала": ""},
                   "de": {"letztem Monat": "", "letztem Jahr": "", "dem letzten Quartal": ""}}[lang]
    units = {"last month": "month", "last year": "year", "last quarter": "quarter", "прошлого месяца": "month",
             "прошлого года": "year", "прошлого квартала": "quarter", "letztem Monat": "month", "letztem Jahr": "year",
             "dem letzten Quartal": "quarter"}
    for today in TODAYS:
        for (unit, offset), phrases in forms.items():
            start, end = span(unit, back(today, unit, -offset))
            for phrase in phrases:
                yield Case(phrase, today, start, end)
        for words in since_forms:
            yield Case(since.format(p=words), today, span(units[words], back(today, units[words], 1))[0], today)


EN_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9}
RU_SEASONS = {"весной": 3, "летом": 6, "осенью": 9}
DE_SEASONS = {"Frühling": 3, "Frühjahr": 3, "Sommer": 6, "Herbst": 9}


def seasons(lang: str) -> Iterator[Case]:
    for year in YEARS:
        table = {"en": EN_SEASONS, "ru": RU_SEASONS, "de": DE_SEASONS}[lang]
        for word, first in table.items():
            start, end = date(year, first, 1), last_day(year, first + 2)
            phrases = {"en": [f"{word} {year}", f"in the {word} of {year}"], "ru": [f"{word} {year} года",
                       f"{word} {year}"], "de": [f"im {word} {year}", f"{word} {year}"]}[lang]
            for phrase in phrases:
                yield Case(phrase, TODAYS[0], start, end)


ORD_EN = ["first", "second", "third", "fourth"]
ORD_RU_PREP = ["первом", "втором", "третьем", "четвёртом"]
ORD_RU_ACC = ["первый", "второй", "третий", "четвёртый"]
ORD_DE = ["ersten", "zweiten", "dritten", "vierten"]


def quarters_and_halves(lang: str) -> Iterator[Case]:
    for year in YEARS:
        for q in range(1, 5):
            start, end = date(year, 3 * q - 2, 1), last_day(year, 3 * q)
            phrases = {"en": [f"Q{q} {year}", f"the {ORD_EN[q - 1]} quarter of {year}", f"in Q{q} of {year}"],
                       "ru": [f"в {ORD_RU_PREP[q - 1]} квартале {year} года", f"за {ORD_RU_ACC[q - 1]} квартал {year}"],
                       "de": [f"im {ORD_DE[q - 1]} Quartal {year}", f"im {q}. Quartal {year}", f"Q{q} {year}"]}[lang]
            for phrase in phrases:
                yield Case(phrase, TODAYS[0], start, end)
        for h in (1, 2):
            start, end = date(year, 6 * h - 5, 1), last_day(year, 6 * h)
            phrases = {"en": [f"H{h} {year}", f"the {ORD_EN[h - 1]} half of {year}"],
                       "ru": [f"в {ORD_RU_PREP[h - 1]} полугодии {year} года",
                              f"в {['первой', 'второй'][h - 1]} половине {year} года"],
                       "de": [f"im {ORD_DE[h - 1]} Halbjahr {year}", f"in der {ORD_DE[h - 1]} Jahreshälfte {year}"]}[lang]
            for phrase in phrases:
                yield Case(phrase, TODAYS[0], start, end)


def decades(lang: str) -> Iterator[Case]:
    for first in (1990, 2000, 2010):
        short = str(first)[2:]
        phrases = {"en": [f"the {first}s", f"in the {short}s", f"during the {first}s"],
                   "ru": [f"в {first}-х", f"в {short}-е", f"в {first}-х годах"],
                   "de": [f"in den {first}er Jahren", f"die {first}er", f"in den {short}ern"]}[lang]
        for phrase in phrases:
            yield Case(phrase, TODAYS[0], date(first, 1, 1), date(first + 9, 12, 31))
    words = {"en": [("the nineties", 1990), ("the noughties", 2000)],
             "ru": [("в девяностых", 1990), ("в нулевые", 2000), ("в десятые годы", 2010), ("в десятых годах", 2010)],
             "de": [("in den Neunzigern", 1990), ("in den Nullerjahren", 2000), ("in den Zehnerjahren", 2010)]}[lang]
    for word, first in words:
        yield Case(word, TODAYS[0], date(first, 1, 1), date(first + 9, 12, 31))


def day_ranges(lang: str) -> Iterator[Case]:
    for year, m, a, b in ((2025, 3, 3, 17), (2026, 2, 1, 14), (2024, 10, 10, 31), (2023, 6, 2, 9)):
        phrases = {"en": [f"from {a} to {b} {EN_MONTHS[m - 1]} {year}", f"between {a} and {b} {EN_MONTHS[m - 1]} {year}"],
                   "ru": [f"с {a} по {b} {RU_MONTHS_GEN[m - 1]} {year} года", f"с {a} по {b} {RU_MONTHS_GEN[m - 1]} {year}"],
                   "de": [f"vom {a}. bis {b}. {DE_MONTHS[m - 1]} {year}", f"vom {a}. bis zum {b}. {DE_MONTHS[m - 1]} {year}"]
                   }[lang]
        for phrase in phrases:
            yield Case(phrase, TODAYS[0], date(year, m, a), date(year, m, b))


def month_ranges(lang: str) -> Iterator[Case]:
    for year, a, b in ((2025, 3, 5), (2024, 1, 4), (2023, 9, 12)):
        phrases = {"en": [f"from {EN_MONTHS[a - 1]} to {EN_MONTHS[b - 1]} {year}",
                          f"between {EN_MONTHS[a - 1]} and {EN_MONTHS[b - 1]} {year}"],
                   "ru": [f"с {RU_MONTHS_GEN[a - 1]} по {RU_MONTHS_NOM[b - 1]} {year} года"],
                   "de": [f"von {DE_MONTHS[a - 1]} bis {DE_MONTHS[b - 1]} {year}",
                          f"zwischen {DE_MONTHS[a - 1]} und {DE_MONTHS[b - 1]} {year}"]}[lang]
        for phrase in phrases:
            yield Case(phrase, TODAYS[0], date(year, a, 1), last_day(year, b))


def fractions(lang: str) -> Iterator[Case]:
    for today in TODAYS:
        phrases = {"en": ["the past half-year", "the last half year", "over the past half a year"],
                   "ru": ["за последние полгода", "за последние полтора года"],
                   "de": ["im letzten halben Jahr", "seit einem halben Jahr"]}[lang]
        for phrase in phrases:
            months_n = 18 if "полтора" in phrase else 6
            yield Case(phrase, today, months_back(today, months_n), today)


def ordinal_parts(lang: str) -> Iterator[Case]:
    """A half of a month (days 1-15, 16-end) and a third of a year (four months), named by an ordinal."""
    for year in YEARS:
        for m in (2, 3, 9):
            for h in (1, 2):
                start = date(year, m, 1 if h == 1 else 16)
                end = date(year, m, 15) if h == 1 else last_day(year, m)
                phrases = {"en": [f"the {ORD_EN[h - 1]} half of {EN_MONTHS[m - 1]} {year}",
                                  f"in the {ORD_EN[h - 1]} half of {EN_MONTHS[m - 1]} {year}"],
                           "ru": [f"в {['первой', 'второй'][h - 1]} половине {RU_MONTHS_GEN[m - 1]} {year} года",
                                  f"за {['первую', 'вторую'][h - 1]} половину {RU_MONTHS_GEN[m - 1]} {year}"],
                           "de": [f"in der {ORD_DE[h - 1]} Hälfte des {DE_MONTHS[m - 1]} {year}",
                                  f"in der {ORD_DE[h - 1]} Hälfte {DE_MONTHS[m - 1]} {year}"]}[lang]
                for phrase in phrases:
                    yield Case(phrase, TODAYS[0], start, end)
        for t in (1, 2, 3):
            start, end = date(year, 4 * t - 3, 1), last_day(year, 4 * t)
            phrases = {"en": [f"the {ORD_EN[t - 1]} third of {year}"],
                       "ru": [f"за {['первую', 'вторую', 'третью'][t - 1]} треть {year} года"],
                       "de": [f"im {ORD_DE[t - 1]} Drittel {year}"]}[lang]
            for phrase in phrases:
                yield Case(phrase, TODAYS[0], start, end)


def edges(lang: str) -> Iterator[Case]:
    """The first or last N months of a year, N weeks or days of a month or a year."""
    for year in YEARS:
        for n in (1, 2, 3):
            first_end, last_start = last_day(year, n), date(year, 13 - n, 1)
            en_m = "month" if n == 1 else "months"
            ru_m = {1: "первый месяц", 2: "первые два месяца", 3: "первые три месяца"}[n]
            ru_last = {1: "последний месяц", 2: "последние два месяца", 3: "последние три месяца"}[n]
            de_m = {1: ("im ersten Monat", "im letzten Monat"), 2: ("in den ersten zwei Monaten", "in den letzten zwei Monaten"),
                    3: ("in den ersten drei Monaten", "in den letzten drei Monaten")}[n]
            num = EN_NUM[n - 1]
            firsts = {"en": [f"the first {num} {en_m} of {year}" if n > 1 else f"the first month of {year}"],
                      "ru": [f"за {ru_m} {year} года"], "de": [f"{de_m[0]} {year}", f"{de_m[0]} des Jahres {year}"]}[lang]
            lasts = {"en": [f"the last {num} {en_m} of {year}" if n > 1 else f"the last month of {year}"],
                     "ru": [f"за {ru_last} {year} года"], "de": [f"{de_m[1]} {year}", f"{de_m[1]} des Jahres {year}"]}[lang]
            for phrase in firsts:
                yield Case(phrase, TODAYS[0], date(year, 1, 1), first_end)
            for phrase in lasts:
                yield Case(phrase, TODAYS[0], last_start, date(year, 12, 31))
        for m in (2, 3, 10):
            for weeks in (1, 2):
                start, end = date(year, m, 1), date(year, m, 7 * weeks)
                last_end = last_day(year, m)
                last_start = last_end - timedelta(days=7 * weeks - 1)
                en_w = "week" if weeks == 1 else "two weeks"
                stretches = {"en": [(f"the first {en_w} of {EN_MONTHS[m - 1]} {year}", start, end),
                                  (f"the last {en_w} of {EN_MONTHS[m - 1]} {year}", last_start, last_end)],
                           "ru": [(f"в {'первую неделю' if weeks == 1 else 'первые две недели'} {RU_MONTHS_GEN[m - 1]} {year} года", start, end),
                                  (f"в {'последнюю неделю' if weeks == 1 else 'последние две недели'} {RU_MONTHS_GEN[m - 1]} {year} года", last_start, last_end)],
                           "de": [(f"in der ersten Woche im {DE_MONTHS[m - 1]} {year}" if weeks == 1
                                   else f"in den ersten zwei Wochen im {DE_MONTHS[m - 1]} {year}", start, end),
                                  (f"in der letzten Woche im {DE_MONTHS[m - 1]} {year}" if weeks == 1
                                   else f"in den letzten zwei Wochen im {DE_MONTHS[m - 1]} {year}", last_start, last_end)]}[lang]
                for phrase, a, b in stretches:
                    yield Case(phrase, TODAYS[0], a, b)
            days = 10
            first_days = {"en": f"the first {days} days of {EN_MONTHS[m - 1]} {year}",
                          "ru": f"за первые {days} дней {RU_MONTHS_GEN[m - 1]} {year} года",
                          "de": f"in den ersten {days} Tagen im {DE_MONTHS[m - 1]} {year}"}[lang]
            yield Case(first_days, TODAYS[0], date(year, m, 1), date(year, m, days))


def month_years_ago(lang: str) -> Iterator[Case]:
    """A month of the year N years back: "in March two years ago", "im Mai vor drei Jahren"."""
    for today in TODAYS:
        for n in (1, 2, 3):
            year = today.year - n
            for m in (3, 5, 12):
                en = "a year ago" if n == 1 else f"{EN_NUM[n - 1]} years ago"
                ru = "год назад" if n == 1 else f"{RU_NUM_M[n - 1]} {ru_count(n, 'year')} назад"
                de = "vor einem Jahr" if n == 1 else f"vor {DE_NUM[n - 1]} Jahren"
                phrase = {"en": f"in {EN_MONTHS[m - 1]} {en}", "ru": f"в {RU_MONTHS_PREP[m - 1]} {ru}",
                          "de": f"im {DE_MONTHS[m - 1]} {de}"}[lang]
                yield Case(phrase, today, date(year, m, 1), last_day(year, m))


def winters(lang: str) -> Iterator[Case]:
    """Winter Y, named by the year of its January: December Y-1 to February Y."""
    for year in YEARS:
        phrase = {"en": f"winter {year}", "ru": f"зимой {year} года", "de": f"im Winter {year}"}[lang]
        yield Case(phrase, TODAYS[0], date(year - 1, 12, 1), last_day(year, 2))
        # the winter named by both its years: "winter 2013/14", "зимой 2013–2014", "im Winter 2013/2014"
        pair = {"en": f"in the winter of {year - 1}/{str(year)[2:]}", "ru": f"зимой {year - 1}–{year}",
                "de": f"im Winter {year - 1}/{year}"}[lang]
        yield Case(pair, TODAYS[0], date(year - 1, 12, 1), last_day(year, 2))


# Counts past twelve, spelled by num2words (an independent speller): "the past twenty-five days",
# "за последние сорок пять дней", "vor dreizehn Wochen". Russian agreement: 21, 31 … take the singular,
# 22-24 … the genitive singular, the rest (11-19 included) the genitive plural.
LARGE_COUNTS = (13, 14, 15, 18, 20, 21, 24, 25, 30, 31, 45, 60, 90)


def _ru_agree(n: int, unit: str) -> str:
    forms = RU_UNIT[unit]
    if n % 10 == 1 and n % 100 != 11:
        return forms[0]
    return forms[1] if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14 else forms[2]


def large_counts(lang: str) -> Iterator[Case]:
    from num2words import num2words

    for today in TODAYS:
        for unit in ("day", "week", "month"):
            for n in LARGE_COUNTS:
                word = num2words(n, lang=lang)
                if lang == "ru" and unit == "week":  # feminine: "двадцать одну неделю", "двадцать две недели"
                    *tens, ones = word.split()
                    word = " ".join([*tens, {"один": "одну", "два": "две"}.get(ones, ones)])
                rolling_phrase, ago_phrase = {
                    "en": (f"the past {word} {unit}s", f"{word} {unit}s ago"),
                    "ru": (f"за последние {word} {_ru_agree(n, unit)}", f"{word} {_ru_agree(n, unit)} назад"),
                    "de": (f"in den letzten {word} {DE_UNIT_DAT[unit][1]}", f"vor {word} {DE_UNIT_DAT[unit][1]}"),
                }[lang]
                yield Case(rolling_phrase, today, back(today, unit, n), today)
                yield Case(ago_phrase, today, *span(unit, back(today, unit, n)))


def comparisons(lang: str) -> Iterator[Case]:
    """ "older than 2019" (before it), "newer than March 2023" (after it), "no later than 2012" (to its end)."""
    forms = {
        "en": [("older than {p}", "before"), ("earlier than {p}", "before"), ("newer than {p}", "after"),
               ("later than {p}", "after"), ("more recent than {p}", "after"), ("no later than {p}", "until"),
               ("no earlier than {p}", "since"), ("not earlier than {p}", "since")],
        "ru": [("старше {p}", "before"), ("раньше {p}", "before"), ("новее {p}", "after"), ("позже {p}", "after"),
               ("позднее {p}", "after"), ("не позднее {p}", "until"), ("не раньше {p}", "since"),
               ("не ранее {p}", "since")],
        "de": [("älter als {p}", "before"), ("früher als {p}", "before"), ("neuer als {p}", "after"),
               ("später als {p}", "after"), ("jünger als {p}", "after"), ("nicht später als {p}", "until"),
               ("nicht früher als {p}", "since")],
    }[lang]
    periods = [(2019, None), (2012, None), (2023, 3), (2021, 10)]
    for template, operator in forms:
        for year, month in periods:
            if month is None:
                named = {"en": str(year), "ru": f"{year} года", "de": str(year)}[lang]
                start, end = date(year, 1, 1), date(year, 12, 31)
            else:
                named = {"en": f"{EN_MONTHS[month - 1]} {year}", "ru": f"{RU_MONTHS_GEN[month - 1]} {year} года",
                         "de": f"{DE_MONTHS[month - 1]} {year}"}[lang]
                start, end = date(year, month, 1), last_day(year, month)
            yield Case(template.format(p=named), TODAYS[0], *_apply(operator, start, end, TODAYS[0]))


def counted_windows(lang: str) -> Iterator[Case]:
    """ "за три последних месяца" (the count first), "the previous two years" (a count makes "previous"
    a window to today), "до марта 2020 года включительно" (an inclusive end after its period)."""
    today = TODAYS[0]
    for n in (2, 3, 5):
        for unit in ("week", "month", "year"):
            if lang == "en":
                phrases = [f"the previous {EN_NUM[n - 1]} {unit}s", f"the preceding {n} {unit}s"]
            elif lang == "ru":
                words = RU_NUM_F if unit == "week" else RU_NUM_M
                phrases = [f"за {words[n - 1]} последних {ru_count(n, unit) if n > 4 else RU_UNIT[unit][1]}",
                           f"за предыдущие {words[n - 1]} {ru_count(n, unit)}"]
            else:
                phrases = [f"in den vorigen {DE_NUM[n - 1]} {DE_UNIT_DAT[unit][1]}",
                           f"in den vergangenen {n} {DE_UNIT_DAT[unit][1]}"]
            for phrase in phrases:
                yield Case(phrase, today, back(today, unit, n), today)
    inclusive = {"en": "until March {y} inclusive", "ru": "до марта {y} года включительно",
                 "de": "bis März {y} einschließlich"}[lang]
    to_the_end = {"en": "before the end of {y}", "ru": "до конца {y} года", "de": "vor Ende {y}"}[lang]
    for year in YEARS:
        yield Case(inclusive.format(y=year), today, None, last_day(year, 3))
        yield Case(to_the_end.format(y=year), today, None, date(year, 12, 31))


def nth_units(lang: str) -> Iterator[Case]:
    """ "the second week of March 2025" (days 8-14, as the first week is days 1-7), "the third month of
    2024" (March)."""
    en_ord = ["second", "third", "fourth"]
    ru_week = ["вторую неделю", "третью неделю", "четвёртую неделю"]
    de_week = ["zweiten Woche", "dritten Woche", "vierten Woche"]
    ru_month = ["второй месяц", "третий месяц", "четвёртый месяц"]
    de_month = ["zweiten Monat", "dritten Monat", "vierten Monat"]
    for year in YEARS:
        for k, n in enumerate((2, 3, 4)):
            for m in (2, 5, 11):
                start = date(year, m, 1) + timedelta(days=7 * (n - 1))
                phrase = {"en": f"the {en_ord[k]} week of {EN_MONTHS[m - 1]} {year}",
                          "ru": f"за {ru_week[k]} {RU_MONTHS_GEN[m - 1]} {year} года",
                          "de": f"in der {de_week[k]} im {DE_MONTHS[m - 1]} {year}"}[lang]
                yield Case(phrase, TODAYS[0], start, start + timedelta(days=6))
            phrase = {"en": f"the {en_ord[k]} month of {year}", "ru": f"за {ru_month[k]} {year} года",
                      "de": f"im {de_month[k]} des Jahres {year}"}[lang]
            yield Case(phrase, TODAYS[0], date(year, n, 1), last_day(year, n))


def ranges_to_now(lang: str) -> Iterator[Case]:
    """ "from 2020 to now", "с марта 2024 года по настоящее время", "von 2020 bis jetzt": to today."""
    forms = {
        "en": ["from {a} to now", "from {a} to date", "from {a} until the present", "between {a} and now",
               "{a} to now"],
        "ru": ["с {a} по настоящее время", "с {a} по сей день", "с {a} по наши дни", "с {a} до настоящего времени"],
        "de": ["von {a} bis jetzt", "von {a} bis dato", "zwischen {a} und jetzt", "seit {a} bis heute"],
    }[lang]
    for today in TODAYS:
        for year, month in ((2020, None), (2024, 3), (2015, None)):
            if month is None:
                named = {"en": str(year), "ru": f"{year} года", "de": str(year)}[lang]
            else:
                named = {"en": f"{EN_MONTHS[month - 1]} {year}", "ru": f"{RU_MONTHS_GEN[month - 1]} {year} года",
                         "de": f"{DE_MONTHS[month - 1]} {year}"}[lang]
            for template in forms:
                yield Case(template.format(a=named), today, date(year, month or 1, 1), today)


GENERATORS = (years, year_ranges, months, month_of_relative_year, ago, rolling, relative_units, seasons,
              quarters_and_halves, ordinal_parts, decades, day_ranges, month_ranges, fractions, edges,
              month_years_ago, winters, large_counts, comparisons, counted_windows, ranges_to_now, nth_units)


def cases(lang: str) -> list[Case]:
    return [case for generate in GENERATORS for case in generate(lang)]
