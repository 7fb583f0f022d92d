"""The follow-up grammar's page and page size (issue 28): "page 3", "3rd page", "next", "previous
page", "50 per page", "по 10 на странице", "10 results", "nur 10 Stück", "just 5", "ещё 20",
"show me 25 at once", "fewer per page, like 5", a number alone ("15"), a move relative to the
current page ("two pages further", "на две страницы вперёд", "eine Seite zurück").

A page size is a number with what makes it one: a page-size phrase ("per page", "на странице",
"at once", "page size") anywhere in the follow-up (the one number there is the size), a count
noun after it ("10 results", "5 штук"), a word of quantity before it ("just 5", "nur 10",
"top 10", "первые 10"), "more" beside it ("ещё 20", "20 more": the next page when it is the page
size already), or nothing else at all (a number of 5 or more alone; a smaller one may be a page
and is left to the model).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from router.reader import NUMBER_WORD_ALTERNATION, NUMBER_WORDS, cut_match, number_value
from router.reader import words_pattern as _r

PAGE_WORDS = ("page", "pages", "seite", "seiten", "страница", "страницу", "странице", "страницы", "стр")
STEP_WORDS = {**dict.fromkeys(("next", "following", "следующая", "следующую", "дальше", "nächste", "weiter"), "next"),
              **dict.fromkeys(("previous", "предыдущая", "предыдущую", "vorherige", "vorige"), "previous")}
_PAGE = r"(?:pages?|pgs?|seiten?|страниц\w*|стр\.?)"
_WORDS = NUMBER_WORD_ALTERNATION
_NUMBER = r"(?P<n>\d{1,7}|" + _WORDS + r")"
_NUM = r"(?:\d{1,7}|" + _WORDS + r")"
# A count as a quantity: digits or a numeral of two or more ("the first one" is an article, not a size).
_SIZE = r"(?P<n>\d{1,7}|" + "|".join(sorted((w for w, v in NUMBER_WORDS.items() if len(w) > 2 and v >= 2), key=len,
                                            reverse=True)) + r")"
# "50 per page", "по 10 на странице", "5 pro Seite", "10 results a page", "10 auf einer Seite", "10/page".
_SIZE_AFTER_NUMBER = _r(
    r"(?<!\w)" + _NUMBER + r"(?:\s+(?:\w+\s+)?(?:per|a|each|pro|je|на|в|за|auf)\s+"
    r"(?:одной\s+|одну\s+|each\s+|one\s+|einer\s+|eine\s+)?|\s*/\s*)" + _PAGE + r"(?!\w)"
)
# "per page", "at once", "page size" anywhere: the one number beside it is the size ("per page: 10",
# "fewer per page, like 5"). Not "на странице"/"auf Seite": "на страницу 3" is the third page.
_SIZE_PHRASE = _r(
    r"\b(?:per|pro|je)\s+(?:one\s+|each\s+|einer\s+)?" + _PAGE + r"\b"
    r"|\bat\s+(?:a\s+time|once)\b|(?<!\w)за\s+раз(?!\w)|\bauf\s+einmal\b"
    r"|\bpage\s*size\b|\bpagesize\b|(?<!\w)размер\w*\s+страниц\w*|\bseitengröße\b"
)
_COUNT_NOUN = (r"(?:results?|items?|articles?|posts?|entries|hits|ones|stories|штук[иа]?|статей|стать[июя]|"
               r"результат\w*|пост(?:ов|а)?|материал\w*|публикаци\w*|ergebnisse?|treffer|artikel|beitr[äa]ge?|"
               r"stück|einträge|meldungen)")
_COUNTED = _r(r"(?<!\w)" + _SIZE + r"\s+" + _COUNT_NOUN + r"(?!\w)")
_QUANTITY = _r(r"(?<!\w)(?:just|only|top|first|the\s+first|max|maximum|at\s+most|up\s+to|no\s+more\s+than|nur"
               r"|die\s+ersten|ersten|höchstens|maximal|max\.|только|лишь|первые|по|максимум|не\s+больше|не\s+более)\s+"
               + _SIZE + r"(?!\w)")
_MORE_COUNT = _r(r"(?<!\w)(?:ещ[её]|more|another|noch|weitere)\s+" + _SIZE + r"(?!\w)"
                 r"|(?<!\w)" + _SIZE.replace("?P<n>", "?P<m>") + r"\s+(?:more|mehr|weitere)(?!\w)")
_ANY_NUMBER = _r(r"(?<![\w.])" + _NUM + r"(?![\w.])")
_MIN_ALONE = 5  # "3" alone may be the third page: the model reads it
# "page 3", "страница 3", "Seite 3", "3rd page", "третья страница".
_PAGE_NUMBER = _r(
    r"\b" + _PAGE + r"\s*(?:№|nr\.?|no\.?|number|номер)?\s*" + _NUMBER + r"\b"
    r"|\b(?P<o>\d{1,4}(?:st|nd|rd|th|-?[яюйе]|\.)?|first|second|third|fourth|fifth|перв\w+|втор\w+|трет\w+"
    r"|четв[её]рт\w+|пят\w+|erste\w*|zweite\w*|dritte\w*|vierte\w*|fünfte\w*"
    r"|sixth|seventh|eighth|ninth|tenth|(?:шест|седьм|восьм|девят|десят)(?:ая|ую|ой|ое|ый|ий|ом)"
    r"|sechste\w*|siebte\w*|achte\w*|neunte\w*|zehnte\w*)\s+" + _PAGE
)
# "one more page", "ещё одну страницу", "noch eine Seite": the next page.
_NEXT = _r(r"\b(?:next|following|следующ\w*|дальше|nächste\w*|weitere?)\s*" + _PAGE + r"?"
           r"|\b(?:one\s+more|another)\s+" + _PAGE + r"|(?<!\w)ещ[её]\s+одн\w*\s+" + _PAGE
           + r"|\bnoch\s+eine\s+" + _PAGE)
_PREVIOUS = _r(r"\b(?:previous|prev|preceding|back\s+a|предыдущ\w*|прошл\w*|vorherige\w*|vorige\w*|zurück)\s*"
               + _PAGE + r"?")
_PAGE_RE = _r(_PAGE)
# A move by a count of pages and its direction, either side: "two pages ahead", "back 3 pages",
# "на две страницы вперёд", "вперёд на 2 страницы", "zwei Seiten weiter", "eine Seite zurück".
# The count is optional ("a page back", "страницу назад"); it is never a page number here.
_FORWARD = r"(?:further|ahead|forwards?|on|later|onwards?|вперёд|вперед|дальше|weiter|vor|vorwärts|nach\s+vorne)"
_BACKWARD = r"(?:back|backwards?|earlier|before|назад|обратно|zurück|rückwärts)"
_COUNT = r"(?:(?P<c>\d{1,3}|" + _WORDS + r"|a|one|an|eine|ein|одну|на\s+(?:\d{1,3}|" + _WORDS + r"))\s+)?"
_MOVE = _r(
    r"(?<!\w)(?:на\s+)?" + _COUNT + _PAGE + r"\s+(?P<d>" + _FORWARD + "|" + _BACKWARD + r")(?!\w)"
    r"|(?<!\w)(?P<d2>forwards?|ahead|вперёд|вперед|дальше|weiter|vor|vorwärts|back|backwards?|назад|zurück)\s+(?:на\s+|by\s+|um\s+)?"
    + _COUNT.replace("?P<c>", "?P<c2>") + _PAGE + r"(?!\w)"
)
_ORDINAL_WORDS = {
    1: ("first", "перв", "erst"), 2: ("second", "втор", "zweit"), 3: ("third", "трет", "dritt"),
    4: ("fourth", "четв", "viert"), 5: ("fifth", "пят", "fünft"), 6: ("sixth", "шест", "sechst"),
    7: ("seventh", "седьм", "siebt"), 8: ("eighth", "восьм", "acht"), 9: ("ninth", "девят", "neunt"),
    10: ("tenth", "десят", "zehnt"),
}


def read_paging(text: str, previous: dict[str, Any], filler: Callable[[str], bool]) -> tuple[str, dict[str, Any]]:
    """The page and page size ``text`` names, and the text without them (``filler``: a word that
    says nothing, so a number beside nothing but fillers stands alone). ``unread``: a page-size
    phrase with no one number ("more per page"), for the model."""
    found: dict[str, Any] = {}
    text = _page_size(text, previous, found)
    current = previous.get("page") or 1
    number = _PAGE_NUMBER.search(text)
    step = _NEXT.search(text) or _PREVIOUS.search(text)
    if number is not None and _counts_pages(number):
        found["unread"] = True  # "10 pages": how many, not which
    elif number is not None:
        found["page"] = number_value(number.group("n")) if number.group("n") else _ordinal(number.group("o"))
        text = cut_match(text, number)
    elif step is not None and (step.re is _NEXT or _PAGE_RE.search(step.group(0)) or len(text.split()) <= 2):
        found["page"] = current + 1 if step.re is _NEXT else max(1, current - 1)
        text = cut_match(text, step)
    if "pageSize" not in found and "unread" not in found:
        text = _counted_size(text, previous, found, filler)
    return text, {k: v for k, v in found.items() if v is not None}


def read_page_move(text: str, previous: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A move by pages ("two pages further") and the text without it, read before the period
    reader takes "назад"/"back" for a period's ("две недели назад"). ``unread``: a count not read."""
    move = _MOVE.search(text)
    if move is None or "page" not in previous:
        return text, {}
    page = _moved(move, previous.get("page") or 1)
    return cut_match(text, move), {"page": page} if page is not None else {"unread": True}


