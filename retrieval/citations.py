"""Citation markers in an answer: every ``[n]`` must name one of the answer's sources.

Markers are numbered like the sources (one entry per article). A model may still write a
number it was never shown (``[7]`` of five) or a range (``[1-3]``, ``[1, 2]``); ``repair``
keeps what resolves, drops what points nowhere, and writes lists as adjacent markers.
"""

from __future__ import annotations

import re

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


def repair_citations(answer: str, n_sources: int) -> str:
    """``answer`` with each run of citation markers reduced to the ones in 1..n_sources."""

    def fix(match: re.Match[str]) -> str:
        kept = [n for n in dict.fromkeys(_numbers(match.group(2))) if 1 <= n <= n_sources]
        return match.group(1) + "".join(f"[{n}]" for n in kept) if kept else ""

    return _RUN.sub(fix, answer).strip()


def unresolved_citations(answer: str, n_sources: int) -> list[int]:
    """Marker numbers in ``answer`` that name no source (none after ``repair_citations``)."""
    return [int(n) for n in re.findall(r"\[(\d{1,3})\]", answer) if not 1 <= int(n) <= n_sources]
