"""Reading a question's period: every period phrase found left to right (several are joined:
"in March 2025 and April 2025"), and the period cues no phrase consumed -- a month name, a
year, "ago", a quarter word -- so a period the grammar cannot read is never dropped silently."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date

from router.reader import _lexicon as lx
from router.reader._holidays import holidays_as_days
from router.reader._number_words import spelled_numbers_as_digits
from router.reader._numbers import NUMBER_WORDS
from router.reader._patterns import sentence_ends_between, without_spans
from router.reader._periods import DateExpectation, PhraseRead, expectation, period_at
from router.reader._spelling import anchored, corrected, version_years
from router.reader._tokens import Token, standalone_number, tokenize


@dataclass(frozen=True)
class PeriodReading:
    period: DateExpectation | None
    unread: tuple[str, ...]  # cue words no period phrase consumed ("could not read the period '…'")
    rest: str  # the text without the period phrases and the unread cue words


def as_the_grammar_reads(text: str) -> str:
    """``text`` as the period grammar reads it: years and versions in words in digits, fixed-date holidays as
    their days. The spans a reading reports are of this text."""
    return holidays_as_days(spelled_numbers_as_digits(text))


def read_period(text: str, today: date) -> PeriodReading:
    """The period ``text`` names; its spans, phrases and rest are of ``text`` with the years and versions
    said in words written in digits ("posts from twenty twenty four" reads as "posts from 2024") and the
    fixed-date holidays as their days ("since Christmas" reads as "since 25 December")."""
    text = as_the_grammar_reads(text)
    tokens, changed = corrected(tokenize(text))
    versions = version_years(tokens)  # on the corrected words: "Febuary 2025" is no product
    tokens = [replace(t, version=True) if i in versions else t for i, t in enumerate(tokens)]
    plain = [replace(t, fold=t.text.casefold().replace("ё", "е")) if i in changed else t for i, t in enumerate(tokens)]
    reads = _reads(tokens, today)
    rejected = {j for r in reads for j in range(r.first, r.next) if j in changed
                and not anchored(tokens, r.first, r.next, changed)}
    corrected_unused = changed - {j for r in reads for j in range(r.first, r.next)}
    if rejected or corrected_unused:  # a correction that completes no trusted phrase is undone
        tokens = [plain[j] if j in rejected | corrected_unused else t for j, t in enumerate(tokens)]
        reads = _reads(tokens, today)
    found = [expectation(read, tokens, text, today) for read in reads]
    consumed = {j for read in reads for j in range(read.first, read.next)}
    unread = _unread_phrases(tokens, consumed)
    spans = [(p.start, p.end) for p in found] + [(tokens[a].start, tokens[b].end) for a, b in unread]
    since = _SINCE_THEN.search(text, found[-1].end) if found and found[-1].date_from is not None else None
    if since is not None:  # "we adopted Certbot in 2022 … every post since then": from that period on
        found[-1] = replace(found[-1], date_to_options=(today, None, date(today.year, 12, 31)), pinned_from=True,
                            earliest_from=None, latest_to=None, future=False)
        spans.append(since.span())
    phrases = tuple(text[tokens[a].start:tokens[b].end] for a, b in unread)
    return PeriodReading(_joined(found, text), phrases, " ".join(without_spans(text, spans).split()))


def _reads(tokens: list[Token], today: date) -> list[PhraseRead]:
    """Every period phrase, left to right."""
    reads: list[PhraseRead] = []
    i = 0
    while i < len(tokens):
        read = period_at(tokens, i, today)
        if read is None:
            i += 1
            continue
        reads.append(read)
        i = read.next
    return reads




def _unread_phrases(tokens: list[Token], consumed: set[int]) -> list[tuple[int, int]]:
    """The unread cues as token spans, each from the operator before it when there is one within
    four words ("aus dem vorvorigen Quartal", "from three moons ago"), else from the period words right
    before it ("the last few months"): the whole phrase is reported and cut."""
    spans: list[tuple[int, int]] = []
    for j in range(len(tokens)):
        if j in consumed or not _is_cue(tokens, j):
            continue
        first, run = j, True
        for back in range(1, 5):
            k = j - back
            if k < 0 or k in consumed or (spans and k <= spans[-1][1]):
                break
            if tokens[k].fold in lx.OPERATORS:
                first = k
                break
            run = run and _periodish(tokens[k].fold)
            if run:
                first = k
        if spans and first <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], j)
        else:
            spans.append((first, j))
    return spans


# A period named before and pointed back at: "since then", "seitdem", "с тех пор".
_SINCE_THEN = re.compile(r"\b(?:since\s+then|ever\s+since|seitdem|seither|seit\s+damals)\b"
                         r"|(?<!\w)с\s+(?:тех\s+пор|того\s+времени|того\s+момента)(?!\w)", re.IGNORECASE)


# A sentence ends between two periods: "Wir planen die Umstellung im Sommer. Welche Beiträge sind in diesem
# Quartal erschienen?" -- the earlier sentence is context, the request's own period is the later one.
def _joined(found: list[DateExpectation], text: str) -> DateExpectation | None:
    """One period for the question: the first, or the span of several closed ones -- of the last sentence
    that names one."""
    if not found:
        return None
    last_sentence = [i for i in range(1, len(found)) if sentence_ends_between(text, found[i - 1].end, found[i].start)]
    if last_sentence:
        found = found[last_sentence[-1]:]
    first = found[0]
    closed = [p for p in found if p.date_from is not None and p.date_to is not None and not p.pinned_from]
    if len(found) == 1 or len(closed) != len(found):
        return first
    start = min(p.date_from for p in closed if p.date_from is not None)
    ends = [p.date_to for p in closed if p.date_to is not None]
    last = max(closed, key=lambda p: p.date_to or date.min)
    return replace(
        last, phrase=text[first.start:found[-1].end], date_from=start, date_to_options=(max(ends), *last.date_to_options[1:]),
        earliest_from=None, start=first.start, end=found[-1].end, future=all(p.future for p in found),
    )


def _periodish(fold: str) -> bool:
    """A word that belongs to a period phrase without naming one ("the", "last", "few", "drei")."""
    return fold in lx.ARTICLES or fold in lx.VAGUE_COUNTS or fold in NUMBER_WORDS or bool(lx.ROLLING.match(fold)) \
        or lx.relative(fold) is not None


def _in_a_name(tokens: list[Token], i: int) -> bool:
    """ "Ruby Summer of Code", "Winter of Security": a capitalized month or season with "of" and a
    capitalized word after it that names no period is a name's word, not a period."""
    if i + 2 >= len(tokens) or not tokens[i].text[:1].isupper() or tokens[i + 1].fold not in ("of", "von", "der"):
        return False
    after = tokens[i + 2]
    return after.text[:1].isupper() and not after.text.isdigit() and not _is_cue(tokens, i + 2)


