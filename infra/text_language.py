"""Which of Turnout's languages a text is in, by lingua restricted to ru/en/de.

One detector per process (building it takes ~0.2 s): the router reads the user's language with
it, the answer check the reply's, the answer evaluation judges answers with it.
"""

from __future__ import annotations

from functools import lru_cache

from lingua import Language as LinguaLanguage
from lingua import LanguageDetector, LanguageDetectorBuilder

from infra.results import Language

LINGUA: dict[LinguaLanguage, Language] = {
    LinguaLanguage.RUSSIAN: "ru",
    LinguaLanguage.ENGLISH: "en",
    LinguaLanguage.GERMAN: "de",
}


@lru_cache(maxsize=1)
def detector() -> LanguageDetector:
    # Only our three languages: a short text must not be classified as, say, Dutch.
    return LanguageDetectorBuilder.from_languages(*LINGUA).build()


def detect(text: str) -> Language | None:
    """lingua's most likely language of ``text``, or None when it cannot tell."""
    found = detector().detect_language_of(text)
    return LINGUA[found] if found is not None else None


def confidences(text: str) -> dict[Language, float]:
    """lingua's confidence (0..1, summing to 1) that ``text`` is in each language."""
    return {LINGUA[c.language]: c.value for c in detector().compute_language_confidence_values(text)}