def _moved(match: re.Match[str], current: int) -> int | None:
    """The page a relative move lands on (None: a count not read; never before the first page)."""
    word = (match.group("c") or match.group("c2") or "1").casefold().removeprefix("на").strip()
    count = 1 if word in ("a", "an", "one", "eine", "ein", "одну") else number_value(word)
    if count is None:
        return None
    direction = (match.group("d") or match.group("d2")).casefold()
    backward = re.fullmatch(_BACKWARD, direction, re.IGNORECASE) is not None
    return max(1, current - count) if backward else current + count


def _counts_pages(match: re.Match[str]) -> bool:
    """ "10 pages", "3 Seiten", "5 страниц": a bare number before a plural page word counts pages."""
    ordinal = match.group("o")
    return bool(ordinal and ordinal.isdigit()
                and match.group(0).split()[-1].casefold() in ("pages", "seiten", "страниц", "pgs"))


def _page_size(text: str, previous: dict[str, Any], found: dict[str, Any]) -> str:
    """A page-size phrase and its number ("50 per page", "per page: 10", "fewer per page, like 5")."""
    after = _SIZE_AFTER_NUMBER.search(text)
    if after is not None:
        found["pageSize"] = number_value(after.group("n"))
        return cut_match(text, after)
    phrase = _SIZE_PHRASE.search(text)
    if phrase is None:
        return text
    text = cut_match(text, phrase)
    numbers = [m for m in _ANY_NUMBER.finditer(text) if not _is_page_number(text, m)]
    if len(numbers) != 1:
        found["unread"] = True  # "more per page", "per page 10 or 20": a size not read is the model's
        return text
    found["pageSize"] = number_value(numbers[0].group(0))
    return cut_match(text, numbers[0])


