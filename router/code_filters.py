"""Code-filled filters for a small model's decision (json_schema mode, `TURNOUT_LLM_FILTERS=code`).

Measured with a 1.5B model (docs/router.md): it picks a tool and names a topic well enough, but
it fills filters badly -- it invents date ranges, cannot do date arithmetic, copies an example's
`sort` -- and every argument it writes costs generation time. So the model writes the tool and
the topic; code fills what the question itself names, read by the question reader
(`router.reader`, through `router.question_reading.read_question`): the period, `sort`, the page's
size a count asks for, the words it leaves out, an answer language asked for, and the question for the
answering tools. A period cue the reader could not
read is asked of the model in a closed schema first (`router.period_question`, through
`CodeFilling`). The articles' `language` is set by the gateway, as for every call. What code
reads wins over what a model sent; what code does not read stays the model's and is validated
like any argument.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import date
from typing import Any

from router import period_question
from router.audit import AuditTrail
from router.engine import Engine, ToolIntent
from router.fallback import FallbackDecision
from router.gateway import parse_arguments
from router.language import detect_language
from router.limits import JobBudget
from router.question_reading import QuestionReading
from router.reader import DateExpectation
from router.tools import ASK, SEARCH, SEARCH_AND_ASK, TOPIC_FIELD

_WORD = re.compile(r"\S+")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_PUNCTUATION = ".,:;!?\"'«»„“”()[]"


def _without_dates(topic: str, phrase: str) -> str:
    """The topic without the date words a model copied into it ("Ruby 2025", "2023"): the dates
    are filters, and a year in the text would also demand that the article's words contain it."""
    dated = {w.casefold() for w in _WORD.findall(phrase)}
    kept = [w for w in _WORD.findall(topic) if w.casefold() not in dated and not _YEAR.match(w.strip(".,"))]
    return " ".join(kept)


def _topic_in_articles_language(topic: str, reading: QuestionReading, own: str | None) -> str:
    """The question's own content words instead of a topic the model translated away from the
    articles' language (an English topic for Russian posts finds nothing in them): only when the
    topic has words the question lacks, in another language, and the question's words are in the
    articles' language. Names the model copied ("Ruby", "REXML") are no reason to swap."""
    material = reading.language
    if not isinstance(material, str) or not own:
        return topic
    asked = {w.strip(_PUNCTUATION).casefold() for w in _WORD.findall(reading.text)}
    added = " ".join(w for w in _WORD.findall(topic) if w.strip(_PUNCTUATION).casefold() not in asked)
    if added and detect_language(added) != material and detect_language(own) == material:
        return own
    return topic


def _with_exclusions(topic: str, reading: QuestionReading) -> str | None:
    """The model's topic without the words the question leaves out, which follow with a minus ("Ruby
    -Rails"): a model copies "not Rails" into its topic, which would require the word instead."""
    left_out = {w.casefold() for text in reading.excluded for w in _WORD.findall(text)}
    kept = [w for w in _WORD.findall(topic)
            if w.strip(_PUNCTUATION).lstrip("-").casefold() not in left_out and w.casefold() not in _NEGATIONS]
    return reading.with_excluded(" ".join(kept) or None)


_NEGATIONS = frozenset("not no except without but кроме не без nicht ohne außer".split())
_ASK_KEYS = frozenset({"question", "language", "answerLanguage"})


def fill_filters(
    tool: str, arguments: Mapping[str, Any], reading: QuestionReading, *, form_tool: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The call to validate: ``tool`` and ``arguments`` with the filters code read from the question.

    ``form_tool`` is the tool the question's form says, when the rules read one (an imperative
    search, a listing question, a question): it wins over a small model's, which adds an answer to
    a request for a list and lists what a question asks (measured: docs/router.md)."""
    if form_tool is not None and form_tool != tool:
        tool = form_tool
    args = dict(arguments) if tool != ASK else {k: v for k, v in arguments.items() if k in _ASK_KEYS}
    # Where the chosen tool cannot do what the question's own words ask for, the combined tool can:
    if tool == ASK and reading.dates is not None:
        # AskArticles has no date filter: a question about a period is answered over that
        # period's articles, which only the combined tool's search can select;
        tool = SEARCH_AND_ASK
    elif tool == SEARCH and reading.asks_for_answer:
        # SearchArticles lists and answers nothing: "find … and explain", "… answer in German".
        tool = SEARCH_AND_ASK
    if tool in (SEARCH, SEARCH_AND_ASK):
        if isinstance(args.get(TOPIC_FIELD), str):
            own = reading.keywords(drop_ask_words=tool == SEARCH_AND_ASK)
            args[TOPIC_FIELD] = _topic_in_articles_language(args[TOPIC_FIELD], reading, own)
        if reading.dates is not None and isinstance(args.get(TOPIC_FIELD), str):
            args[TOPIC_FIELD] = _without_dates(args[TOPIC_FIELD], reading.dates.phrase)
        if reading.excluded and isinstance(args.get(TOPIC_FIELD), str):
            args[TOPIC_FIELD] = _with_exclusions(args[TOPIC_FIELD], reading)
        if not str(args.get(TOPIC_FIELD) or "").strip():
            args.pop(TOPIC_FIELD, None)
            topic = reading.keywords(drop_ask_words=tool == SEARCH_AND_ASK)
            if topic:
                args[TOPIC_FIELD] = topic
        filters = reading.filters
        if reading.dates is not None:
            args["dateFrom"] = filters["dateFrom"]
            if filters["dateTo"] is None:  # "since 2024": open-ended, whatever the model sent
                args.pop("dateTo", None)
            else:
                args["dateTo"] = filters["dateTo"]
        if reading.sort is not None:
            args["sort"] = reading.sort
    if tool == SEARCH and reading.page_size is not None:
        args["pageSize"] = reading.page_size  # "the 5 newest posts": the page's size
    if tool in (ASK, SEARCH_AND_ASK):
        if not str(args.get("question") or "").strip():
            args["question"] = reading.text
        if reading.answer_asked is not None:
            args["answerLanguage"] = reading.answer_asked
    return tool, args


class CodeFilling:
    """One run's code-filled calls: the model's tool and topic, the filters the rules read from
    the question (`rules`, read once by the run), and an unread period asked of the model first."""

    def __init__(self, rules: Callable[[], FallbackDecision]) -> None:
        self._rules = rules
        self._model_period: DateExpectation | None = None  # the unread period the model read (validated)

    async def ask_unread_period(self, engine: Engine, budget: JobBudget, audit: AuditTrail, question: str,
                                today: date, *, before_attempt: Callable[[int], Awaitable[None]]) -> None:
        """A period cue code could not read: the model is asked for just that value (issue 22, 4a)."""
        reading = self._rules().reading
        if reading is None or reading.dates is not None or not reading.unread_period:
            return
        self._model_period = await period_question.ask_model(
            engine, budget, audit, question, reading.unread_period, today, before_attempt=before_attempt,
        )

    def filled(self, intent: ToolIntent) -> ToolIntent:
        """The model's call with the filters code reads from the question."""
        arguments = parse_arguments(intent.arguments)
        reading = self._rules().reading  # set: a question the rules refuse never reaches the model here
        if isinstance(arguments, str) or reading is None:  # not an object: the gateway rejects it in its words
            return intent
        if self._model_period is not None:
            reading = replace(reading, dates=self._model_period, unread_period=())
        tool, filled = fill_filters(intent.name, arguments, reading, form_tool=self._rules().form_tool)
        return ToolIntent(intent.call_id, tool, json.dumps(filled, ensure_ascii=False))
