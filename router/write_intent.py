"""Write intents: a message that asks to write or change the collection (issue 23).

A grammar, not a phrase list: a clause whose verb acts on the collection as its object ("Add an
article titled …", "Объедини две статьи про YJIT", "Pinne den Beitrag über OCSP oben an"). The
verbs that *read* the collection are a closed class (find, show, summarize, compare, найди,
перескажи, zeige, fasse … zusammen …); an imperative of any other verb whose object is an
article, a post, the index … changes it. The imperative is told by its form: Russian by its
ending (сохрани, поправь, закрепи), German by a verb-first clause with its object's article
after it ("Korrigiere den …"), English by a clause-first word with a determiner after it
("Merge the two … posts"); a question ("how do I delete a certificate?") is no write.
"""

from __future__ import annotations

import re
from datetime import date

from router.intent import DIGEST_REQUEST, LIST_REQUEST
from router.reader import NUMBER_WORDS, as_the_grammar_reads, find_period
from router.reader import words_pattern as _r

# ---- the collection as an object ----
COLLECTION_NOUN = (
    r"(?:articles?|posts?|blog\s*posts?|entr(?:y|ies)|pages?|drafts?|stor(?:y|ies)|news|items?|titles?|tags?"
    r"|index|database|collection|tables?"
    r"|стат(?:ья|ью|ьи|ей|ьям|ьях|ье)|пост(?:ы|а|ов)?|запис(?:ь|и|ей)|публикаци\w*|черновик\w*|заголов\w*|заметк\w*"
    r"|новост\w*|индекс\w*|баз[уаы]\s+данных|таблиц\w*"
    r"|artikel\w*|beitr[aä]g\w*|eintr[aä]g\w*|seiten?|entw[uü]rf\w*|meldung\w*|titel\w*|index|datenbank\w*|notiz\w*"
    r"|sammlung|tabellen?)"
)

# The collection's nouns as users type them: a word one edit away ("Artkel", "сатьи") names it too.
NOUN_FORMS = ("articles", "article", "artikel", "статьи", "статья", "статью", "статей", "beiträge", "beitrag",
               "publications", "публикации")


def _one_edit_from(word: str, forms: tuple[str, ...]) -> str | None:
    """The first of ``forms`` that ``word`` (already casefolded) is one edit from, if any."""
    return next((form for form in forms if one_edit(word, form)), None)


def one_edit(word: str, form: str) -> bool:
    """``word`` is ``form`` with one letter changed, added, dropped, or two neighbours swapped."""
    if abs(len(word) - len(form)) > 1:
        return False
    if len(word) == len(form):
        differ = [i for i, (a, b) in enumerate(zip(word, form, strict=True)) if a != b]
        swapped = len(differ) == 2 and differ[1] == differ[0] + 1 and word[differ[0]] == form[differ[1]] \
            and word[differ[1]] == form[differ[0]]
        return len(differ) <= 1 or swapped
    short, long = sorted((word, form), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))



