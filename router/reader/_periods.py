"""Periods: an anchor under an operator (in/during, since/from, after, before/until,
between…and / from…to), ranges composed from their two ends ("from 3 to 17 March 2025": the
first end takes the second's month and year), resolved to an inclusive [from, to] with today
as an input."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, timedelta

from router.reader import _lexicon as lx
from router.reader._anchors import Anchor, anchor_at, bare_day, duration_window
from router.reader._tokens import Token, fold_at


@dataclass(frozen=True)
class DateExpectation:
    """What a period named in the question means, given today."""

    phrase: str
    date_from: date | None  # None: open start ("before 2010")
    date_to_options: tuple[date | None, ...]  # acceptable dateTo values; None = may be omitted
    tolerance_days: int = 0  # rolling windows: inclusive/exclusive conventions differ by a day
    # The period the phrase names, when wider than the canonical range ("early 2025" may run to
    # June; "last week" may be the calendar week): a range inside it is right.
    earliest_from: date | None = None
    latest_to: date | None = None
    # "since 2024", "the last 12 months" name where the range starts, not a period to be inside of.
    pinned_from: bool = False
    future: bool = False  # the whole period is after today: no article can be from it
    start: int = 0  # character span of the phrase in the text read
    end: int = 0

    @property
    def period(self) -> tuple[date, date | None]:
        """The period a range must lie within (None: it runs on, to today)."""
        start = self.earliest_from or self.date_from or date.min
        ends = [o for o in self.date_to_options if o is not None]
        end = self.latest_to or (max(ends) if ends else None)
        if start > date.min:
            start -= timedelta(days=self.tolerance_days)
        return start, (end + timedelta(days=self.tolerance_days) if end is not None else None)

    @property
    def date_to(self) -> date | None:
        """The canonical upper bound (what the fallback router uses)."""
        return self.date_to_options[0]

    def describe_to(self) -> str:
        options = [o.isoformat() if o is not None else "omitted" for o in self.date_to_options]
        return " or ".join(options)


@dataclass(frozen=True)
class PhraseRead:
    first: int
    next: int
    date_from: date | None
    date_to: date | None
    anchor: Anchor
    mode: str  # "in", "since", "until", "before", "range"
    end_anchor: Anchor | None = None


_DASHES = ("-", "–", "—")
_LATER = frozenset({"later", "newer", "позже", "позднее", "später", "danach"})
_EARLIER = frozenset({"earlier", "older", "раньше", "ранее", "früher", "davor"})
_ON = frozenset({"on", "onwards", "onward", "forward", "an"})
_FILLERS = frozenset({"the", "dem", "den", "der", "des", "die", "das", "течение", "laufe", "verlauf", "course", "of"})


def _anchor(tokens: list[Token], i: int, today: date) -> Anchor | None:
    """The anchor at ``i``, also after filler words ("in the course of 2024", "im Laufe des Jahres")."""
    j = i
    while j < len(tokens):
        found = anchor_at(tokens, j, today)
        if found is not None:
            return found
        if tokens[j].fold not in _FILLERS or j - i >= 3:
            return None
        j += 1
    return None


# A comparison with a period: "older than 2015" (before it), "newer than March 2024" (after it),
# "не раньше 2019 года" (from its start), "nicht später als 2012" (to its end). English and German
# need "than"/"als"; Russian takes the genitive ("старше 2015 года") or "чем".
_EARLIER_THAN = frozenset({"earlier", "older", "раньше", "ранее", "старше", "früher", "älter"})
_LATER_THAN = frozenset({"later", "newer", "позже", "позднее", "новее", "свежее", "später", "neuer", "jünger"})
_THAN = frozenset({"than", "als", "чем"})
_NOT = frozenset({"no", "not", "не", "nicht"})
_CYRILLIC = re.compile(r"[а-яё]")
_END_WORDS = frozenset({"end", "конца", "конец", "ende"})


def _comparison(tokens: list[Token], i: int) -> tuple[str, int] | None:
    """The operator a comparison at ``i`` is ("no later than" -> until) and the index after it."""
    negated = fold_at(tokens, i) in _NOT
    k = i + 1 if negated else i
    word = fold_at(tokens, k)
    if (word, fold_at(tokens, k + 1)) == ("more", "recent"):
        word, k = "newer", k + 1
    if word not in _EARLIER_THAN and word not in _LATER_THAN:
        return None
    k += 1
    if fold_at(tokens, k) in _THAN:
        k += 1
    elif not _CYRILLIC.match(word):
        return None  # "older posts", "ältere Beiträge": an English or German comparison needs its "than"
    if word in _EARLIER_THAN:
        return ("since" if negated else "before"), k
    return ("until" if negated else "after"), k


def _operator(tokens: list[Token], i: int) -> tuple[str, int] | None:
    """The operator at ``i`` (one or two words) and the index after it."""
    compared = _comparison(tokens, i)
    if compared is not None:
        return compared
    one, two = fold_at(tokens, i), fold_at(tokens, i + 1)
    pairs = {("начиная", "с"): "since", ("начиная", "со"): "since", ("starting", "from"): "since",
             ("starting", "in"): "since", ("prior", "to"): "before", ("up", "to"): "until",
             ("bis", "zum"): "until", ("bis", "zur"): "until", ("в", "течение"): "in"}
    if (one, two) in pairs:
        mode, end = pairs[(one, two)], i + 2
    else:
        found = next((m for m, words in (("since", lx.SINCE), ("after", lx.AFTER), ("before", lx.BEFORE),
                                          ("until", lx.UNTIL), ("in", lx.IN)) if one in words), None)
        if found is None:
            return None
        mode, end = found, i + 1
    if mode == "until":  # "up to and including 2012", "bis einschließlich 2012": the end is in the period
        if (fold_at(tokens, end), fold_at(tokens, end + 1)) == ("and", "including"):
            end += 2
        elif fold_at(tokens, end) in _INCLUDING:
            end += 1
    return mode, end


_INCLUDING = frozenset({"including", "inclusive", "einschließlich", "einschliesslich", "inklusive", "включительно"})


def _join(tokens: list[Token], after_index: int) -> int | None:
    """Where the second end of a range starts, after "and/to/по/bis/und" or a dash."""
    previous = tokens[after_index - 1]
    if previous.after.strip() in _DASHES and after_index < len(tokens):
        return after_index
    if fold_at(tokens, after_index) in lx.RANGE_JOIN:
        j = after_index + 1
        if fold_at(tokens, j) in _INCLUDING:  # "von 2009 bis einschließlich 2011"
            j += 1
        return j + 1 if fold_at(tokens, j) in ("zum", "zur", "the") else j
    return None


# The end of a range that is today: "from 2020 to now", "2019 to date", "с 2020 года по настоящее время",
# "von 2020 bis jetzt" (only as a range's second end: "now" alone is no period).
_NOW = {("now",): 1, ("date",): 1, ("present",): 1, ("the", "present"): 2, ("this", "day"): 2, ("сейчас",): 1,
        ("настоящее", "время"): 2, ("настоящего", "времени"): 2, ("наши", "дни"): 2, ("сей", "день"): 2, ("jetzt",): 1,
        ("dato",): 1, ("heutigen", "tag"): 2}


def _to_now(tokens: list[Token], first: int, a: Anchor, j: int, today: date) -> PhraseRead | None:
    """The range from ``a`` to today when its second end at ``j`` says now."""
    for words, length in _NOW.items():
        if tuple(fold_at(tokens, j + k) for k in range(length)) == words:
            now = Anchor(j, j + length, today, today, "day")
            return PhraseRead(first, now.next, a.start, today, a, "range", now) if a.start <= today else None
    return None


def _range(tokens: list[Token], i: int, first: int, today: date) -> PhraseRead | None:
    """The rest of a range from token ``i`` (its first end), the range's opening word at ``first``."""
    a = _anchor(tokens, i, today)
    day = bare_day(tokens, i) if a is None or a.kind == "year" and len(tokens[i].text) <= 2 else None
    end_of_a = a.next if a is not None else (day[1] if day else None)
    if end_of_a is None:
        return None
    j = _join(tokens, end_of_a)
    if j is None:
        return None
    b = _anchor(tokens, j, today)
    if b is None:
        return _to_now(tokens, first, a, j, today) if a is not None else None
    a = _compose(a, day, b, tokens, i)
    if a is None or a.start > b.end:
        return None
    return PhraseRead(first, b.next, a.start, b.end, a, "range", b)


