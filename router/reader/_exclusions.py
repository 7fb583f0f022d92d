"""What a question leaves out: "posts about Ruby but not Rails", "статьи про сертификаты, кроме Certbot",
"Beiträge über RubyGems, aber nicht über Bundler", "everything on ACME except the staging environment". The
words a marker of exclusion governs, up to the end of its clause, are excluded from the search (the search
reads "-word" as web search does); left in the text they would be required instead.

The markers are the conjunctions and prepositions of exclusion ("except", "excluding", "other than",
"кроме", "за исключением", "außer", "ausgenommen") and a negation that opens a clause or follows "but"/"and"
("…, not Rails", "but not about", "но не про", "aber nicht über") or a topic's preposition ("не про Certbot").
A negation inside a clause is otherwise a statement
("why is OCSP not supported?", "почему не работает"), and "without"/"без"/"ohne" qualify a topic
("certificates without OCSP stapling") unless they open a clause of their own ("…, without the security
advisories"). A language left out is the languages reader's (`_languages`: "anything but German").

Why not a library: negation-scope finders (NegEx and its ports, negspaCy) are English rule sets for clinical
notes, keyed to findings and pseudo-negations there, with no Russian or German triggers; what a search query
leaves out is a handful of markers per language and a clause's end, read here beside the other cues."""

from __future__ import annotations

import re
from dataclasses import dataclass

from router.reader._patterns import words_pattern as _r

_OPENS_CLAUSE = r"(?:^|(?<=[,;:(—–])\s*|(?<=\s-)\s*|(?<=\s)(?:but|and|but\s+also|но|и|а|aber|und|doch)\s+)"
# After a negation, a hedge, an addition or an idiom, not an exclusion: "not sure if …", "not only the release
# notes", "no idea where …", "не уверен", "не только", "nicht sicher", "nicht nur", "keine Ahnung"
_HEDGE = (r"(?:sure|certain|really|quite|only|just|yet|much|exactly|too|necessarily|уверен\w*|только|совсем"
          r"|обязательно|знаю|помню|понимаю|sicher|nur|ganz|unbedingt|genau|mehr"
          # and the fixed phrases of "no": "no idea where …", "no matter which", "kein Problem"
          r"|idea|clue|matter|problem|worries|need|rush|hurry|doubt|one|ahnung|problem|eile|идей|проблем|разницы)(?!\w)")
_EXCLUSION = _r(
    r"(?:\b(?:except(?:\s+for)?|excluding|exclude|other\s+than|apart\s+from|minus)"
    r"|(?<!\w)(?:кроме|за\s+исключением|исключая|исключи)|\b(?:außer|ausgenommen|ausser|exklusive|ausschließlich\s+ohne)"
    # a verb of leaving out, its object after it: "skip anything about Certbot", "пропусти X", "ignoriere X"
    r"|\b(?:skip|ignore|leave\s+out|omit|ignoriere|ignorier|überspring\w*)|(?<!\w)(?:пропусти|не\s+(?:бери|учитывай"
    r"|включай|показывай))"
    # what the articles do not mention: "(that) don't mention Rails", "которые не упоминают X"
    r"|\b(?:that\s+|which\s+)?(?:don'?t|do\s+not|doesn'?t|does\s+not)\s+(?:mention|cover|talk\s+about|deal\s+with|include)"
    r"|(?<!\w)(?:где|которые|что)\s+не\s+(?:упомина\w+|говорится\s+(?:о|об|про))"
    r"|" + _OPENS_CLAUSE + r"(?:not|nothing|no|without|не|без|ни|nicht|nichts|ohne|kein\w*)(?!\s+" + _HEDGE + r")"
    # a negated topic preposition anywhere: "статьи про OCSP не про Certbot", "posts on ACME not about Certbot"
    r"|\b(?:not|nicht)(?=\s+(?:about|on|über|zu|zum|zur)\s)|(?<!\w)не(?=\s+(?:про|о|об)\s))"
    # what the marker is followed by before the words it governs: "about", "the", "posts on", "тех, что про",
    # "everything that concerns", "allem, was … betrifft"
    r"(?:\s+(?:about|on|for|the|any|anything|everything|stuff|posts?|articles?|news|ones?|those|that|which|are|is"
    r"|про|о|об|по|что|которые|тех|того|всего|касается|касаются|статей|постов|новостей"
    r"|über|zu|zum|zur|den|die|das|der|dem|des|was|denen|allem|alles|betrifft|beiträge|artikel|meldungen),?)*\s+"
)
# "without"/"без"/"ohne" right after a topic's one word: "Artikel über Ractor ohne YJIT" leaves YJIT out;
# "articles on running certificates without OCSP stapling" asks about the running
_WITHOUT_AFTER_TOPIC = _r(
    r"(?:\b(?:about|on|regarding|über|zu|zum|zur)|(?<!\w)(?:про|о|об))\s+[\w.+#'-]+\s+(?P<m>without|ohne|без)\s+"
)
# A sentence that ends in a verb of leaving out leaves its words out: "Статьи про Bundler не учитывай.",
# "Rails-Artikel bitte ausklammern.", "die Previews bitte weglassen"
_LEFT_OUT_BEFORE = _r(
    r"(?:^|(?<=[.!?;]\s))(?P<obj>[^.!?;]{1,80}?)\s+(?:(?:bitte|пожалуйста|please)\s+)?"
    r"(?:не\s+(?:учитывай|бери|включай|показывай|надо)|ausklammern|weglassen|ignorieren|ausschließen|auslassen"
    r"|überspringen|außen\s+vor\s+lassen)\s*(?=$|[.!?;])"
)
_CLAUSE_END = re.compile(r"[,.;:!?()—–]|\s-\s|\s(?:and|und|и|а|but|aber|но)\s", re.UNICODE)


@dataclass(frozen=True)
class ExclusionReading:
    excluded: tuple[str, ...]  # the text each marker governs ("Rails", "Certbot"), for the topic's words
    spans: tuple[tuple[int, int], ...]  # marker and governed words (cut from the search text)


def read_exclusions(text: str) -> ExclusionReading:
    excluded: list[str] = []
    spans: list[tuple[int, int]] = []
    for sentence in _LEFT_OUT_BEFORE.finditer(text):
        excluded.append(sentence.group("obj").strip())
        spans.append(sentence.span())
    position = 0
    while (marker := _next_marker(text, position)) is not None:
        start, governed_from = marker
        if any(a <= start < b for a, b in spans):
            position = governed_from
            continue
        end = _CLAUSE_END.search(text, governed_from)
        stop = end.start() if end is not None else len(text)
        governed = text[governed_from:stop].strip()
        if governed:
            excluded.append(governed)
            spans.append((start, stop))
        position = max(stop, governed_from)
    return ExclusionReading(tuple(excluded), tuple(spans))


def _next_marker(text: str, position: int) -> tuple[int, int] | None:
    """Where the next marker starts and the words it governs begin (None: no more)."""
    found = [(m.start(), m.end()) for m in (_EXCLUSION.search(text, position),) if m is not None]
    after_topic = _WITHOUT_AFTER_TOPIC.search(text, position)
    if after_topic is not None:
        found.append((after_topic.start("m"), after_topic.end()))
    return min(found) if found else None
