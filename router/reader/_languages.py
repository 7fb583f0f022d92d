"""Language cues: which languages' articles the question asks for, told apart from the
language it wants the answer in.

Each naming of a language is found with its form: an adjective on the articles ("German
articles", "немецкие статьи", "russische Beiträge") always names the articles; a phrase
("in German", "auf Deutsch", "на немецком", "по-немецки") names the answer when an answer verb
or a noun for the answer's form governs it ("answer in English", "fass sie auf Deutsch zusammen",
"перескажи их на русском", "the gist in German"), when it trails a question that already names the
articles' language, or beside "in any language"; otherwise the articles.
Several articles' languages ("the Russian and the German announcements") are kept as a list;
"in all languages" means no filter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.results import Language
from router.reader._fields import as_words
from router.reader._patterns import sentence_ends_between, without_spans
from router.reader._patterns import words_pattern as _r
from router.reader._spelling import inner_edits

# Asking in which languages a thing is written (every language is searched; the question asks for the list).
WHICH_LANGUAGES = r"\b(?:in|on)\s+which\s+languages\b|(?<!\w)(?:на|в)\s+каких\s+языках(?!\w)|\bin\s+welchen\s+sprachen\b"
# Indifference to the language, by its grammar rather than by phrase: a word for language and a word
# of indifference in one sentence, a few words apart in either order ("на каком языке — без разницы",
# "whatever language", "die Sprache ist mir wurscht", "language: don't care"). "Gleich" only as a
# predicate ("ist mir gleich"): "in der gleichen Sprache" asks for one language.
_LANGUAGE_NOUN = r"(?:(?:(?:на|в|in|auf)\s+)?(?:каком|какой|which|what|welcher|welche)\s+)?(?:languages?|язык\w*|sprachen?)"
_INDIFFERENT = (
    r"(?:whatever|no\s+matter|does\s*n[o'’]?t\s+matter|does\s+not\s+matter|do\s*n[o'’]?t\s+care|do\s+not\s+care"
    r"|irrelevant|unimportant|not\s+important|без\s+разницы|неважно|не\s+важно|вс[её]\s+равно|не\s+имеет\s+значения"
    r"|не\s+принципиально|непринципиально|по\s+барабану|пофиг\w*|хоть(?=\s+(?:на\s+|в\s+)?как)|egal|wurscht|wurst|schnuppe|beliebig\w*"
    r"|unwichtig|nicht\s+wichtig"
    r"|keine\s+rolle|ist\s+(?:mir\s+)?gleich)(?![\w-])"
)
_INDIFFERENT_TO_LANGUAGE = (r"(?<![\w-])" + _LANGUAGE_NOUN + r"(?![\w-])[^.?!;\n]{0,25}?(?<![\w-])" + _INDIFFERENT
                            + r"|(?<![\w-])" + _INDIFFERENT + r"[^.?!;\n]{0,20}?(?<![\w-])" + _LANGUAGE_NOUN + r"(?![\w-])")
_ALL_LANGUAGES = _r(
    r"\b(?:in\s+|across\s+|from\s+)?(?:any|all|every|each|all\s+three|all\s+the|both)\s+languages?\b"
    r"|\bregardless\s+of\s+(?:the\s+)?language\b"
    r"|\bmultilingual\b|\bcross-?(?:language|lingual)\b|\bmehrsprachig\w*|\bsprachübergreifend\w*|(?<!\w)многоязычн\w*"
    # the articles' noun taken along: "the articles' language doesn't matter"
    r"|\b(?:the\s+)?(?:(?:article|post|source)s?'?\s+)?language\s+(?:does\s*n[o']?t|doesn't|does\s+not)\s+matter\b"
    r"|\bany\s+language\s+is\s+fine\b"
    r"|(?<!\w)язык\s+любой(?!\w)|(?<!\w)любой\s+язык(?!\w)"
    # the languages a thing exists in: "in which languages …", "на каких языках …", "in welchen Sprachen …"
    r"|" + WHICH_LANGUAGES +
    r"|(?<!\w)язык\s+(?:стат\w+\s+|материал\w+\s+|публикаци\w+\s+)?(?:не\s+важен|неважен|не\s+имеет\s+значения)"
    r"|(?<!\w)межъязыков\w*|(?<!\w)без\s+(?:учёта|учета)\s+языка"
    r"|на\s+(?:всех|любых|любом|разных|трёх|трех)(?:\s+трёх|\s+трех)?\s+язык\w*|(?:всех|всем|любых|любым|любом|каждом|обоих|обоим)\s+(?:тр[её]х\s+|тр[её]м\s+)?язык\w*"
    r"|независимо\s+от\s+языка|на\s+любом\s+из\s+языков|все\s+языки"
    r"|\b(?:in\s+|auf\s+)?(?:allen|jeder|jede|beliebiger|allen\s+drei)\s+sprachen?\b"
    r"|\bsprachunabhängig\w*|\bunabhängig\s+von\s+der\s+sprache|\balle\s+sprachen\b"
    # "no matter which language", "Sprache spielt keine Rolle", "egal in welcher Sprache", "неважно, на каком
    # языке": the grammar above, not a phrase each
    r"|" + _INDIFFERENT_TO_LANGUAGE
)
# The ISO codes typed in capitals name a language too ("EN only", "in RU and DE", "EN статьи"); in lower
# case they are words or domains ("de", ".ru").
_STEMS: tuple[tuple[str, Language], ...] = (
    (r"german|deutsch\w*|немецк\w*|по-немецки|(?-i:DE)", "de"),
    (r"english|englisch\w*|английск\w*|англоязычн\w*|по-английски|англ|(?-i:EN)", "en"),  # "на англ", "по англ статьям"
    (r"russian|russisch\w*|русск\w*|русскоязычн\w*|по-русски|(?-i:RU)", "ru"),
)
# "Russian-language articles", "English-speaking blogs": the compound is the adjective.
_MENTION = _r(r"(?:(?<![\w-])|(?<=\bnon-)|(?<=\bnicht-))(?:" + "|".join(f"(?P<{code}>{stem})" for stem, code in _STEMS)
              + r")(?:-(?:language|speaking))?(?![\w-])")
# "in German", "auf Deutsch", "на немецком (языке)", "по-немецки": a phrase, not an adjective.
_PHRASE_BEFORE = _r(r"(?:\b(?:in|auf)|(?<!\w)на)\s+$")
_PHRASE_WORD = _r(r"^(?:по-\w+|deutsch|englisch|russisch|english|german|russian|немецком|английском|русском|англ)$")
_ANSWER_VERB = _r(
    r"\b(?:answer\w*|reply|respond|write|summari[sz]e|explain|recap|retell|translate|tell|describe)\b"
    r"|(?<!\w)(?:ответ\w*|напиши|пиши|перескажи|обобщи|резюмируй|объясни|расскажи|опиши|переведи|скажи)(?!\w)"
    r"|\b(?:(?:be)?antworte\w*|antwort|schreib\w*|fass\w*|erkläre?|erklär|beschreibe|übersetze|erzähl\w*|schildere?"
    r"|sag)\b"
)
# A noun for the answer's form governs the phrase too, when no collection noun stands between them
# ("give me the gist in German", "обзор на английском"; not "a summary of posts in German").
_ANSWER_FORM = _r(
    r"\b(?:gist|summary|overview|recap|rundown|synopsis|tl;?dr|zusammenfassung|überblick|kurzfassung)\b"
    r"|(?<!\w)(?:обзор|выжимк\w*|резюме|пересказ|сводк\w*|кратко|коротко|вкратце)(?!\w)"
)
# A verb the phrase governs from after it ("auf Deutsch zusammenfassen / antworten / erklären").
_ANSWER_VERB_AFTER = _r(
    r"^\s*(?:language\s+)?(?:языке\s+)?(?:bitte\s+)?(?:zusammen\w*|antworten|beantworten|erklären|erklärt|beschreiben)\b"
)
# The collection's nouns: a language named on one of them is proven to be the articles' language
# ("German articles", "Beiträge … auf Deutsch"), so it may override a capable model's choice.
_COLLECTION = (
    r"(?:articles?|posts?|news|stories|publications?|entries|docs|write-?ups?|blog-?posts?"
    r"|стат(?:ья|ью|ьи|ей|ьям|ьях|ье)|пост(?:ы|ов|ах)?|публикаци\w*|новост\w*|материал\w*"
    r"|artikel\w*|beitr[aä]g\w*|meldung\w*|nachricht\w*|texte?|blogpost\w*|blogbeitr[aä]g\w*)"
)
_NOUN_AFTER = _r(r"^(?:[- ]language|sprachig\w*)?\s+(?:\w+\s+)?" + _COLLECTION + r"\b")
# "auf Deutsch erschienene Beiträge", "на немецком вышедшие статьи": the phrase on a noun after it, a
# participle between them.
_NOUN_AFTER_PHRASE = _r(r"^\s+(?:[\w-]+(?:ene|enen|ten|tes|nen|ные|ных|шие|ших)\s+)?" + _COLLECTION + r"\b")
_NOUN_BEFORE = _r(r"\b" + _COLLECTION + r"\b[^.?!]{0,60}$")
_PLEASE_END = _r(r"^\s*,?\s*please\s*[.!]?\s*$")
# A phrase that heads the message before a colon or a dash says how to answer what follows.
_LEAD_PLEASE = _r(r"^\W*(?:(?:please|bitte|пожалуйста)\W*)?$")
_LEAD_COLON = _r(r"^(?:\s*(?:языке|sprache|language))?\s*,?\s*(?:please|bitte|пожалуйста)?\s*[:—–]")
_END = _r(r"^(?:\s*(?:языке|sprache))?\s*(?:,?\s*(?:please|bitte|пожалуйста))?\s*[.!?]*\s*$")


@dataclass(frozen=True)
class LanguageCues:
    """What the question itself says about languages."""

    named: Language | None  # the articles' language the question names, when it names one only
    all_languages: bool  # "in any/all languages": no filter
    answer: Language | None  # the answer's language the question asks for
    rest: str  # the question without its language cues
    several: tuple[Language, ...] = ()  # every articles' language it names (two or more: a list)
    on_collection: tuple[Language, ...] = ()  # articles' languages named on a collection noun (proven)
    excluded: tuple[Language, ...] = ()  # languages it leaves out ("anything but German", "кроме английских")


@dataclass(frozen=True)
class _Mention:
    language: Language
    start: int
    end: int
    phrase: bool  # "in German" rather than "German articles"
    phrase_start: int


def _mentions(text: str) -> list[_Mention]:
    found: list[_Mention] = []
    for match in _MENTION.finditer(text):
        language = next(code for code in ("de", "en", "ru") if match.group(code))
        before = _PHRASE_BEFORE.search(text[: match.start()])
        word = match.group(0)
        phrase = bool(before) and bool(_PHRASE_WORD.match(word)) or word.casefold().startswith("по-")
        start = before.start() if before else match.start()
        found.append(_Mention(language, match.start(), match.end(), phrase, start))  # type: ignore[arg-type]
    return found


# A sentence ends between two mentions: "Die deutschen Seiten sind dünn. Such englische Artikel …" -- the
# earlier sentence is context, the request names its own articles' language.
def _of_the_last_sentence(text: str, articles: list[_Mention]) -> list[_Mention]:
    """The articles' languages the last sentence naming one names (all of them, when it is one sentence)."""
    breaks = [i for i in range(1, len(articles)) if sentence_ends_between(text, articles[i - 1].end, articles[i].start)]
    return articles[breaks[-1]:] if breaks else articles


