"""Citation markers in an answer: every ``[n]`` must name one of the answer's sources.

Markers are numbered like the sources (one entry per article). A model may still write a
number it was never shown (``[7]`` of five) or a range (``[1-3]``, ``[1, 2]``); ``repair``
keeps what resolves, drops what points nowhere, and writes lists as adjacent markers.
``ground_citations`` then checks each marker against what the model read of that source: a
marker whose passages share no content word with its sentence points at the source that does
(the small model often writes [1] for every sentence), or is dropped when none does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from retrieval.answer_check import has_cyrillic, stems

_GROUP = r"\[\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*\]"
_RUN = re.compile(rf"(\s*)((?:{_GROUP})+)")  # adjacent groups, e.g. [3][2] or [1, 2][4]
_RANGE = re.compile(r"(\d{1,3})\s*[–-]\s*(\d{1,3})")
_NUMBER = re.compile(r"\d{1,3}")


def _numbers(run: str) -> list[int]:
    numbers: list[int] = []
    for group in re.findall(_GROUP, run):
        span = _RANGE.fullmatch(group[1:-1].strip())
        if span and int(span[1]) < int(span[2]) <= int(span[1]) + 9:
            numbers += range(int(span[1]), int(span[2]) + 1)
        else:
            numbers += [int(n) for n in _NUMBER.findall(group)]
    return numbers


# Markers written after a sentence's end ("… 4.0. [2]") belong to that sentence: "… 4.0 [2]."
_AFTER_END = re.compile(r"(?<=\w)([.!?])((?:\s*\[\d{1,3}\])+)(?=\s|$)")


def repair_citations(answer: str, n_sources: int) -> str:
    """``answer`` with each run of citation markers reduced to the ones in 1..n_sources, placed
    before the end of the sentence they cite."""

    def fix(match: re.Match[str]) -> str:
        kept = [n for n in dict.fromkeys(_numbers(match.group(2))) if 1 <= n <= n_sources]
        return match.group(1) + "".join(f"[{n}]" for n in kept) if kept else ""

    repaired = _RUN.sub(fix, answer).strip()
    return _AFTER_END.sub(lambda m: " " + "".join(re.findall(r"\[\d{1,3}\]", m.group(2))) + m.group(1), repaired)


def unresolved_citations(answer: str, n_sources: int) -> list[int]:
    """Marker numbers in ``answer`` that name no source (none after ``repair_citations``)."""
    return [int(n) for n in re.findall(r"\[(\d{1,3})\]", answer) if not 1 <= int(n) <= n_sources]


def ground_citations(answer: str, source_texts: Sequence[str]) -> str:
    """``answer`` (markers already repaired) with each marker naming a source whose text
    (``source_texts[n-1]``: its title and the passages the model read) shares a content word with
    the sentence the marker closes. A marker sharing nothing with any source stays only across
    scripts, where nothing can be compared."""
    source_stems = [stems(t) for t in source_texts]
    source_cyrillic = [has_cyrillic(t) for t in source_texts]
    out: list[str] = []
    pos = 0
    for match in _RUN.finditer(answer):
        sentence = re.split(r"[.!?\n]\s", answer[pos:match.start()])[-1]
        words, cyrillic = stems(sentence), has_cyrillic(sentence)
        kept: list[int] = []
        best = max(range(len(source_texts)), key=lambda i: (len(words & source_stems[i]), -i), default=None)
        for n in _numbers(match.group(2)):
            if not words or words & source_stems[n - 1]:
                kept.append(n)
            elif best is not None and words & source_stems[best]:
                kept.append(best + 1)  # names or numbers of another source: that one is meant
            elif source_cyrillic[n - 1] != cyrillic:
                kept.append(n)  # across scripts nothing can be compared
        out.append(answer[pos:match.start()])
        kept = list(dict.fromkeys(kept))
        out.append(match.group(1) + "".join(f"[{n}]" for n in kept) if kept else "")
        pos = match.end()
    out.append(answer[pos:])
    return "".join(out).strip()
