"""The collection's own capitals, put back into a message typed all in lower case.

The meaning model (USE) reads case: "how does ARI work" is near the ARI articles, "how does ari work"
is not, and the examples' vote leans to small talk for it. People on a phone often type everything in
lower case, so for such a message the gate's meaning signals read it with the capitals the collection
itself writes its words with ("ari" -> "ARI", "laufzeit" -> "Laufzeit", "le" -> "LE"). A word takes a
capitalised form only when the collection writes it so nearly always (not counting a sentence's first
word); a word the collection does not hold keeps its spelling. Truecasers on PyPI ship models trained on
English news; this one is learned from the collection, in all its languages, at run time.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Casing", "typed_in_lower_case"]

_WORD = re.compile(r"[^\W\d_][\w'’.+#-]*[\w+#]|[^\W\d_]", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# A form is the word's own when the collection writes it so at least this often (a sentence's first
# word not counted), and at least MIN_SEEN times (once is a heading or an accident).
MOST = 0.8
MIN_SEEN = 2


def typed_in_lower_case(message: str) -> bool:
    """The writer used no capitals: case is no evidence of theirs (else theirs is the better evidence)."""
    return message == message.lower()


@dataclass(frozen=True)
class Casing:
    """The capitalised forms of the words the collection nearly always capitalises (casefolded -> form)."""

    forms: dict[str, str]

    @classmethod
    def learned(cls, texts: Iterable[str]) -> Casing:
        seen: defaultdict[str, Counter[str]] = defaultdict(Counter)
        for text in texts:
            for sentence in _SENTENCE.split(text):
                for k, match in enumerate(_WORD.finditer(sentence)):
                    if k:  # a sentence's first word is capitalised whatever it is
                        seen[match.group().casefold()][match.group()] += 1
        forms = {}
        for word, counts in seen.items():
            form, n = counts.most_common(1)[0]
            total = sum(counts.values())
            if form != word and total >= MIN_SEEN and n / total >= MOST:
                forms[word] = form
        return cls(forms)

    def restored(self, message: str) -> str:
        """``message`` with the collection's capitals when it is typed all in lower case (else as it is)."""
        if not typed_in_lower_case(message):
            return message
        return _WORD.sub(lambda m: self.forms.get(m.group().casefold(), m.group()), message)