def _is_cue(tokens: list[Token], i: int) -> bool:
    """A word that names a period part: a month, a season, a quarter/half word, a decade, a year,
    "ago", or a unit after a count or a relative word ("3 недели", "letzten Quartal")."""
    fold = tokens[i].fold
    if (fold in lx.FULL_MONTHS or fold in lx.SEASONS) and _in_a_name(tokens, i):
        return False
    if fold in lx.FULL_MONTHS and fold not in lx.AMBIGUOUS_MONTHS:
        return True
    if fold in lx.SEASONS and fold not in lx.AMBIGUOUS_SEASONS:
        return True
    if fold in lx.QUARTER_CODES or fold in lx.AGO or lx.decade(fold) is not None:
        return True
    number = standalone_number(tokens, i)
    if number is not None and len(tokens[i].text) == 4 and 1900 <= number <= 2099:
        return True
    unit = lx.UNITS.get(fold)
    if unit is None or i == 0 or tokens[i].before == "-":  # "six-day certificates", "90-day": an adjective
        return False
    previous = tokens[i - 1].fold
    return unit in ("quarter", "half") or previous in lx.VAGUE_COUNTS or bool(lx.ROLLING.match(previous)) \
        or previous in NUMBER_WORDS and previous not in ("a", "an", "ein", "eine") \
        or standalone_number(tokens, i - 1) is not None or lx.relative(previous) is not None