_DET = (
    r"(?:(?:a|an|the|this|that|these|those|my|our|your|new|all|every|each|some|another|one|\d+|old|latest"
    r"|эту|этот|эти|все|всех|новую|новый|новые|мою|мой|одну|последн\w+|каждую"
    r"|den|die|das|der|dem|einen|eine|ein|nen|'nen|ne|neuen|neue|neues|alle|jeden|jede|diesen|diese|dieses|meinen|meine"
    r"|mir|me|us|мне|нам|uns)\s+){0,3}"
)
POLITE = (
    r"(?:(?:please|pls|plz|kindly|bitte|пожалуйста|будьте\s+добры)[,\s]+|(?:could|can|would|will)\s+you\s+(?:please\s+)?"
    r"|(?:könnten|können|kannst|könntest|würdest|würden)\s+(?:sie|du)\s+(?:mir\s+)?(?:bitte\s+)?"
    r"|(?:не\s+могли\s+бы\s+вы|можешь|можете|мог\s+бы\s+ты)\s+(?:мне\s+)?(?:пожалуйста\s+)?"
    r"|(?:i\s+(?:want|need|would\s+like)\s+(?:you\s+)?to|я\s+хочу|хочу|нужно|надо"
    r"|ich\s+(?:möchte|will|würde\s+gern)\s+)\s*)*"
)
_WRITE_VERB = (
    r"(?:add|create|write|compose|draft|post|publish|republish|unpublish|hide|unhide|delete|remove|erase|drop"
    r"|purge|wipe|truncate|edit|change|modify|update|rename|retitle|rewrite|replace|set|mark|move|archive"
    r"|restore|import|upload|insert|approve|tag|untag|make|fix|correct"
    r"|добав\w*|созда\w*|напиши|написать|опубликуй\w*|опубликовать|скрой|скрыть|спрячь|удали\w*|сотри|стереть"
    r"|убери|убрать|очисти\w*|измени\w*|отредактируй\w*|поменяй|переименуй\w*|обнови\w*|исправь|замени"
    r"|пометь|отметь|сделай|перемести|архивируй|верни|импортируй|загрузи|сними|поправь"
    r"|füge|füg|erstelle|erstell|lege|leg|schreibe|schreib|veröffentliche|verstecke|versteck|verberge|blende"
    r"|lösche|lösch|entferne|entfern|ändere|änder|bearbeite|aktualisiere|benenne|ersetze|setze|setz|markiere"
    r"|verschiebe|archiviere|stelle|stell|mache|mach|importiere|lade|korrigiere|korrigier)"
)
# "<verb> <a/the/…> <article|post|статью|Beitrag>": the collection is the verb's object.
# Up to four words between the verb and the collection noun, none a preposition: a name ("edit the
# Let's Encrypt privacy policy article"), an attribute ("Ändere das Datum des Artikels", "измени дату статьи"); a
# preposition means the noun is not the verb's object ("write a summary of the articles").
_NOT_A_PREPOSITION = (
    r"(?:(?!(?:of|about|on|for|from|with|in|to|by|over|über|zu|zum|zur|von|vom|mit|aus|für|про|о|об|на|в|для|по"
    r"|из|с|от)\b)[\w.+#'-]+\s+){0,4}"
)
# "Удали, пожалуйста, все статьи", "Delete, please, the post": politeness between the verb and its object.
_POLITE_AFTER = r"(?:\s*,?\s+(?:please|kindly|bitte|mal|doch|пожалуйста)\s*,?)*"
_WRITE_OBJECT = _r(r"^" + POLITE + _WRITE_VERB + _POLITE_AFTER + r"\s+" + _DET + r"(?:[\"«„'][^\"»“']{1,80}[\"»“']\s+)?"
                   + _NOT_A_PREPOSITION + COLLECTION_NOUN + r"\b")
# A state the collection's items have: "as hidden", "auf versteckt", "скрытой", "to draft".
_STATE = _r(
    r"\b(?:hidden|invisible|visible|unpublished|published|public|private|draft)\b"
    r"|\bскрыт\w*|\bневидим\w*|\bвидим\w*|\bопубликован\w*|\bнеопубликован\w*|\bчерновик\w*"
    r"|\b(?:versteckt|verborgen|unsichtbar|sichtbar|veröffentlicht|unveröffentlicht|öffentlich|privat|entwurf)\b"
)
_WRITE_TO_STATE = _r(r"^" + POLITE + _WRITE_VERB + r"\b")
# German puts the verb last: "Kannst du den Artikel X löschen?", "Bitte den Beitrag auf versteckt setzen".
_GERMAN_INFINITIVE = _r(
    r"\b(?:hinzufügen|erstellen|anlegen|schreiben|veröffentlichen|verstecken|verbergen|ausblenden|löschen"
    r"|entfernen|ändern|bearbeiten|aktualisieren|umbenennen|ersetzen|setzen|stellen|markieren|verschieben"
    r"|archivieren|importieren|hochladen)\s*[?!.:]*$"
)
CLAUSES = _r(r"(?<=[.!?;:])\s+|\s*\n\s*|\s+[—–]\s+")  # a dash between spaces ends a clause too


