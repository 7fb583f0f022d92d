"""The model's reply tidied before it is checked: no sentence said twice, a cut end marked as cut.

The 1.5B model sometimes loops: it writes a list item or a sentence again and again until the
answer cap stops it ("7. Der Port 80 wird nicht … 8. Der Port 80 wird nicht …"), and an answer the
cap stopped ends mid-word. On the dev half 5 of 35 model answers ended so (docs/rag.md, round 15).
A reader gets each sentence once, and sees where the cap cut the answer.

- a sentence (list marker, citation markers, case and punctuation aside) that the answer already
  holds is dropped; a line left empty by that goes too;
- a reply that writes the prompt's fence line ("<<<END MATERIAL …>>>") goes on by copying the prompt
  back (the passages' headers, the passages): it ends before that line (1 of 33 fourth-set answers
  did, round 16), and what comes before it is not marked as cut: the model ended that part itself;
- when the reply stopped at the cap (``cut``), a list item it had only begun goes and an unfinished
  last sentence ends with "…", so the reader sees it was cut (it is kept: it often holds a fact).

Nothing is reworded: what is kept is the model's text as written.
"""

from __future__ import annotations

import re

from retrieval.answer_prompt import FENCE_CLOSE, FENCE_OPEN
from retrieval.chunking import split_sentences

_LIST_ITEM = r"(?:\d{1,2}[.)]|[-*•])"  # "1." "2)" "-" "*" "•"
_LIST_MARKER = re.compile(rf"^\s*{_LIST_ITEM}\s+")
_ONLY_MARKER = re.compile(rf"^\s*{_LIST_ITEM}?\s*$")
_MARKER = re.compile(r"\[\d{1,3}\]")
_FENCE = re.compile(f"{re.escape(FENCE_CLOSE)}|{re.escape(FENCE_OPEN)}", re.IGNORECASE)
_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
# A sentence ends with one of these, then closing quotes, brackets, emphasis or citation markers.
_FINISHED = re.compile(r"[.!?…:](?:[\"'»”)\]*`]|\s*\[\d{1,3}\])*\s*$")


def tidy_answer(text: str, *, cut: bool) -> str:
    """``text`` without repeated sentences; when ``cut``, its unfinished end marked (see the module)."""
    fence = _FENCE.search(text)
    if fence is not None:
        text = text[:fence.start()]
        cut = False  # the cap stopped the copy, not the answer written before it
    seen: set[str] = set()
    lines: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            lines.append(line)
            continue
        marker = _LIST_MARKER.match(line)
        head = marker.group() if marker else ""
        sentences = split_sentences(line[len(head):].strip())
        kept = []
        for sentence in sentences:
            key = _key(sentence)
            if key and key in seen:
                continue
            seen.add(key)
            kept.append(sentence)
        if len(kept) == len(sentences):
            lines.append(line)  # as written, its spacing (code, indented lists) too
        elif kept:
            lines.append(head + " ".join(kept))
    tidied = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()  # no gap left wider than a blank line
    return _closed(tidied) if cut and tidied else tidied


def _key(sentence: str) -> str:
    return _NOT_WORD.sub(" ", _MARKER.sub(" ", sentence.lower())).strip()


def _closed(text: str) -> str:
    """A reply the cap stopped: a list item it had only begun ("8.") goes, an unfinished sentence is
    marked with "…" (kept: it often holds a fact, a version list cut half-way)."""
    lines = text.split("\n")
    while len(lines) > 1 and _ONLY_MARKER.match(lines[-1]):
        lines.pop()
    closed = "\n".join(lines).rstrip()
    return closed if _FINISHED.search(closed) else closed + "…"
