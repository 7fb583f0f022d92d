"""The parts of a question that asks several things ("when did X happen, and what changed?").

The 1.5B answer model answers the first thing a question asks and often drops the rest: of the
key facts it read and left out on the dev half, half answered the second part of a two-part
question (docs/rag.md, round 14). The prompt lists the parts, so each gets its sentence.

A small grammar over closed word classes, not a list of phrasings: a question is split

- at a sentence end after a question mark, keeping the sentences that ask something (end in ``?``
  or open with a question word; "Please answer in Russian." is a request, not a part);
- inside a sentence, at a coordinator (``and``/``и``/``а``/``und``, a comma or a dash) that a
  question word follows, possibly after a preposition ("und in welcher Version", "и с какого"),
  when the text before it already asks something. The condition keeps an embedded question whole
  ("Erkläre mir, welche Typen es gibt": the request before the comma asks nothing) and a list of
  names too ("X1 и X2").

No library does this for ru/en/de: dependency parsers (spaCy, Stanza) would need model downloads
at run time and still leave the "which clauses are questions" rule to us.
"""

from __future__ import annotations

import re

from retrieval.answer_check import stems

MAX_PARTS = 4  # more is a list, not a question in parts; listing them would crowd the prompt

# Question words of the three languages, in the forms they take (closed classes); verbs that open a
# yes/no question only where the language puts them first ("and is it safe", "und gibt es").
QUESTION_WORDS = frozenset("""
what which who whom whose when where why how whether is are was were do does did can could should will would
has have
что чего чему чем кто кого кому как когда где куда откуда почему зачем сколько насколько каков какова каково
каковы какой какая какое какие какого каких каким какими какую каком какому можно нужно есть
was wie wann wo woher wohin warum wieso weshalb wer wen wem wessen ob welche welcher welches welchen welchem
gibt ist sind kann können muss müssen braucht brauche
""".split())
# A preposition may stand between the coordinator and the question word ("и в каком году", "for which").
PREPOSITIONS = frozenset("""
in on at for from to by with since until of about into
в во на с со к ко по о об от до из за для при про через после перед
in im an am auf für von vom zu zum zur mit seit bis aus bei nach über unter
""".split())
COORDINATORS = frozenset({"and", "и", "а", "und"})

_SENTENCE_END = re.compile(r"(?<=[?!.])\s+")
_TOKEN = re.compile(r"[^\W_][\w'’-]*|[,;—–]|\s-\s", re.UNICODE)
_QUOTED = re.compile(r"\"[^\"]*\"|«[^»]*»|„[^“”]*[“”]|“[^”]*”")
_PUNCT = {",", ";", "—", "–", " - "}


def question_parts(question: str) -> list[str]:
    """The things ``question`` asks, in order and in its words; one part when it asks one thing
    (or more than ``MAX_PARTS``: then it is one question listing things)."""
    text = " ".join(question.split())
    parts: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if not sentence or not stems(sentence):
            continue
        pieces = _split_sentence(sentence.rstrip("?!. "))
        if sentence.endswith("?") or _asks(pieces[0]):
            parts += pieces
    parts = [p for p in parts if stems(p)]
    if len(parts) < 2 or len(parts) > MAX_PARTS:
        return [text]
    return parts


def _asks(text: str) -> bool:
    """Does ``text`` ask something? Quoted words (an error message, a title) do not."""
    words = _TOKEN.findall(_QUOTED.sub(" ", text).lower())
    return any(w in QUESTION_WORDS or w == "ли" for w in words)


def _split_sentence(sentence: str) -> list[str]:
    """The sentence cut before each coordinator that opens a further question (see the module)."""
    matches = list(_TOKEN.finditer(sentence))
    tokens = [m.group().lower() for m in matches]
    spans = [m.span() for m in matches]
    cuts: list[tuple[int, int]] = []  # (end of a part, start of the next)
    for i, word in enumerate(tokens):
        if word not in COORDINATORS and word not in _PUNCT:
            continue
        if cuts and spans[i][0] < cuts[-1][1]:
            continue  # the "and" of ", and what": consumed with its comma
        last = i + 1 if word in _PUNCT and i + 1 < len(tokens) and tokens[i + 1] in COORDINATORS else i
        opener = last + 1 + (last + 1 < len(tokens) and tokens[last + 1] in PREPOSITIONS)
        if opener >= len(tokens):
            continue
        yes_no = opener + 1 < len(tokens) and tokens[opener + 1] == "ли"  # "и есть ли", "и можно ли"
        if tokens[opener] not in QUESTION_WORDS and not yes_no:
            continue
        if not _asks(sentence[cuts[-1][1] if cuts else 0:spans[i][0]]):
            continue
        cuts.append((spans[i][0], spans[last][1]))
    pieces: list[str] = []
    start = 0
    for end, next_start in cuts:
        pieces.append(sentence[start:end])
        start = next_start
    pieces.append(sentence[start:])
    return [p.strip(" ,;—–-") for p in pieces if p.strip(" ,;—–-")]