# The commonest write imperatives, for a first word typed one letter off ("удоли статью", "delte the post").
_WRITE_FORMS = ("delete", "remove", "publish", "unpublish", "update", "edit", "rename", "удали", "добавь", "создай",
                "опубликуй", "измени", "скрой", "исправь", "lösche", "entferne", "ändere", "veröffentliche",
                "verstecke", "erstelle", "bearbeite")
# Words that open a message before its request ("слушай, а можешь …", "hey so", "sag mal"): no verb.
OPENER = r"(?:(?:слушай|слушайте|а|ну|так|hey|ok|okay|so|well|also|sag\s+mal|hör\s+mal|na)[,\s]+)*"


def _spelled_out(clause: str) -> str:
    """The clause with a misspelt write imperative at its start (after an opener and politeness)
    replaced by the verb it is one edit from ("pls edti the …", "удоли статью")."""
    lead = re.match(OPENER + POLITE, clause, re.IGNORECASE | re.UNICODE)
    head, body = (clause[: lead.end()], clause[lead.end():]) if lead else ("", clause)
    first, _, rest = body.partition(" ")
    word = first.casefold()
    if len(word) < 4 or re.fullmatch(_WRITE_VERB, word, re.IGNORECASE):
        return clause
    near = _one_edit_from(word, _WRITE_FORMS)
    return f"{head}{near} {rest}" if near else clause


# ---- any other verb acting on the collection ----
# The verbs that read the collection (a closed class): an imperative of any other verb whose object
# is the collection asks to change it ("Merge the two YJIT posts", "Закрепи статью", "Pinne den Beitrag").
_READ_VERB = _r(
    r"^(?:find|show|list|search|get|give|fetch|grab|pull|look|display|read|open|view|see|check|browse|scan|skim"
    r"|go|bring|dig|sort|order|arrange|filter|rank|count|compare|summari[sz]e|explain|describe|tell|recap|review"
    r"|analy[sz]e|quote|cite|name|recommend|suggest|pick|select|choose|highlight|send|email|share|help|collect"
    r"|gather|compile|return|retrieve|locate|track|identify|extract|match|let|walk|catch|point|print|output"
    r"|retell|paraphrase|recount|erzähl|erzähle|schildere|take"
    r"|возьми|возьмите|бери|берите|найди|покажи|выведи|дай|подбери|поищи|перечисли|назови|расскажи|объясни|опиши|сравни|перескажи|обобщи"
    r"|резюмируй|суммируй|суммаризируй|суммаризуй|открой|прочитай|прочти|посмотри|смотри|глянь|проверь|отсортируй|упорядочь|собери|выбери|посоветуй"
    r"|подскажи|порекомендуй|отфильтруй|процитируй|приведи|напомни|помоги|подкинь|скинь|пришли|отправь|кинь"
    r"|найдите|покажите|выведите|дайте|расскажите|объясните|подскажите|пришлите"
    r"|finde|find|zeig|zeige|such|suche|liste|gib|nenne|erkläre|erklär|beschreibe|vergleiche|fasse|fass|lies"
    r"|öffne|schau|prüfe|sortiere|ordne|sammle|wähle|empfiehl|hilf|schick|schicke|sende|zitiere|durchsuche"
    r"|filtere|hol|hole|bring|bringe|nimm|zähle)$"
)
# Words that open a clause and are no verb (determiners, pronouns, quantifiers, conjunctions).
_NO_VERB = _r(
    r"^(?:all|both|only|just|also|even|not|and|or|but|then|now|so|any|some|every|each|no|the|a|an|this|that"
    r"|these|those|my|our|your|their|its|here|there|latest|newest|recent|more|most|i|we|you|it|they|what|which"
    r"|need|want|would|like|love|wanna|gotta|please|thanks|hi|hello|hey|ok|okay"
    r"|эти|мои|твои|свои|наши|ваши|все|такие|те|самые|и|или|но|а|ли|и|свежие"
    r"|alle|nur|auch|und|oder|aber|dann|jetzt|die|der|das|den|dem|ein|eine|meine|deine|unsere|ich|wir|es)$"
)
_EN_DET = r"(?:the|a|an|all|every|each|this|that|these|those|my|our|both)"
_DE_DET = (r"(?:den|die|das|dem|der|des|einen|eine|ein|einem|alle|allen|jeden|jede|diesen|diese|dieses|diesem"
           r"|meinen|meine|unseren|unsere|sämtliche)")
