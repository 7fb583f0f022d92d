"""Which of Turnout's languages (ru/en/de) a user wrote in, and which one they asked for."""

from __future__ import annotations

import re

from infra.results import Language
from infra.text_language import detect, detector
from router.reader import as_words, language_cues

_CYRILLIC = re.compile(r"[\u0400-\u04FF]")
_GERMAN_LETTERS = re.compile(r"[äöüßÄÖÜ]")
_WORD = re.compile(r"[^\W\d_]+", re.U)
# Function words decide short questions where character statistics are weak ("Was ist neu in X?").
_FUNCTION_WORDS: dict[Language, frozenset[str]] = {
    "de": frozenset(
        "ist sind was wie warum wann wer welche welcher welches gibt es der die das den dem des und oder "
        "nicht ein eine einen über zu zum zur mir mich ich du sie wir im seit letzten letzte letztes "
        "diesem dieses jahr monat zeige zeig finde suche liste erkläre artikel auf deutsch hallo danke "
        "bitte mit für von aus bei nach neu neue neues wurde werden hat haben kann gab gabs an am vor zwei drei "
        "tagen wochen monaten jahren woche tage heute gestern in eigentlich".split()
    ),
    "en": frozenset(
        "is are was were what how why when who which does do did the a an and or not of to in on for "
        "with about me my i you we show find list search explain articles article posts news since last "
        "this year month hello hi thanks please new changed from give tell can has have".split()
    ),
}


_SHARED_WORDS = _FUNCTION_WORDS["de"] & _FUNCTION_WORDS["en"]


def load_detector() -> None:
    """Build the detector now (about 0.2 s) rather than in the first question that needs it."""
    detector()


def detect_language(text: str, default: Language = "en") -> Language:
    """The language of ``text``; Cyrillic is decisive, otherwise lingua decides among en/de."""
    if _CYRILLIC.search(text):
        return "ru"
    words = [w.casefold() for w in _WORD.findall(text)]
    # a word of both languages ("was", "in", "an") is no vote
    votes = {lang: sum(w in vocab and w not in _SHARED_WORDS for w in words) for lang, vocab in _FUNCTION_WORDS.items()}
    if votes["de"] != votes["en"]:
        return max(votes, key=lambda lang: votes[lang])
    detected = detect(text)
    if detected is None:
        return "de" if _GERMAN_LETTERS.search(text) else default
    return detected


def written_language(question: str, default: Language = "en") -> Language:
    """The language ``question`` is written in, read without its language cues: "In English please"
    or "Antworte auf Deutsch" asks for the answer's language and is no evidence of the question's."""
    if as_words(question) != question:  # fields ("тема: X; язык ответа: de") read in English words: the keys tell
        return detect_language(question, default)
    rest = language_cues(question).rest
    return detect_language(rest if _WORD.search(rest) else question, default)
