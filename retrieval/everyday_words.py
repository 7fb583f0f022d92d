"""The question's words that name something, for the lexical side of retrieval.

The lexical list is selected and scored by the question's rarest words in the collection
(infra/db/rag_chunks.py: the thing a question names is rare: a CVE number, a gem, a program).
On a collection of a thousand articles an everyday word is often rarer there than the name asked
about: German "genau" (in 10 chunks) outranked "Divvi Up" (23), "wann" outranked "Onigmo", Russian
"нужен" outranked "Prossimo", English "used" (kept as a word under the German configuration)
outranked "Mandrill" -- and the list filled with chunks that happened to hold the everyday word.

So a word common in everyday Russian, English or German (its frequency in `wordfreq`'s corpora of
those languages, a Zipf value of at least ``EVERYDAY_ZIPF`` in any of them: about one in 100,000
words) is left out of the lexical question when the question holds a word that is not. Names,
versions and terms are rare in everyday language ("Divvi", "Onigmo", "CVE-2024-27282", "regex",
"Mandrill" all below 2.3) whatever the collection says. A question made of everyday words only
("Was ist Ruby::Box?") is searched as it is. The vector side always reads the whole question.
"""

from __future__ import annotations

import re
from functools import lru_cache

from wordfreq import zipf_frequency

# Measured on the retrieval dev half (docs/rag.md, "Everyday words"; 4.0 / 4.5 / 5.0 / 5.5 tried):
# 5.0 keeps "engine" (4.8), "keys" (4.4), "ruby" (4.0) and leaves out "genau" (5.7), "нужен" (5.1),
# "wann" (5.2), "used" (5.8).
EVERYDAY_ZIPF = 5.0
_LANGUAGES = ("en", "de", "ru")
_TOKEN = re.compile(r"\S+")
_PARTS = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)


@lru_cache(maxsize=20_000)
def _everyday_part(part: str) -> bool:
    return max(zipf_frequency(part, language) for language in _LANGUAGES) >= EVERYDAY_ZIPF


def everyday(token: str) -> bool:
    """Every part of ``token`` is a common word ("Let's", "Regex-Engine" is not: "regex" is rare);
    a token with a digit never is ("3.4", "CVE-2024-27282")."""
    parts = _PARTS.findall(token.casefold())
    if not parts or any(p.isdigit() for p in parts):
        return False
    return all(_everyday_part(p) for p in parts)


def naming_words(question: str) -> str:
    """``question`` without its everyday words, when any other word is left; else the question."""
    tokens = _TOKEN.findall(question)
    kept = [t for t in tokens if _PARTS.search(t) and not everyday(t)]
    return " ".join(kept) if kept else question