def _is_page_number(text: str, match: re.Match[str]) -> bool:
    """ "page 2 but with 10 results per page": the 2 is the page's."""
    return bool(re.search(_PAGE + r"\s*(?:№|nr\.?|no\.?|number|номер)?\s*$", text[:match.start()], re.IGNORECASE))


def _counted_size(text: str, previous: dict[str, Any], found: dict[str, Any], filler: Callable[[str], bool]) -> str:
    more = _MORE_COUNT.search(text)
    if more is not None:
        size = number_value(more.group("n") or more.group("m"))
        if size is not None and size == previous.get("pageSize") and "page" in previous:
            found["page"] = (previous.get("page") or 1) + 1  # "20 more" of 20 a page: the next page
        else:
            found["pageSize"] = size
        return cut_match(text, more)
    for pattern in (_COUNTED, _QUANTITY):
        match = pattern.search(text)
        if match is not None:
            found["pageSize"] = number_value(match.group("n"))
            return cut_match(text, match)
    numbers = list(_ANY_NUMBER.finditer(text))
    words = re.findall(r"[^\W\d_]+", text)
    if len(numbers) == 1 and numbers[0].group(0).isdigit() and all(filler(w) for w in words):
        size = int(numbers[0].group(0))
        if size >= _MIN_ALONE:  # "15" alone: the page size ("3" alone may be the third page)
            found["pageSize"] = size
            return cut_match(text, numbers[0])
    return text




def _ordinal(word: str) -> int | None:
    digits = re.match(r"\d+", word)
    if digits:
        return int(digits.group(0))
    fold = word.casefold()
    return next((n for n, stems in _ORDINAL_WORDS.items() if any(fold.startswith(s) for s in stems)), None)