# A language left out: "anything but German", "not in Russian", "кроме немецких", "только не на английском",
# "außer auf Englisch", "keine deutschen Beiträge": a negation or an exclusion just before the mention.
_EXCLUDED_BEFORE = _r(
    r"(?:(?:\b(?:not|except(?:\s+for)?|excluding|exclude|other\s+than|apart\s+from|anything\s+but|all\s+but"
    r"|languages?\s+but|no|skip"
    r"|ignore|leave\s+out)|(?<!\w)(?:не|кроме|за\s+исключением|исключая|исключи|пропусти|не\s+бери|не\s+учитывай)"
    r"|\b(?:nicht|außer|ausser|ausgenommen|kein\w*|ignoriere|überspring\w*))"
    r"\s+(?:(?:the|any|ones|ones\s+in|in|on|auf|den|die|der|dem|des|как|статей|постов)\s+)?)$"
)
# "non-English articles", "nicht-englische Beiträge" (on the articles' noun: "non-English domain names" is a topic)
_NON_BEFORE = _r(r"\b(?:non|nicht)-$")
# …or a verb of leaving out after it: "Английские статьи не бери", "englische Beiträge bitte weglassen"
_EXCLUDED_AFTER = _r(
    r"^\s+(?:" + _COLLECTION + r"\s+)?(?:(?:bitte|пожалуйста|please)\s+)?(?:не\s+(?:бери|учитывай|включай|показывай|надо)"
    r"|ausklammern|weglassen|ignorieren|ausschließen|auslassen)(?!\w)"
)


