"""Splitting a localization's plain text into overlapping chunks sized for the embedding model.

USE multilingual v3 (the local default) was trained on sentences and short paragraphs and
averages over longer input, so chunks are a few sentences (~900 characters, ~200 tokens,
the size measured in SPEC §15) cut at sentence boundaries, with ~180 characters of overlap
so a statement split across a boundary is whole in at least one chunk.

Each chunk's ``content_hash`` covers the chunker version, the title (it is embedded with
the chunk) and the chunk text: a re-embedding run copies the vector of an unchanged chunk
instead of embedding it again, and a chunking change (new ``CHUNKER_VERSION``) re-embeds.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass

from infra.text import content_hash

MAX_CHARS = 900
OVERLAP_CHARS = 180
# Part of every chunk's content hash and recorded with each collection version: a change here
# re-embeds every chunk through a normal re-embedding run. v2: Markdown/HTML read by parsers
# (infra/text.py), sentence ends that know ru/de/en abbreviations.
CHUNKER_VERSION = f"sentences-v2-{MAX_CHARS}-{OVERLAP_CHARS}"

_POINT_NAMESPACE = uuid.UUID("6f1c2a52-5b0e-4d0e-9a53-2f0f3c7d8e11")
_PARAGRAPHS = re.compile(r"\n\s*\n")
# A candidate sentence end: . ! ? … (optionally followed by closing quotes/brackets) and whitespace.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»”)\]]*\s+")
# Words that end with a period without ending the sentence (lower-cased, without the period).
# Single letters ("z. B.", "т. е.", "e. g.", initials) are handled by a rule, not listed.
ABBREVIATIONS = frozenset({
    # en
    "e.g", "i.e", "etc", "vs", "cf", "approx", "mr", "mrs", "ms", "dr", "prof", "no", "vol", "fig", "jan", "feb",
    "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "inc", "ltd", "co", "corp", "st",
    # de
    "z.b", "d.h", "u.a", "u.ä", "usw", "bzw", "ca", "evtl", "ggf", "inkl", "zzgl", "vgl", "bspw", "sog", "nr",
    "str", "abs", "bzgl", "max", "min", "ggü", "u.u", "o.ä", "v.a", "z.t",
    # ru
    "т.е", "т.д", "т.п", "т.к", "т.н", "др", "пр", "см", "рис", "стр", "гг", "ок", "им", "напр", "руб",
    "тыс", "млн", "млрд",
})
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Chunk:
    position: int
    text: str
    content_hash: str


def point_id(localization_id: str, position: int) -> str:
    """Deterministic point id: writing a localization again replaces its points."""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{localization_id}\x00{position}"))


def estimate_tokens(text: str) -> int:
    """A conservative token estimate without a tokenizer download (~3 characters a token
    for ru/de/en with common BPE vocabularies, rounded up)."""
    return math.ceil(len(text) / 3) if text else 0


def embedding_input(title: str, text: str) -> str:
    """What is embedded for a chunk: the title gives every chunk its topic."""
    return f"{title}\n{text}" if title else text


def chunk_hash(title: str, text: str) -> str:
    return content_hash(CHUNKER_VERSION, title, text)


def _ends_sentence(before: str, after: str) -> bool:
    """Does the candidate boundary between ``before`` and ``after`` end a sentence?"""
    if not after or before[-1:] != ".":
        return True  # ! ? … always end one
    word = before.rsplit(None, 1)[-1].rstrip(".").lower()
    if len(word) == 1 and word.isalpha():
        return False  # "z. B.", "т. е.", an initial
    if word in ABBREVIATIONS:
        return False
    return not after[0].islower()  # a sentence does not start in lower case ("bzw. die", "ca. 5")


def split_sentences(paragraph: str) -> list[str]:
    """A paragraph's sentences; a period after an abbreviation or initial does not end one."""
    sentences: list[str] = []
    current = ""
    pos = 0
    for match in _SENTENCE_END.finditer(paragraph):
        current += paragraph[pos:match.end()]
        pos = match.end()
        if _ends_sentence(current.rstrip(), paragraph[pos:pos + 1]):
            sentences.append(current.strip())
            current = ""
    current += paragraph[pos:]
    if current.strip():
        sentences.append(current.strip())
    return [s for s in sentences if s]


def _units(text: str, max_chars: int) -> list[str]:
    """Sentences (paragraph-aware); a sentence longer than ``max_chars`` is cut at spaces."""
    units: list[str] = []
    for paragraph in _PARAGRAPHS.split(text):
        paragraph = _SPACE.sub(" ", paragraph).strip()
        if not paragraph:
            continue
        for sentence in split_sentences(paragraph):
            while len(sentence) > max_chars:
                cut = sentence.rfind(" ", max_chars // 2, max_chars)
                cut = cut if cut > 0 else max_chars
                units.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if sentence:
                units.append(sentence)
    return units


def split_text(text: str, *, max_chars: int = MAX_CHARS, overlap_chars: int = OVERLAP_CHARS) -> list[str]:
    """Greedy packing of sentences into chunks of at most ``max_chars`` (sentences joined by
    a space); each chunk after the first starts with the previous chunk's trailing sentences
    totalling at most ``overlap_chars``."""
    if max_chars <= 0 or overlap_chars < 0 or overlap_chars >= max_chars:
        raise ValueError("need max_chars > overlap_chars >= 0")
    units = _units(text, max_chars)
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    fresh = 0  # units in `current` not already emitted in the previous chunk
    for unit in units:
        added = len(unit) + (1 if current else 0)
        if current and size + added > max_chars:
            chunks.append(" ".join(current))
            carried: list[str] = []
            carried_size = 0
            for prev in reversed(current):
                if carried_size + len(prev) + 1 > overlap_chars or len(carried) + 1 >= len(current):
                    break
                carried.insert(0, prev)
                carried_size += len(prev) + 1
            # Drop the overlap if it would not leave room for the next sentence.
            if carried and carried_size + len(unit) + 1 > max_chars:
                carried, carried_size = [], 0
            current, size, fresh = carried, max(0, carried_size - 1), 0
            added = len(unit) + (1 if current else 0)
        current.append(unit)
        size += added
        fresh += 1
    if current and fresh:
        chunks.append(" ".join(current))
    return chunks


def chunk_localization(title: str, body_text: str, summary: str = "") -> list[Chunk]:
    """The chunks of one localization. A body-less localization is chunked from its summary,
    else its title, so every visible localization is findable."""
    source = body_text.strip() or summary.strip() or title.strip()
    return [
        Chunk(position=i, text=text, content_hash=chunk_hash(title, text))
        for i, text in enumerate(split_text(source))
    ]