_RU_IMPERATIVE = re.compile(r"^[а-яё]+(?:и|ите|й|йте|ь|ьте)$", re.I)
# "уязвимости", "версии", "новинки", "пользователь", "писатель": nouns
_RU_NOUN_ENDING = re.compile(r"(?:ости|ии|ции|ки|ги|хи|тель)$", re.I)
# "Zusammenfassung der …", "Sicherheit der …": a German noun's suffix, never an imperative's
_DE_NOUN_ENDING = re.compile(r"(?:ung|heit|keit|schaft|tion|tät|nis)$", re.I)
# "немецкой", "русской", "новой", "старый", "последней": adjectives, not imperatives ("скрой", "открой" are)
_RU_ADJECTIVE_ENDING = re.compile(r"(?:ий|ый|ей|ской|цкой|ной|вой|жой|шой|чой|щой)$", re.I)
# Between the verb and its object: words that are not source prepositions ("write a summary *of* the
# articles" reads them); a location preposition after the first object is where the change happens
# ("Поправь опечатку *в* заголовке статьи", "Korrigiere den Tippfehler *im* Titel des Artikels").
_SOURCE_PREPOSITION = _r(
    r"^(?:of|about|on|for|from|with|to|by|over|across|among|according|über|zu|zum|zur|von|vom|mit|aus|für|bei|laut"
    r"|gemäß|про|о|об|на|для|по|из|с|от|среди|между|согласно)$"
)
_LOCATION_PREPOSITION = _r(r"^(?:in|inside|within|в|во|im|in|innerhalb)$")
_OBJECT_PRONOUN = _r(r"^(?:it|them|those|her|его|её|ее|их|es|ihn|sie|diese)$")
NAMES_ITEM = _r(r"\b" + COLLECTION_NOUN + r"\b")  # the message names an article, a post, a Beitrag (the gate's too)
# Where a clause joins another: "… and save it", "… und rufe X auf".
CONJUNCTION = _r(r"\s+(?:and|и|und|then|затем|потом|dann)\s+")
_WORD = re.compile(r"[\w'’-]+", re.U)


_RU_INFINITIVE = re.compile(r"^[а-яё]+(?:ть|ти|чь)(?:ся)?$", re.I)
# The verbs of reading as infinitives, for "можешь найти …" ("можешь поправить …" changes).
_RU_READ_INFINITIVE = re.compile(
    r"^(?:най|показа|вывес|подобра|поиска|перечисли|назва|рассказа|объясни|описа|сравни|пересказа|обобщи"
    r"|откры|прочита|прочес|посмотре|гляну|провери|отсортирова|упорядочи|собра|выбра|посоветова|подсказа"
    r"|порекомендова|отфильтрова|процитирова|привес|напомни|помоч|скину|присла|отправи|да|сказа|узна"
    r"|поня|разобра|почита)\w*$", re.I)


# The commonest reading imperatives, for a first word typed one letter off ("покжи статьи", "shwo the posts").
_READ_FORMS = ("show", "find", "list", "search", "покажи", "найди", "поищи", "zeige", "finde", "suche")


def _reads(word: str) -> bool:
    """A verb of reading, in the Russian polite plural too ("подберите", "перечислите": the "-те" of "подбери"),
    or one of the commonest typed one letter off."""
    folded = word.casefold()
    return bool(_READ_VERB.match(word) or (folded.endswith("те") and _READ_VERB.match(word[:-2]))
                or (len(folded) >= 4 and _one_edit_from(folded, _READ_FORMS) is not None))