def _left_out(text: str, mention: _Mention) -> bool:
    return _EXCLUDED_BEFORE.search(text[: mention.phrase_start]) is not None \
        or _EXCLUDED_AFTER.match(text[mention.end:]) is not None \
        or (_NON_BEFORE.search(text[: mention.start]) is not None and _on_collection(text, mention))


_ONES_AFTER = _r(r"^\s+(?:ones?|" + _COLLECTION + r")(?![\w-])")


def _left_out_span(text: str, mention: _Mention) -> tuple[int, int]:
    """The words that leave a language out, with the language: cut from the topic."""
    before = _EXCLUDED_BEFORE.search(text[: mention.phrase_start]) or _NON_BEFORE.search(text[: mention.start])
    after = _EXCLUDED_AFTER.match(text[mention.end:])
    ones = _ONES_AFTER.match(text[mention.end:])  # "skip the Russian ones"
    end = mention.end + (after.end() if after else ones.end() if ones else 0)
    return (before.start() if before else mention.phrase_start, end)


def _governed_by_answer_verb(text: str, mention: _Mention) -> bool:
    if not mention.phrase:
        return False
    before = text[: mention.phrase_start]
    words = re.findall(r"[\w-]+", before)[-4:]
    if any(_ANSWER_VERB.fullmatch(w) for w in words):
        return True
    form = next((i for i, w in enumerate(words) if _ANSWER_FORM.fullmatch(w)), None)
    if form is not None and not any(COLLECTION_NOUN.fullmatch(w) for w in words[form:]):
        return True
    if _PLEASE_END.match(text[mention.end:]):  # "…, in English, please": how to answer
        return True
    if _LEAD_PLEASE.match(before) and _LEAD_COLON.match(text[mention.end:]) \
            and not COLLECTION_NOUN.search(text[mention.end:]):  # "Bitte auf Englisch: wie …?", no articles named
        return True
    return bool(_ANSWER_VERB_AFTER.match(text[mention.end:]))


