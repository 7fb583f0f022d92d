"""Is a model's text an answer? The check before an LLM answer is accepted (issue 25).

A small model sometimes restates the question, asks the user for the question or says it
cannot help, although the right passages were in its prompt. Such text is not an answer. The
check measures, rather than matching phrases:

- **new words**: the answer's content words (stop words and citation markers left out, words
  compared by a 5-letter stem so ru/de inflections match) that are not the question's own;
- **support**: the share of those new words that occur in the passages it was given;
- **citations**: ``[n]`` markers that point at a passage;
- **language**: the script of the reply's own words (quotes, names in them and markers left out),
  and lingua's confidence between English and German: a reply in another language than the one
  asked is not the answer the user asked for (``wrong_language``).

Across scripts (a Russian answer from English passages) only names and numbers can be
shared, so there a cited answer must carry over one of them and an uncited one two. The same
holds across languages in one script (a German answer from English passages): its words are
not the passages' words, so their share says nothing, and it must carry over names or numbers
as a cross-script answer must (without the cross-script leniency for an answer that names
nothing: in one script a refusal's words would count as its own). The thresholds below were
chosen on the dev half of the answer set (docs/rag.md, "Answer check").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from infra.text_language import confidences

Verdict = Literal["accepted", "empty", "restates_question", "off_material", "uncited", "wrong_language"]

MIN_NEW_WORDS = 1  # no content word beyond the question's: it restates the question
MIN_SUPPORT = 0.3  # share of new words found in the passages (a passage in the answer's script)
MIN_SUPPORT_UNCITED = 0.5  # an answer without a valid [n] must be drawn from the passages more plainly
MIN_SHARED_UNCITED = 2  # shared words with the passages: an uncited answer needs 2, a cited one min(2, new words)
MIN_SHARED_CROSS_SCRIPT = 1  # a cited answer in another script than its passages carries over a name or number,
MIN_NEW_WORDS_CROSS_SCRIPT = 4  # ... or has this many content words of its own
STEM = 5
# The reply's language, measured on 1,125 corpus snippets of 1-3 sentences (docs/rag.md, "Answer
# check"): fewer words than this cannot show a language (a name and a number).
MIN_WORDS_FOR_LANGUAGE = 5
MIN_CYRILLIC_SHARE_RU = 0.2  # of a Russian reply's words; 2% of Russian snippets are below (download lists)
MAX_CYRILLIC_SHARE_LATIN = 0.5  # of an English or German reply's words; no such snippet is above 0
MIN_LANGUAGE_CONFIDENCE = 0.1  # lingua's, in en/de over the Latin words: 0 of 614 English snippets below,
# 4 of 297 German ones (English text quoted in German posts)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MARKER = re.compile(r"\[(\d{1,3})\]")
# English writes ordinals and decades as one word ("16th", "1990s"); German ("16.") and Russian ("1990-х")
# set the ending apart, so the number alone is the word the three languages share.
_NUMBER_WITH_ENDING = re.compile(r"(\d+)(?:st|nd|rd|th|s)")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[a-zA-Z\u00c0-\u024f]")
_LETTER_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
# What the model did not write in its own words: quotes, code, addresses.
_NOT_PROSE = re.compile(r"«[^»]*»|\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|`[^`]*`|https?://\S+")

# Function words of the three languages, and the filler of a reply that offers help or asks for the
# question (measured on the dev half: these words also occur in articles, so they lent such replies
# support); the check compares content, so these are left out before anything is counted.
STOP_WORDS = frozenset("""
the a an and or but if then than that this these those there here what which who whom whose when where why how
is are was were be been being am do does did done doing have has had having can could will would shall should
may might must not no nor yes of in on at to for from by with without about into over under after before
between through during above below up down out off again further once also just only very more most other
some such own same so too any each all both few it its they them their theirs we our us you your he she his
her him i me my as via per one two use used using based according article articles material passage
passages text question answer answers information provided given following however
и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее её мне было вот от
меня еще ещё нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь опять уж
вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтоб без будто
чего раз тоже себе под будет ж тогда кто этот того потому этого какой совсем ним здесь этом один почти мой
тем чтобы нее сейчас были куда зачем всех никогда можно при наконец два об другой хоть после над больше тот
через эти нас про всего них какая много разве три эту моя впрочем хорошо свою этой перед иногда лучше чуть
том нельзя такой им более всегда конечно всю между это также является статья статье статьи статей материал
материале вопрос ответ фрагмент фрагменты согласно
der die das den dem des ein eine einer eines einem einen und oder aber wenn dann als dass daß ist sind war
waren sein bin bist seid wird werden wurde wurden hat haben hatte hatten kann können konnte muss müssen soll
sollen nicht kein keine keinen im in an auf zu zum zur für von vom mit ohne über unter nach vor bei aus durch
um es sie er wir ihr ich du man sich auch nur noch schon so wie was wer wo wann warum welche welcher welches
diese dieser dieses diesem diesen jede jeder jedes alle sehr mehr dort hier laut gemäß artikel material
abschnitt frage antwort
sure course happy glad help helping please provide provided like would let know ask asking assist sorry
unfortunately able unable cannot can't questions answered answering
конечно могу можем помочь помогу пожалуйста предоставьте предоставить предоставленной укажите уточните
задайте нужно ответить отвечу рад рада извините сожалению сможете сможем
natürlich gern gerne helfen bitte stellen nennen geben beantworten beantworte leider tut leid möchten
me myself yours want need thing things something anything everything ever still well much many
этим этими которые который которая которое которого которой котором которую которым свой свои своих своим
весь вся всё всем всего очень лишь именно вам вас ваш ваша ваше ваши вашего вашей мой наш наша нам
этого эта эти эту этой этих нашей нашего чтобы которых
ihnen ihm ihn dabei damit darauf davon dazu darüber soll sollte will wollen mich dir dich uns euch ihre
ihren ihrem ihrer seine seinen seiner meine mein dein beim also doch etwas viel viele wieder immer andere
information informationen информация информации основе basis grundlage
""".split())


@dataclass(frozen=True)
class AnswerCheck:
    verdict: Verdict
    new_words: int  # content stems of the answer not in the question
    supported: int  # of those, found in the passages
    support: float  # supported / new words
    citations: int  # valid [n] markers
    cross_script: bool
    cross_language: bool = False  # in the passages' script, not in any of their languages

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"

    def document(self) -> dict[str, object]:
        return {"verdict": self.verdict, "newWords": self.new_words, "supported": self.supported,
                "support": round(self.support, 3), "citations": self.citations, "crossScript": self.cross_script,
                "crossLanguage": self.cross_language}


def stems(text: str) -> set[str]:
    """The content words of ``text``, lower-cased and cut to a stem (``ё`` read as ``е``; a number without
    its ordinal or plural ending)."""
    out: set[str] = set()
    for word in _WORD.findall(_MARKER.sub(" ", text.lower().replace("ё", "е"))):
        if number := _NUMBER_WITH_ENDING.fullmatch(word):
            word = number.group(1)
        if word in STOP_WORDS or (len(word) < 3 and not word.isdigit()):
            continue
        out.add(word[:STEM])
    return out


def has_cyrillic(text: str) -> bool:
    return _CYRILLIC.search(text) is not None


def _script(text: str) -> str:
    cyrillic, latin = len(_CYRILLIC.findall(text)), len(_LATIN.findall(text))
    return "cyrillic" if cyrillic > latin else "latin"


def citation_numbers(answer: str) -> list[int]:
    return [int(n) for n in _MARKER.findall(answer)]


def in_language(answer: str, language: str) -> bool:
    """Whether the reply's own words can be in ``language`` (True when too few words to tell)."""
    words = _LETTER_WORD.findall(_MARKER.sub(" ", _NOT_PROSE.sub(" ", answer)))
    if len(words) < MIN_WORDS_FOR_LANGUAGE:
        return True
    latin = [w for w in words if not has_cyrillic(w)]
    share = 1 - len(latin) / len(words)  # of Cyrillic words
    if language == "ru":
        return share >= MIN_CYRILLIC_SHARE_RU
    if share > MAX_CYRILLIC_SHARE_LATIN:
        return False
    if len(latin) < MIN_WORDS_FOR_LANGUAGE:
        return True
    scores = confidences(" ".join(latin))
    return next((v for k, v in scores.items() if k == language), 0.0) >= MIN_LANGUAGE_CONFIDENCE