def _imperative(words: list[str], *, after_modal: bool = False) -> bool:
    """The clause's first word is an imperative by its form (after a modal, "можешь поправить …", a
    Russian infinitive), and no verb of reading."""
    first = words[0]
    if after_modal and _RU_INFINITIVE.match(first):
        return not _RU_READ_INFINITIVE.match(first)
    if _reads(first) or _NO_VERB.match(first) or re.fullmatch(COLLECTION_NOUN, first, re.I):
        return False
    if first.isdigit() or first.casefold() in NUMBER_WORDS:
        return False  # a count opens it: "Три самые старые статьи о …" ("три" is also "rub!")
    if _SOURCE_PREPOSITION.match(first) or _LOCATION_PREPOSITION.match(first):
        return False  # "Bitte von den frühesten Artikeln an": a clause opened by a preposition has no imperative
    if re.fullmatch(r"[a-z]{2,}ing", first, re.I) and not _reads(first):
        return False  # "Taking the Russian posts as the source, explain …": a participle opens the clause
    if re.match(r"[а-яё]", first, re.I):
        return bool(_RU_IMPERATIVE.match(first)) and not _RU_NOUN_ENDING.search(first) \
            and not _RU_ADJECTIVE_ENDING.search(first)
    if len(words) < 2 or _DE_NOUN_ENDING.search(first):
        return False
    following = words[2] if len(words) > 2 and re.fullmatch(r"bitte|mal|doch|please", words[1], re.I) else words[1]
    return bool(re.fullmatch(_EN_DET, following, re.I) or re.fullmatch(_DE_DET, following, re.I))


def _lead_stripped(clause: str) -> tuple[str, str]:
    """The clause without its opener ("слушай, а", "hey so"), then also without its politeness ("could you")."""
    opened = re.sub("^" + OPENER, "", clause, flags=re.I | re.U)
    return opened, re.sub("^" + POLITE, "", opened, flags=re.I | re.U)


def _acts_on_collection(clause: str, *, named_before: bool) -> bool:
    """ "<imperative> <up to five words> <collection noun>", or "<imperative> it" after a clause
    that named the collection ("Translate the article … and save it")."""
    opened, text = _lead_stripped(clause)
    if text == opened and clause.rstrip().endswith("?"):
        return False  # "Haben die Beiträge über Ruby Kommentare?": a question, verb first; "Could you tag …?" asks
    words = _WORD.findall(text)
    if not words or QUESTION_WORD.match(words[0]) or not _imperative(words, after_modal=text != opened):
        return False
    # "прошлой зимой новости руби": a first word that is a period's ("прошлой") is no imperative; checked
    # only where a write would be concluded (the period grammar is the costly part)
    if named_before and len(words) > 1 and _OBJECT_PRONOUN.match(words[1]):
        return not _in_a_period(text, text.find(words[0]))
    changes = _CHANGE_WORD.fullmatch(words[0]) is not None  # "скрой из выдачи все новости …": from where
    for i, word in enumerate(words[1:7], start=1):
        if QUESTION_WORD.fullmatch(word):
            return False  # "Уточни, как в статьях про …": the articles are the question clause's, not the verb's object
        if re.fullmatch(COLLECTION_NOUN, word, re.I):
            return not _in_a_period(text, text.find(words[0]))
        if _reads(word):
            return False  # "игнорируй мелкие патч-релизы, покажи статьи …": the articles are the reading verb's
        if not changes and (_SOURCE_PREPOSITION.match(word) or (_LOCATION_PREPOSITION.match(word) and i == 1)):
            return False
    return False


# The item a message named, referred to again: a pronoun, or "the (older) copy / one / duplicate".
_SAME_ITEM = _r(r"^(?:copy|copies|duplicate|one|ones|version|entry|kopie|duplikat|eintrag|версию|копию|дубль|дубликат"
                r"|запись)$")
# Verbs that also shape the answer ("Make it short", "Напиши это по-немецки", "Schreib es kürzer").
_SHAPES_THE_ANSWER = _r(r"^(?:make|write|compose|draft|set|сделай|напиши|написать|mach|mache|schreib|schreibe)$")