# A preposition that opens the topic ("about", "про", "zur"), with its article: an adjective after it
# qualifies the topic's noun, not the articles.
_TOPIC_OPENS = _r(
    r"(?:\b(?:about|regarding|on|of|über|zu[rm]?|von|vom)|(?<!\w)(?:про|об?|по\s+поводу|насч[её]т))\s+"
    r"(?:(?:the|a|an|den|die|der|das|dem|des|ein\w*)\s+)?$"
)
_NEXT_WORD = _r(r"^\s+([\w-]+)")


def _names_the_topic(text: str, mention: _Mention) -> bool:
    """ "posts about the Russian mirror of rubygems", "про русский перевод сайта", "Artikel zur
    russischen Übersetzung": an adjective after the topic's preposition, on a noun that is not the
    articles', is part of the topic (it stays in it), not the articles' language."""
    if mention.phrase or _on_collection(text, mention) or not _TOPIC_OPENS.search(text[:mention.start]):
        return False
    noun = _NEXT_WORD.match(text[mention.end:])
    return noun is not None and not COLLECTION_NOUN.fullmatch(noun.group(1)) \
        and _LANGUAGE_NOUN_AFTER.match(text[mention.end:]) is None


def language_cues(question: str) -> LanguageCues:
    question = _spelled(as_words(question))  # "lang: de", "2023-Q1": fields and ISO periods in words
    every = [m for m in _mentions(question) if not _names_the_topic(question, m)]
    left_out = [m for m in every if _left_out(question, m)]
    mentions = [m for m in every if m not in left_out]
    answer_mentions = [m for m in mentions if _governed_by_answer_verb(question, m)]
    articles = [m for m in mentions if m not in answer_mentions]
    if not answer_mentions and len(articles) >= 2 and articles[-1].phrase \
            and _END.match(question[articles[-1].end:]) and articles[-2].language != articles[-1].language:
        answer_mentions, articles = [articles[-1]], articles[:-1]  # "the Russian articles … in English"
    articles = _of_the_last_sentence(question, articles)
    beside = None if answer_mentions else _answer_beside_articles(question, articles)
    if beside is not None:
        answer_mentions, articles = [beside], [m for m in articles if m is not beside]
    cut = _cue_spans(question, mentions) + [_left_out_span(question, m) for m in left_out]
    excluded = tuple(dict.fromkeys(m.language for m in left_out))
    everything = _ALL_LANGUAGES.search(question)
    if everything is not None:
        cut.append(everything.span())
    rest = without_spans(question, cut)
    answer = answer_mentions[-1].language if answer_mentions else None
    several = tuple(dict.fromkeys(m.language for m in articles))
    if everything is not None:
        # "in any language …, the gist in German": the articles' languages are said, so a language
        # phrase beside them is the answer's
        phrases = [m for m in mentions if m.phrase]
        return LanguageCues(None, True, answer or (phrases[-1].language if phrases else None), rest, excluded=excluded)
    proven = tuple(dict.fromkeys(m.language for m in articles if _on_collection(question, m)))
    return LanguageCues(several[0] if len(several) == 1 else None, False, answer, rest, several, proven, excluded)