def check_answer(
    answer: str, question: str, passages: Sequence[str], n_sources: int, language: str | None = None,
    passage_languages: Collection[str] = (),
) -> AnswerCheck:
    """The verdict on one model answer, with the measures it was decided on; ``language``, when
    given, is the language the answer must be in, ``passage_languages`` the languages of the
    articles the passages come from."""
    words = stems(answer)
    new = words - stems(question)
    citations = sum(1 for n in citation_numbers(answer) if 1 <= n <= n_sources)
    scripts = {_script(p) for p in passages}
    cross_script = bool(scripts) and _script(answer) not in scripts
    cross_language = (not cross_script and language is not None and bool(passage_languages)
                      and language not in passage_languages)
    supported = len(new & _union(stems(p) for p in passages))
    support = supported / len(new) if new else 0.0

    verdict: Verdict = "accepted"
    if not words:
        verdict = "empty"
    elif len(new) < MIN_NEW_WORDS:
        verdict = "restates_question"
    elif cross_script or cross_language:
        # Only names and numbers are shared across scripts or languages: a cited answer must carry over
        # one of them, an uncited one two. Across scripts a cited one may instead say enough of its own (a
        # topical answer names nothing); in one script a refusal's words would pass as its own.
        if not citations and supported < MIN_SHARED_UNCITED:
            verdict = "uncited"
        elif (citations and supported < MIN_SHARED_CROSS_SCRIPT
              and (cross_language or len(new) < MIN_NEW_WORDS_CROSS_SCRIPT)):
            verdict = "off_material"
    elif support < MIN_SUPPORT or supported < min(MIN_SHARED_UNCITED, len(new)):
        verdict = "off_material"
    elif not citations and (support < MIN_SUPPORT_UNCITED or supported < MIN_SHARED_UNCITED):
        verdict = "uncited"
    if verdict == "accepted" and language is not None and not in_language(answer, language):
        verdict = "wrong_language"
    return AnswerCheck(verdict, len(new), supported, support, citations, cross_script, cross_language)


def _union(sets: Iterable[set[str]]) -> set[str]:
    out: set[str] = set()
    for s in sets:
        out |= s
    return out