def _changes_the_named_item(clause: str) -> bool:
    """A change imperative whose object points back at an item the message named ("Поправь её",
    "Delete the older copy", "publish it to the collection")."""
    words = _WORD.findall(_lead_stripped(clause)[1])
    if len(words) < 2 or not re.fullmatch(_WRITE_VERB, words[0], re.I) or _reads(words[0]) \
            or _SHAPES_THE_ANSWER.match(words[0]):
        return False
    return bool(_OBJECT_PRONOUN.match(words[1])) or any(_SAME_ITEM.match(w) for w in words[1:4])


# German puts the verb last; an infinitive there that does not read ("… bitte offline nehmen") changes
# the collection noun before it. Lower case tells a German verb from a noun.
_GERMAN_LAST_VERB = re.compile(r"\b([a-zäöüß]{3,}(?:en|ern|eln))\s*[?!.:]*$")
_GERMAN_READ_INFINITIVE = re.compile(
    r"(?:zeigen|finden|suchen|listen|nennen|geben|erklären|fassen|vergleichen|lesen|sehen|haben|sein|bekommen"
    r"|wissen|lernen|verstehen|beschreiben|sortieren|ordnen|filtern|holen|schicken|senden|empfehlen|lassen"
    r"|schauen|erfahren|kennen|sammeln|zählen|können|müssen|sollen|wollen|dürfen|möchten|werden|worden|gegeben"
    r"|helfen|prüfen|überprüfen|bringen)$|^(?:zusammen|oben|unten|gestern|morgen|vorhanden|ihnen|denen|einen|allen|diesen|jenen|meinen|deinen|unseren"
    r"|neuen|letzten|ersten|anderen|beiden|neuesten|aktuellen|älteren|früheren)$"
)


def _in_a_period(text: str, at: int) -> bool:
    """The character at ``at`` is part of a period the reader finds in ``text`` (only its span matters here).
    The reader's spans are of the text as the grammar reads it (years in digits, holidays as days): ``at`` is
    moved as that moves it."""
    period = find_period(text, date.today())
    at = len(as_the_grammar_reads(text[:at]))
    return period is not None and period.start <= at < period.end


_GERMAN_OBJECT = _r(r"\b" + r"(?:den|die|das|dem|der|des|einen|eine|ein|alle|diesen|diese|dieses)\s+(?:[\w-]+\s+){0,2}"
                    + COLLECTION_NOUN + r"\b")


# A clause after a comma opened by a question word or a subordinator: its verb is last by German word order
# ("Erklär mir, was die Beiträge … berichten"), and the collection noun is that clause's, not an object to change.
_SUBORDINATE_LAST = _r(r",\s*(?:was|wie|welche\w*|warum|wieso|weshalb|wann|wo\w*|wer|ob|dass)\s[^,]*$")


def _german_verb_last(clause: str) -> bool:
    if _SUBORDINATE_LAST.search(clause):
        return False
    last = _GERMAN_LAST_VERB.search(clause)
    if last is not None and _in_a_period(clause, last.start(1)):
        return False  # "zeig mal die beiträge von vor 6 monaten": typed lower case, the period's unit
    if last is not None and clause == clause.lower() and not _GERMAN_INFINITIVE.match(last.group(1)) \
            and not _CHANGE_WORD.search(" ".join(clause[: last.end(1)].split()[-2:])):
        # Typed all in lower case, a noun's plural looks like an infinitive ("… einträge zu challenge typen"):
        # case tells nothing there, so only a verb of change does ("löschen", "offline nehmen").
        return False
    return (last is not None and not _GERMAN_READ_INFINITIVE.search(last.group(1))
            and _GERMAN_OBJECT.search(clause[: last.start()]) is not None and not QUESTION_WORD.match(clause))


def _structural_write(clause: str, *, named_in_message: bool = False) -> bool:
    if _german_verb_last(clause):
        return True
    if named_in_message and _changes_the_named_item(clause):
        return True
    named = False
    for part in CONJUNCTION.split(clause):
        if _acts_on_collection(part.strip(" ,"), named_before=named):
            return True
        named = named or NAMES_ITEM.search(part) is not None
    return False