# What a language cue takes with it out of the topic: its noun ("in russischer Sprache", "на немецком
# языке") and the joiner of a list of them ("in English and German", "на английском и немецком").
_LANGUAGE_NOUN_AFTER = _r(r"^\s+(?:язык(?:е|ах|ам|и|ов)?|верси(?:я|и|ю|ях|ям)|sprachen?|languages?|versions?|versionen"
                          r"|fassung(?:en)?)(?![\w-])")
_LIST_JOIN = _r(r"^\s*(?:,|and|or|und|oder|и|или|&|/)?\s*(?:(?:the|den|die|der|dem)\s+)?$")


def _cue_spans(text: str, mentions: list[_Mention]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for k, mention in enumerate(mentions):
        noun = _LANGUAGE_NOUN_AFTER.match(text[mention.end:])
        end = mention.end + (noun.end() if noun else 0)
        spans.append((mention.phrase_start, end))
        if k + 1 < len(mentions) and end <= mentions[k + 1].phrase_start \
                and _LIST_JOIN.match(text[end:mentions[k + 1].phrase_start]):
            spans.append((end, mentions[k + 1].phrase_start))
    return spans


_WORD = re.compile(r"[^\W\d_]{5,}", re.UNICODE)


def _spelled(text: str) -> str:
    """ "germna posts", "russain articles": a language adjective one inner edit off, standing on a
    collection noun, is read as the adjective (the period words' rule, router/reader/_spelling.py)."""
    for match in reversed(list(_WORD.finditer(text))):
        word = match.group(0)
        if _MENTION.fullmatch(word) or not _NOUN_AFTER.match(text[match.end():]):
            continue
        fixes = {edit for edit in inner_edits(word.casefold()) if _MENTION.fullmatch(edit)}
        languages = {next(c for c in ("de", "en", "ru") if m.group(c)) for m in map(_MENTION.fullmatch, fixes) if m}
        if len(languages) == 1:
            text = text[:match.start()] + min(fixes) + text[match.end():]
    return text


def _on_collection(text: str, mention: _Mention) -> bool:
    """ "German articles", "немецкие статьи" (an adjective before the noun); "articles … in German",
    "Beiträge … auf Deutsch" (a phrase after it, in the same sentence), "auf Deutsch erschienene
    Beiträge" (a phrase before it)."""
    if mention.phrase:
        return _NOUN_BEFORE.search(text[:mention.phrase_start]) is not None \
            or _NOUN_AFTER_PHRASE.match(text[mention.end:]) is not None
    return _NOUN_AFTER.match(text[mention.end:]) is not None


COLLECTION_NOUN = _r(r"(?<![\w-])" + _COLLECTION + r"(?![\w-])")
COLLECTION_PATTERN = _COLLECTION  # the articles' nouns, for other readers' patterns


def _answer_beside_articles(text: str, articles: list[_Mention]) -> _Mention | None:
    """A phrase naming another language than the adjective on the articles names is the answer's,
    wherever it stands: "Перескажи по-русски английский пост", "Gib den englischen Beitrag … auf
    Deutsch wieder". Not when a second noun stands between them ("Russian articles and articles in
    German": two articles' languages)."""
    adjectives = [m for m in articles if not m.phrase and _on_collection(text, m)]
    if len(adjectives) != 1:
        return None
    phrases = [m for m in articles if m.phrase and m.language != adjectives[0].language]
    if len(phrases) != 1:
        return None
    phrase = phrases[0]
    if phrase.start > adjectives[0].end \
            and len(COLLECTION_NOUN.findall(text[adjectives[0].end:phrase.phrase_start])) > 1:
        return None
    return phrase
