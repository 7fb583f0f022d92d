"""The labelled answer sets of `turnout eval-answers` (retrieval/data/answer_eval_{dev,test,fresh,blind}.jsonl).

One JSON object a line: ``id``, ``split``, ``question``, ``today`` (the date the question is asked
on), ``tool`` (AskArticles | SearchAndAskArticles), ``questionLanguage``, ``answerLanguage``,
``language`` (the articles' language filter or null), ``search`` ({text, language, dateFrom,
dateTo}, combined cases), ``articleIds`` (the localizations that answer it), ``keyFacts`` (a list
of facts, each a list of acceptable surface forms; empty for a ``no_answer`` case), ``tags``. Tune on ``dev`` only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.results import LANGUAGES

DATA = Path(__file__).parent / "data"
# dev: tune on it; test: the held-out half; fresh: a second held-out set, written blind after the
# test half had been run (docs/rag.md, "Fourth round"); blind: a third, written blind on articles no
# earlier set uses before round 13's change and run once after it (docs/rag.md, "Round 13"); fourth:
# written blind on 2026-12-06 for round 15, on articles no earlier set uses; ~a third two-part questions;
# periods: written blind for round 17, asks that each name a period; sixth: written blind for round 18, on
# articles no earlier set uses, in the fourth set's shape; seventh: written blind for round 19, likewise,
# 14 of its 36 questions in two parts; eighth: written blind for round 20, likewise.
SETS = {name: DATA / f"answer_eval_{name}.jsonl"
        for name in ("dev", "test", "fresh", "blind", "fourth", "periods", "sixth", "seventh", "eighth")}
TOOLS = ("AskArticles", "SearchAndAskArticles")


class AnswerEvalError(ValueError):
    """A labelled set that cannot be used (naming the line at fault), or nothing to run it on."""


@dataclass(frozen=True)
class AnswerCase:
    id: str
    question: str
    today: str
    tool: str
    question_language: str
    answer_language: str
    language: str | None
    search: dict[str, Any] | None
    article_ids: tuple[str, ...]
    key_facts: tuple[tuple[str, ...], ...]
    tags: tuple[str, ...]


def _case(raw: dict[str, Any]) -> AnswerCase:
    return AnswerCase(
        id=str(raw["id"]), question=str(raw["question"]), today=str(raw["today"]), tool=str(raw["tool"]),
        question_language=str(raw["questionLanguage"]), answer_language=str(raw["answerLanguage"]),
        language=raw.get("language"), search=raw.get("search"),
        article_ids=tuple(raw.get("articleIds") or ()),
        key_facts=tuple(tuple(str(f) for f in forms) for forms in raw.get("keyFacts") or ()),
        tags=tuple(raw.get("tags") or ()),
    )


def load_answer_cases(path: Path, *, split: str | None = None) -> list[AnswerCase]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AnswerEvalError(f"cannot read {path}: {exc.strerror or exc}") from exc
    cases: list[AnswerCase] = []
    seen: set[str] = set()
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            case = _case(raw)
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise AnswerEvalError(f"{path}:{no}: not a case ({type(exc).__name__}: {exc})") from exc
        if split is not None and raw.get("split", split) != split:
            continue
        if case.tool not in TOOLS:
            raise AnswerEvalError(f"{path}:{no}: tool must be one of {', '.join(TOOLS)}")
        if case.tool == "SearchAndAskArticles" and not case.search:
            raise AnswerEvalError(f"{path}:{no}: a SearchAndAskArticles case needs its search")
        langs = (case.question_language, case.answer_language)
        if any(x not in LANGUAGES for x in langs) or case.language not in (None, *LANGUAGES):
            raise AnswerEvalError(f"{path}:{no}: languages are ru, en or de")
        answerable = "no_answer" not in case.tags  # no_answer: the honest answer is "not in the articles"
        if not case.question.strip() or (answerable and not case.key_facts) or any(not f for f in case.key_facts):
            raise AnswerEvalError(f"{path}:{no}: a case needs a question and key facts (each with a form) "
                                  "unless it is tagged no_answer")
        if case.id in seen:
            raise AnswerEvalError(f"{path}:{no}: duplicate id {case.id}")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise AnswerEvalError(f"{path}: no cases")
    return cases


def resolve_set(name_or_path: str) -> Path:
    return SETS.get(name_or_path) or Path(name_or_path)