# ---- a wish that the collection be changed ----
# "I want every Let's Encrypt article older than 2016 archived", "Нужно, чтобы заметка … была переименована",
# "Ich möchte, dass der Autor des Beitrags geändert wird", "Die Artikel über X sollen nicht mehr sichtbar sein",
# "можно ли удалить из базы заметку …?": a head of wanting, needing or permitting, then a verb of change in
# any form (infinitive, past, passive participle) or a state of visibility, with the collection as its
# subject or object (next to it, or with the wish's head between them). The participles that also
# describe what is read ("published", "updated", "added", "created in 2024") are left out: "I want the
# posts published last year" reads.
_WISH = _r(
    r"\b(?:i\s+(?:want|need|would\s+like|wish)|i'd\s+like|we\s+(?:want|need|would\s+like)|make\s+sure"
    r"|it\s+would\s+be\s+\w+\s+if|(?:should|must|needs?\s+to|has\s+to|have\s+to)\s+(?:be|get)"
    r"|хочу|хотим|хотел[аи]?\s+бы|нужно|надо|необходимо|требуется|прошу|просьба|можно\s+ли|нельзя\s+ли|пусть"
    r"|давайте|следует|было\s+бы\s+\w+"
    r"|(?:ich|wir)\s+(?:möchten?|will|wollen|wünsche|hätte\w*\s+gern)|soll|sollen|sollte|sollten|muss|müssen"
    r"|wäre\s+\w+,?\s+wenn|kann\s+man|könnt\s+ihr)\b"
)
_CHANGE = (
    r"(?:(?:re|un)publish|unpublished|hide|hidden|hiding|delete|deleted|deleting|remove|removed|removing|erase"
    r"|erased|purge|purged|archive|archived|archiving|rename|renamed|retitle|retitled|edit|edited|modify|modified"
    r"|change|replace|replaced|pin|pinned|unpin|merge|merged|take\s+down|taken\s+down|unlist|unlisted"
    r"|invisible|visible|public|private"
    r"|переименов\w*|удал(?:и|ить|ён|ен|ена|ено|ены|ил|ила|или|ять|яли|ите)|опубликова(?:ть|л|ла|ли)|скры\w*"
    r"|скрой|скройте|спрята\w*|убра\w*|убер\w*|добав(?:ить|ь|ил|ила|или)|созда(?:ть|й|л|ла|ли)|заархивир\w*|архивир\w*"
    r"|отредактир\w*|измен(?:ить|ил|ила|или|ён|ена|ено|ены|и|ите)|исправ(?:ить|ь|ил|или|лен\w*)|замен\w*"
    r"|поправ\w*|снят\w*|сним\w*|стер(?:ть|т\w*)|невидим\w*|видим\w*|публичн\w*"
    r"|geändert|ändern|gelöscht|löschen|entfernt|entfernen|umbenannt|umbenennen|versteckt|verstecken|verborgen"
    r"|ausgeblendet|ausblenden|veröffentlichen|archiviert|archivieren|hinzufügen|anlegen|korrigiert|korrigieren"
    r"|ersetzt|ersetzen|verschoben|verschieben|depubliziert|sichtbar|unsichtbar|öffentlich|offline)"
)
_CHANGE_WORD = _r(r"\b" + _CHANGE + r"\b")
# After the head, a verb of learning or reading makes the change the topic ("I want to know which posts were removed").
_WISH_TO_READ = _r(
    r"\b(?:know|see|read|learn|understand|find|hear|get|have|узнать|знать|понять|прочитать|почитать|прочесть|найти"
    r"|увидеть|посмотреть|разобраться|выяснить|wissen|erfahren|lesen|sehen|verstehen|finden|haben|kennen)\b"
)
# Between the head and the change: a word that opens a question or a relative clause makes the change its topic.
_EMBEDDED = _r(
    r"\b(?:what|why|how|which|who|when|where|whether|that|что|почему|как|какие|какой|какая|когда|где|зачем"
    r"|который|которая|которое|которые|ли|was|warum|wie|welche\w*|wann|wo|ob)\b"
)
# A change as a clause's predicate: "were removed", "была переименована", "geändert wird".
_AUXILIARY = _r(r"(?:be|is|are|was|were|been|get|got|был|была|было|были|будет|будут|стал[аи]?|wird|werden|wurde"
                r"|wurden|sein|ist|sind|worden)")
