"""Chat spellings of function words, read in their standard spelling before any rule reads a message.

People typing on a phone or in a chat write "u" for "you", "n" for "and", "thru", "чё" for "что",
"gibts" for "gibt's". The rules' word classes (question words, politeness, conjunctions, clitics) are
written in standard spelling, so a message is read in it. Only whole words are replaced, and only
function words whose chat form is no other word of the three languages; names and topics keep their
spelling. No library was found for this: spell checkers correct towards dictionary words, and these are
deliberate spellings of short words that a checker leaves or "corrects" wrongly ("n" → "in").
"""

from __future__ import annotations

import re

__all__ = ["in_standard_spelling"]

# chat form -> standard form (lower case; a capitalised chat form gives a capitalised standard one)
_STANDARD: dict[str, str] = {
    # English
    "u": "you", "ur": "your", "n": "and", "thru": "through", "tho": "though", "abt": "about", "cuz": "because",
    "wat": "what", "wut": "what", "pls": "please", "plz": "please", "ppl": "people", "smth": "something",
    "sth": "something", "w/": "with", "w/o": "without",
    # Russian
    "чё": "что", "чо": "что", "шо": "что", "щас": "сейчас", "плз": "пожалуйста", "плиз": "пожалуйста",
    "пжл": "пожалуйста", "пж": "пожалуйста", "скока": "сколько", "ваще": "вообще",
    # German: clitics written without their apostrophe, and spoken contractions
    "gibts": "gibt's", "gabs": "gab's", "gehts": "geht's", "isses": "ist es", "haste": "hast du",
    "kannste": "kannst du", "willste": "willst du", "weißte": "weißt du", "nen": "einen", "ner": "einer",
}
_CHAT_FORM = re.compile(
    r"(?<![\w'’.\-/])(" + "|".join(re.escape(f) for f in sorted(_STANDARD, key=len, reverse=True)) + r")(?![\w'’\-/]|\.\w)",
    re.IGNORECASE | re.UNICODE,
)


# Russian words written with a hyphen, typed without it: "по русски" (по-русски), "10х годов" (10-х), "чтото"
# (что-то); and the hard sign after a prefix typed as the soft one, "обьясни" (объясни), "подьезд": after these
# prefixes a soft sign before е/ё/ю/я is no Russian spelling ("в" and "с" are left out: "вьюга", "семья").
_DROPPED_HYPHEN = (
    (re.compile(r"(?<!\w)(по)\s+(русски|английски|немецки)(?!\w)", re.IGNORECASE), r"\1-\2"),
    (re.compile(r"(?<![\w.-])(\d{2,4})(х|ых|е|ые)(?=\s+год)", re.IGNORECASE), r"\1-\2"),
    (re.compile(r"(?<![\w-])(что|кто|где|когда|как|какой|какая|какие|какую|чей|куда)(то|нибудь|либо)(?!\w)",
                re.IGNORECASE), r"\1-\2"),
    (re.compile(r"(?<![\w-])(об|от|под|над|из|раз|рас|без|бес|пред|меж)ь(?=[еёюя])", re.IGNORECASE), r"\1ъ"),
)


def in_standard_spelling(text: str) -> str:
    """``text`` with the chat forms of function words spelt out ("can u fix …" → "can you fix …"), the
    hyphens of Russian words put back ("по русски" → "по-русски") and a prefix's hard sign ("обьясни")."""

    def standard(match: re.Match[str]) -> str:
        form = match.group(1)
        word = _STANDARD[form.casefold()]
        return word[:1].upper() + word[1:] if form[:1].isupper() else word

    for typed, spelt in _DROPPED_HYPHEN:
        text = typed.sub(spelt, text)
    return _CHAT_FORM.sub(standard, text)
