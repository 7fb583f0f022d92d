"""Questions about the assistant itself, read by sentence structure (issue 23): the second person is
the subject of a verb that does not read or tell ("What languages do you speak?", "Welche Sprachen
verstehst du?", "Ты на чём работаешь?"), an identity question ("Are you an actual person …?",
"Bist du ein echter Mensch?"), or the assistant is the topic ("Tell me about yourself", "Расскажи о
себе", "Erzähl was über dich").

A second-person verb of reading or telling ("can you find …", "do you know anything about …",
"kannst du mir … erklären", "ты можешь найти …") is a request: its topic decides, not this rule.
The caller checks first that the message does not name the collection.
"""

from __future__ import annotations

import re

from router.reader import words_pattern as _r

# Verbs (stems) of reading, telling, giving, helping, opining: a "you" with these asks for content.
_READING = _r(
    r"^(?:tell|explain|show|find|know|have|recommend|suggest|think|say|help|give|search|look|list|summar|compar"
    r"|describ|get|fetch|pull|dig|check|point|walk|name|share|send|provide|answer|clarify|remind|read|recall"
    r"|расска|объясн|покаж|показ|найд|найт|наход|зна|подскаж|посовет|дума|счита|скаж|сказ|помо|помоч|дай|дат|сравн"
    r"|опис|перескаж|иска|ищ|поиск|подбер|выведи|вывест|напомн|проверь|провер|прочит|пиш|писа"
    r"|erzähl|erklär|zeig|find|weiß|wisst|kenn|hast|habt|empfiehl|empfehl|denk|sag|hilf|helf|gib|geb|such|list"
    r"|vergleich|beschreib|fass|nenn|schick|prüf|lies|les|hältst|halt|meinst|glaubst)"
)
# Modal and auxiliary verbs: the verb that counts is the next one.
_MODAL = _r(r"^(?:can|could|would|will|do|did|does|shall|should|might|may|must|please|kannst|könntest|würdest"
            r"|willst|möchtest|musst|sollst|darfst|wirst|можешь|могли|можете|мог|могла|будешь|хочешь|сможешь"
            r"|умеешь|умеете|able|going|gonna|to)$")
_EN_SUBJECT = _r(r"\b(?:can|could|would|will|do|did|does|have|has|should|might|were|are)\s+you\s+(?:\w+\s+)??(\w+)")
_EN_IDENTITY = _r(r"(?:^|[,;.!?]\s*)(?:so\s+|and\s+|but\s+)?(?:are|were)\s+you\s+(?:a|an|the|some|really|actually"
                  r"|real|human|alive|sentient|just|even|like|one)\b|\bwhat\s+(?:kind|sort)\s+of\s+\w+\s+are\s+you\b")
_DE_SUBJECT = _r(r"\b(\w+(?:st|ßt|zt))\s+du\b|\bdu\s+(\w+(?:st|ßt|zt))\b")
_DE_IDENTITY = _r(r"\bbist\s+du\s+(?:ein|eine|wirklich|echt|eigentlich|ein\s+echter|überhaupt)\b|\bwer\s+bist\s+du\b")
_RU_SUBJECT = _r(r"(?<!\w)(?:ты|вы)\s+(?:\w+\s+){0,3}?([а-яё]+(?:ешь|ёшь|ишь|ете|ёте|ите))(?!\w)"
                 r"|(?<!\w)([а-яё]+(?:ешь|ёшь|ишь))(?:\s+ли)?\s+(?:ты|вы)(?!\w)")
# "Вы бот или живой человек?": Russian has no copula; a short question of "ты/вы" and no verb of theirs.
_RU_IDENTITY = _r(r"^(?:а\s+|ну\s+|слушай,?\s+)?(?:ты|вы)\s+(?![а-яё]*(?:ешь|ёшь|ишь|ете|ёте|ите)(?!\w))"
                  r"(?:[а-яё-]+[\s,]+){0,4}?[а-яё-]+\s*\?$")
_RU_OBJECT = _r(r"(?<!\w)(?:тебя|тебе|вас|вам)\s+(?:\w+\s+)?(зовут|назвали|создал\w*|сделал\w*|обучил\w*|написал\w*)")
_INFINITIVE = _r(r"^(?:[а-яё]+(?:ть|ти|чь)|[a-zäöüß]+(?:en|ern|eln))$")
_ABOUT_YOU = _r(r"\b(?:about|of)\s+(?:yourself|you)\b(?!\s+(?:know|have|think))|(?<!\w)(?:о|про)\s+(?:себе|себя|тебе|тебя)(?!\w)"
                r"|\b(?:über|von)\s+(?:dich|dir|sich)\b")
_WORD = re.compile(r"[^\W\d_]+", re.U)
_IMPERSONAL = _r(r"\b(?:how|where|when|why|whom)\s*$")
# A thing named by its shape (CamelCase, capitals, letters with digits): "Can you run Ruby 3.4 on
# Windows?" asks about it, not about the assistant.
_NAMED = re.compile(r"(?<![\w.])(?:[A-Za-z]+[a-z][A-Z]\w*|[A-Z]{3,}\w*|[A-Za-z]+[\d.]*\d[\w.]*|\d+(?:\.\d+)+)(?![\w])")


def _reads(word: str) -> bool:
    """A verb of reading or telling, also behind a German separable prefix ("raussuchen", "zusammenfassen")."""
    return any(_READING.match(word[i:]) for i in range(0, min(len(word) - 2, 9)))


def _not_reading(verb: str, after: str) -> bool:
    """The verb (or, after a modal, the next verb) is not one of reading or telling."""
    if _MODAL.match(verb):
        nxt = next((w for w in _WORD.findall(after) if _INFINITIVE.match(w) or not re.match(r"[а-яё]", w, re.I)), None)
        return nxt is not None and not _reads(nxt) and not _MODAL.match(nxt)
    return not _reads(verb)


def asks_about_the_assistant(text: str) -> bool:
    """The message asks about the assistant, not about the collection's topics (see the module)."""
    if _NAMED.search(text):
        return False
    if _ABOUT_YOU.search(text) or _EN_IDENTITY.search(text) or _DE_IDENTITY.search(text) or _RU_OBJECT.search(text) \
            or _RU_IDENTITY.search(text):
        return True
    for pattern in (_EN_SUBJECT, _RU_SUBJECT):
        for match in pattern.finditer(text):
            verb = next(g for g in match.groups() if g)
            if _IMPERSONAL.search(text[:match.start()]) and _WORD.search(text[match.end():]):
                continue  # "How do you renew a certificate?": "you" is anyone
            if _not_reading(verb, text[match.end():]):
                return True
    for match in _DE_SUBJECT.finditer(text):
        verb = next(g for g in match.groups() if g)
        rest = text[match.end():]
        if _MODAL.match(verb):  # "Kannst du mir … erklären?": the infinitive comes last
            last = re.findall(r"\b([a-zäöüß]+(?:en|ern|eln))\b", rest)
            if last and not _reads(last[-1]):
                return True
            continue
        if not _reads(verb):
            return True
    return False