def _compose(a: Anchor | None, day: tuple[int, int] | None, b: Anchor, tokens: list[Token], i: int) -> Anchor | None:
    """The first end completed from the second: a day takes its month and year, a month its year."""
    if a is None:
        if day is None or b.kind not in ("day",) or b.refit is None:
            return None
        try:
            start = b.start.replace(day=day[0])
        except ValueError:
            return None
        return Anchor(i, day[1], start, start, "day")
    if not a.year_given and a.refit is not None and b.year_given:
        fitted = a.refit(b.start.year)
        return fitted if fitted.start <= b.start else a.refit(b.start.year - 1)
    return a


def _ranged_tail(tokens: list[Token], a: Anchor, today: date) -> PhraseRead | None:
    """ "2014 bis 2017", "2020–2022", "March to May 2025": a range with no opening word."""
    if a.kind not in ("year", "month", "day", "bare-month", "season", "quarter"):
        return None
    j = _join(tokens, a.next)
    if j is None or fold_at(tokens, a.next) in ("and", "и", "und"):
        return None  # "2020 and 2022" is two years, not a range
    b = _anchor(tokens, j, today)
    if b is None:
        return _to_now(tokens, a.first, a, j, today) if a.year_given else None  # "2020 to now"
    if b.kind != a.kind.replace("bare-", "") and not (a.kind, b.kind) == ("bare-month", "month"):
        return None
    fitted = _compose(a, None, b, tokens, a.first)
    if fitted is None or fitted.start > b.end:
        return None
    return PhraseRead(a.first, b.next, fitted.start, b.end, fitted, "range", b)