# A preposition that opens what a text is about: after it, a change belongs to the topic ("posts about
# features removed in Ruby 3.0").
_TOPIC_PREPOSITION = _r(r"^(?:about|on|regarding|concerning|про|о|об|обо|über|zu|zum|zur|bezüglich)$")
_TITLE = re.compile(r"[«„\"“][^»“\"”]{1,80}[»“\"”]")


def _wish_to_change(clause: str) -> bool:
    """A wish whose head precedes a verb of change, the collection that verb's subject or object."""
    text = _TITLE.sub(" «title» ", clause)  # a quoted title is one word, whatever it says
    spans = list(_WORD.finditer(text))
    words = [m.group() for m in spans]
    if not words or QUESTION_WORD.match(text) or _reads(words[0]):
        return False
    for wish in _WISH.finditer(text):
        change = _CHANGE_WORD.search(text, wish.end())
        if change is None:
            continue
        between = text[wish.end():change.start()]
        if _WISH_TO_READ.search(between) or _EMBEDDED.search(between):
            continue
        at = next(i for i, m in enumerate(spans) if m.start() >= change.start())
        predicate = any(_AUXILIARY.fullmatch(w) for w in words[max(0, at - 1):at + 2])
        for i, word in enumerate(words):
            if not re.fullmatch(COLLECTION_NOUN, word, re.I):
                continue
            if i > at:  # the object after the verb: up to three words between, none naming a topic
                gap = words[at + 1:i]
                if len(gap) <= 3 and not any(_SOURCE_PREPOSITION.match(w) and w.casefold() not in ("из", "from", "aus")
                                             for w in gap):
                    return True
            elif i < at:  # the subject before it: the wish's head between them, the change its predicate
                gap = words[i + 1:at]  # ("… dass der Titel des Artikels über X geändert wird"), or next to it
                head_between = spans[i].end() <= wish.start()  # "Die Artikel … sollen … sichtbar sein"
                if head_between or (len(gap) <= 8 and predicate) \
                        or (len(gap) <= 4 and not any(_TOPIC_PREPOSITION.match(w) for w in gap)):
                    return True
    return False


def write_intent(text: str) -> str | None:
    """The clause that asks to write or change the collection, or None."""
    # An item named in one sentence is the object of a change in the next: "В статье про … опечатка. Поправь
    # её.", "… there's a duplicate post. Delete the older copy."
    named = NAMES_ITEM.search(text) is not None
    for clause in (_spelled_out(c.strip(" ,")) for c in CLAUSES.split(text)):
        if not clause or DIGEST_REQUEST.search(clause) or LIST_REQUEST.search(clause):  # "Составь обзор статей про …" reads them
            continue
        if _structural_write(clause, named_in_message=named) or _wish_to_change(clause):
            return clause
        if _WRITE_OBJECT.search(clause):
            return clause
        has_object = NAMES_ITEM.search(clause)
        if has_object and _STATE.search(clause) and _WRITE_TO_STATE.search(clause):
            return clause  # "Setz den Beitrag Impressum auf versteckt", "mark post 12 as hidden"
        if has_object and _GERMAN_INFINITIVE.search(clause) and not QUESTION_WORD.match(clause):
            return clause
        if has_object and _TAKE_AWAY.search(clause):
            return clause  # "Take down the post about …", "Nimm den Beitrag über … offline"
    return None


# "Take" reads ("take the oldest posts about YAML and explain …", "возьми самые ранние статьи …"), but
# taken away it changes the collection: "take down", "take … offline", "nimm … raus / vom Netz".
_TAKE_AWAY = _r(
    r"^" + POLITE + r"(?:take|nimm|nehmt)\b(?:\s+(?!(?:and|und|then|dann)\b)\S+){0,8}?"
    r"\s+(?:down|offline|off-line|off|raus|heraus|vom\s+netz)\b"
)


QUESTION_WORD = _r(r"^(?:how|why|what|when|where|which|who|как|почему|зачем|что|когда|где|wie|warum|was|wann|wo)\b")