def _open_ended(tokens: list[Token], read: PhraseRead) -> PhraseRead:
    """ "from 2019 on", "2019 and later", "2015 und früher": the period runs on / from the start."""
    one, two = fold_at(tokens, read.next), fold_at(tokens, read.next + 1)
    # German "an" closes an open end only after "von"/"ab" ("von 2019 an"); else it opens what follows
    # ("Was gab's vor zwei Monaten an Ruby-Releases?": which releases there were then)
    opened = {fold_at(tokens, read.first), fold_at(tokens, read.first - 1) if read.first else None}
    # English "on" with a word right after it governs that word ("posts from last month on Let's Encrypt")
    governs = one == "on" and read.next + 1 < len(tokens) and not tokens[read.next].after.strip()
    if one in _ON and (one != "an" or opened & {"von", "ab"}) and not governs:
        return PhraseRead(read.first, read.next + 1, read.date_from, None, read.anchor, "since")
    if one in ("and", "or", "и", "или", "und", "oder") and two in _LATER:
        return PhraseRead(read.first, read.next + 2, read.date_from, None, read.anchor, "since")
    if one in ("and", "or", "и", "или", "und", "oder") and two in _EARLIER:
        return PhraseRead(read.first, read.next + 2, None, read.anchor.end, read.anchor, "until")
    return read


def _apply(mode: str, first: int, a: Anchor) -> PhraseRead:
    if mode == "since":
        return PhraseRead(first, a.next, a.start, None, a, "since")
    if mode == "after":
        return PhraseRead(first, a.next, a.end + timedelta(days=1), None, a, "since")
    if mode == "before":
        return PhraseRead(first, a.next, None, a.start - timedelta(days=1), a, "before")
    if mode == "until":
        return PhraseRead(first, a.next, None, a.end, a, "until")
    return PhraseRead(first, a.next, a.start, a.end, a, "in")


def period_at(tokens: list[Token], i: int, today: date) -> PhraseRead | None:
    """The period that starts at token ``i``, or None."""
    found = _period_at(tokens, i, today)
    if found is None and fold_at(tokens, i) in _FILLERS and fold_at(tokens, i) != "of" and i + 1 < len(tokens):
        inner = _period_at(tokens, i + 1, today)  # "the 1990s", "die 2000er": the article is part of it
        if inner is not None and inner.mode == "in":
            return replace(inner, first=i)
    return found


def _period_at(tokens: list[Token], i: int, today: date) -> PhraseRead | None:
    fold = fold_at(tokens, i)
    if fold in lx.RANGE_OPEN:
        ranged = _range(tokens, i + 1, i, today) or _range(tokens, i + 2, i, today) \
            if fold_at(tokens, i + 1) in _FILLERS else _range(tokens, i + 1, i, today)
        if ranged is not None:
            return ranged
    bare = anchor_at(tokens, i, today)
    if bare is not None and not bare.kind.startswith("bare-") or bare is not None and _instrumental(tokens[i]):
        return _ranged_tail(tokens, bare, today) or _open_ended(tokens, _apply("in", i, bare))
    operator = _operator(tokens, i)
    if operator is None:
        return None
    mode, j = operator
    a = _anchor(tokens, j, today)
    if a is None and (mode == "since" or tokens[i].fold == "за"):
        # "seit drei Wochen", "seit einem halben Jahr", "за полгода", "за три месяца": a window to today
        a = duration_window(tokens, j, today)
    if a is None:
        return None
    if a.kind.startswith("bare-"):
        a = Anchor(a.first, a.next, a.start, a.end, a.kind[5:], a.year_given, a.refit)
    if mode == "in":
        return _ranged_tail(tokens, a, today) or _open_ended(tokens, _apply("in", i, a))
    if mode == "before" and a.kind == "part" and fold_at(tokens, a.first) in _END_WORDS:
        return _apply("until", i, a)  # "до конца 2019 года", "before the end of 2019": to the year's end
    if mode in ("before", "until") and fold_at(tokens, a.next) in _INCLUDING:
        # "до марта 2020 года включительно", "bis März 2020 einschließlich": its end is in the period
        return replace(_apply("until", i, a), next=a.next + 1)
    return _apply(mode, i, a)


def _instrumental(token: Token) -> bool:
    """ "летом", "весной", "осенью", "зимой": a Russian season in the instrumental case means "in"."""
    return token.fold in ("летом", "весной", "осенью", "зимой")


def expectation(read: PhraseRead, tokens: list[Token], text: str, today: date) -> DateExpectation:
    """The read period as the date check and the filters use it."""
    phrase_start, phrase_end = tokens[read.first].start, tokens[read.next - 1].end
    if tokens[read.next - 1].fold == "г" and tokens[read.next - 1].after.startswith("."):
        phrase_end += 1  # "2019 г."
    # "in 2024" is named by "2024"; "since 2024", "before 2010" by the whole phrase
    named_from = tokens[read.anchor.first].start if read.mode == "in" else phrase_start
    phrase = text[named_from:phrase_end]
    anchor = read.end_anchor or read.anchor
    future = read.date_from is not None and read.date_from > today
    common = {"start": phrase_start, "end": phrase_end, "future": future}
    if read.mode == "since":
        return DateExpectation(phrase, read.date_from, (today, None, date(today.year, 12, 31)), pinned_from=True,
                               tolerance_days=anchor.tolerance, **common)  # type: ignore[arg-type]
    if read.mode in ("before", "until"):
        assert read.date_to is not None
        latest = read.anchor.end if read.mode == "before" and _loose_before(tokens[read.first]) else None
        to = min(read.date_to, today) if read.date_to >= today else read.date_to
        return DateExpectation(phrase, None, (to, None) if read.date_to >= today else (to,), latest_to=latest,
                               **common)  # type: ignore[arg-type]
    assert read.date_from is not None and read.date_to is not None
    if read.mode == "in" and anchor.rolling:
        return DateExpectation(phrase, read.date_from, (today, None), tolerance_days=1, pinned_from=True,
                               **common)  # type: ignore[arg-type]
    options: tuple[date | None, ...]
    if read.mode == "in" and anchor.to_options is not None:
        options = anchor.to_options
    else:
        options = (read.date_to,) if read.date_to < today else (read.date_to, today, None)
    earliest = read.anchor.earliest if read.mode == "in" else None
    latest = read.anchor.latest if read.mode == "in" else None
    return DateExpectation(phrase, read.date_from, options, tolerance_days=anchor.tolerance if read.mode == "in"
                           else 0, earliest_from=earliest, latest_to=latest, **common)  # type: ignore[arg-type]


def _loose_before(token: Token) -> bool:
    """ "до 2015 года" may mean before 2015 or up to its end: the date check accepts either."""
    return token.fold == "до"
