"""`turnout eval-answers` end to end on real corpus articles (both backends), real Postgres, USE
embeddings, the real search and RAG path, and two scripted answer models: one answers from its
passages, one only asks back. Plus the scoring on its own and the set's format errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from infra.corpus import ArticleRecord, read_corpus
from infra.llm import create_llm_client
from infra.messages.ask import AskOutcome
from infra.results import Source, Usage
from infra.settings import Settings
from infra.status import ResultStatus
from infra.vectors import VectorStore
from retrieval.answer_eval import ModelReport, answer_language, render_markdown, run_answer_eval, score_case
from retrieval.answer_eval_cases import AnswerCase, AnswerEvalError, load_answer_cases
from retrieval.rag import RagContext
from tests.retrieval.rag_fixtures import index, load, make_ctx, rag_db, rag_settings, store
from tests.support import services
from tests.support.llm_server import ScriptedLLM, Text, answer_from_passage

FIXTURES = (rag_db, rag_settings, store)
ARTICLES = {"f6b46697c4422f29", "a6f2b093b4ee3f22", "dcd63117c15508c6",  # CVE-2013-2065, en/ru/de
            "e6591eb0192dffac", "193bd49d2fe3a9d1", "36920ba8015406bc"}  # Ruby 2.0.0-p195, en/ru/de
CASES: list[dict[str, Any]] = [
    {"id": "t-ask-en", "split": "dev", "question": "What does CVE-2013-2065 in DL and Fiddle allow?",
     "today": "2026-12-01", "tool": "AskArticles", "questionLanguage": "en", "answerLanguage": "en",
     "language": "en", "search": None, "articleIds": ["f6b46697c4422f29"],
     "keyFacts": [["tainted", "taint"], ["$SAFE"]], "tags": ["cve"]},
    {"id": "t-ask-ru", "split": "dev", "question": "Что вошло в релиз Ruby 2.0.0-p195?", "today": "2026-12-01",
     "tool": "AskArticles", "questionLanguage": "ru", "answerLanguage": "ru", "language": "ru", "search": None,
     "articleIds": ["193bd49d2fe3a9d1"], "keyFacts": [["DL", "Fiddle"]], "tags": ["version"]},
    {"id": "t-combined-de", "split": "dev", "question": "Was bewirkt die Schwachstelle?", "today": "2026-12-01",
     "tool": "SearchAndAskArticles", "questionLanguage": "de", "answerLanguage": "de", "language": "de",
     "search": {"text": "Fiddle", "language": "de", "dateFrom": "2013-01-01", "dateTo": "2013-12-31"},
     "articleIds": ["dcd63117c15508c6"], "keyFacts": [["tainted"]], "tags": ["combined"]},
    {"id": "t-test-half", "split": "test", "question": "never run here", "today": "2026-12-01",
     "tool": "AskArticles", "questionLanguage": "en", "answerLanguage": "en", "language": None, "search": None,
     "articleIds": ["f6b46697c4422f29"], "keyFacts": [["x"]], "tags": []},
]


def _write(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    return path


@pytest.fixture
async def contexts(rag_settings: Settings, rag_db: asyncpg.Pool, store: VectorStore) -> list[RagContext]:
    records = [r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord) and r.id in ARTICLES]
    assert len(records) == len(ARTICLES)
    good = make_ctx(rag_settings.model_copy(update={"llm_answer_model": "good"}), rag_db, store)
    await load(rag_db, records)
    await index(good)
    asks_back = rag_settings.model_copy(update={"llm_answer_model": "asks-back"})
    return [good, RagContext(settings=asks_back, pool=rag_db, store=store, embedders=good.embedders,
                             llm=create_llm_client(asks_back))]


async def test_eval_answers_runs_every_case_per_model_through_the_real_path(
    contexts: list[RagContext], llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.on_chat(lambda body: answer_from_passage(body) if body["model"] == "good"
                else Text("Sure, I can help with that. Please provide the question you want answered."))
    cases = load_answer_cases(_write(tmp_path / "cases.jsonl", CASES), split="dev")
    assert [c.id for c in cases] == ["t-ask-en", "t-ask-ru", "t-combined-de"]  # the test half is not read
    report = await run_answer_eval(contexts, cases)
    good, asks_back = report["models"]
    assert (good["model"], good["cases"], good["llmAnswers"]) == ("good", 3, 3)
    assert good["languageRight"] == 1.0 and good["acceptedNonAnswers"] == 0 and good["repeatedSources"] == 0
    assert good["citationValidity"] == 1.0 and good["citationValidityRead"] == 1.0 and good["expectedCited"] == 1.0
    assert good["keyFactRecall"] > 0
    assert all(r["firstDeltaS"] is not None and r["firstDeltaS"] <= r["totalS"] for r in good["results"])
    combined = next(r for r in good["results"] if r["id"] == "t-combined-de")
    assert combined["answerKind"] == "llm" and "Fiddle" in (combined["answer"] or "")
    # The model that only asks back never gets an answer accepted: every case is extractive.
    assert (asks_back["llmAnswers"], asks_back["extractive"], asks_back["acceptedNonAnswers"]) == (0, 3, 0)
    table = render_markdown(report, title="RAG answers (dev)")
    assert "| good | 3 / 0 | 100.0% | 0 |" in table and "| asks-back | 0 / 3 |" in table
    assert report["casesPlanned"] == 3 and "time budget" not in table
    # A spent time budget starts no further case, and the report says how many of the planned ran.
    cut = await run_answer_eval(contexts[:1], cases, time_budget_s=1e-9)
    assert (cut["cases"], cut["casesPlanned"], cut["models"][0]["cases"]) == (0, 3, 0)
    assert "0 cases (the first 0 of 3: the time budget ran out)" in render_markdown(cut, title="RAG answers (dev)")


def test_scoring_of_one_answer(tmp_path: Path) -> None:
    case = load_answer_cases(_write(tmp_path / "one.jsonl", CASES[:1]))[0]
    sources = [Source(article_id="f6b46697c4422f29", title="Object taint bypassing in DL and Fiddle in Ruby",
                      snippet="Tainted strings can be used by system calls regardless of the $SAFE level.", score=1)]
    outcome = AskOutcome(status=ResultStatus.ANSWERED, answer="Tainted strings reach system calls [1]. Nothing else [2].",
                         answer_kind="llm", sources=sources, usage=Usage(), answer_language="en")
    result = score_case(case, outcome, first_delta_s=1.0, total_s=2.0)
    assert (result.facts_found, result.facts) == (1, 2)  # "taint" found, "$SAFE" not
    assert (result.citations, result.citations_valid) == (2, 1)  # [2] names no source
    # A sentence drawn from a passage the model read, not from the snippet a reader sees.
    upgrade = outcome.model_copy(update={"answer": "Tainted strings reach system calls [1]. Upgrade to 2.6.4 [1]."})
    read = [sources[0].title + "\nTainted strings reach system calls. Please upgrade to Ruby 2.6.4 or later."]
    scored = score_case(case, upgrade, 1.0, 2.0, read)
    assert (scored.citations, scored.citations_valid, scored.citations_valid_read) == (2, 1, 2)
    assert result.language_right and not result.non_answer and result.expected_cited
    asks = AskOutcome(status=ResultStatus.ANSWERED, answer="Please provide your question.", answer_kind="llm",
                      sources=sources, answer_language="en")
    assert score_case(case, asks, None, 1.0).non_answer


def test_an_extractive_answer_s_language_is_its_own_words_not_the_passages_it_quotes() -> None:
    """A quoted passage quotes names in its own guillemets; the whole quote is the source's words."""
    case = AnswerCase(id="q", question="Was ist Ruby Box in Ruby 4.0?", today="2026-12-06", tool="AskArticles",
                      question_language="de", answer_language="de", language=None, search=None,
                      article_ids=("a",), key_facts=(("RUBY_BOX",),), tags=("de", "ask"))
    answer = ("Extraktive Antwort (das Sprachmodell gab keine brauchbare Antwort): die passendsten Abschnitte, "
              "unverändert aus den Quellen zitiert.\n\n"
              "[1] «Вышел Ruby 4.0.0»: «Ruby 4.0 представляет «Ruby Box» и «ZJIT», а также добавляет множество "
              "улучшений. Ruby Box — это новая (экспериментальная) возможность для разделения определений, "
              "она включается переменной окружения RUBY_BOX=1.»")
    sources = [Source(article_id="a", title="Вышел Ruby 4.0.0", snippet="Ruby Box", score=1)]
    outcome = AskOutcome(status=ResultStatus.ANSWERED, answer=answer, answer_kind="extractive", sources=sources,
                         usage=Usage(), answer_language="de")
    result = score_case(case, outcome, None, 1.0)
    assert result.language_right and result.facts_found == 1
    russian = outcome.model_copy(update={"answer": answer.replace("«Ruby 4.0", "Ruby 4.0").replace("=1.»", "=1.")})
    assert not score_case(case, russian, None, 1.0).language_right  # unquoted, the Russian is the answer's own


def test_names_a_reply_gives_in_quotes_are_content_not_a_restatement() -> None:
    case = AnswerCase(id="q", question="Which codenames do the new Ubuntu releases have?", today="2026-12-06",
                      tool="AskArticles", question_language="en", answer_language="en", language=None, search=None,
                      article_ids=("a",), key_facts=(("Noble",),), tags=("en", "ask"))
    named = AskOutcome(status=ResultStatus.ANSWERED, answer='The new releases are "Noble Numbat" and "Oracular Oriole".',
                       answer_kind="llm", sources=[], usage=Usage(), answer_language="en")
    assert not score_case(case, named, None, 1.0).non_answer
    echoed = named.model_copy(update={"answer": 'The "new Ubuntu releases" have "codenames".'})
    assert score_case(case, echoed, None, 1.0).non_answer  # the question's own words, quoted or not


@pytest.mark.parametrize(("answer", "language"), [
    ("С Ruby 3.2.4 идут RubyGems 3.4.19, Bundler 2.4.19 и REXML 3.2.6.", "ru"),  # lingua over all its words: de
    ("Die Ruby Central Conference findet vom 8. bis 10. November 2024 in Chicago statt.", "de"),  # ... en
    ("Das Release ist für Linux und Windows verfügbar.", "de"),
    ("The release is out.", "en"),
])
def test_an_answer_s_language_is_read_from_its_own_words_not_the_names_it_lists(answer: str, language: str) -> None:
    assert answer_language(answer) == language


def test_a_bad_set_names_its_line(tmp_path: Path) -> None:
    bad = dict(CASES[0], tool="SearchArticles")
    with pytest.raises(AnswerEvalError, match=r"cases.jsonl:2: tool"):
        load_answer_cases(_write(tmp_path / "cases.jsonl", [CASES[0], bad]))
    with pytest.raises(AnswerEvalError, match=r":1: a SearchAndAskArticles case needs its search"):
        load_answer_cases(_write(tmp_path / "cases.jsonl", [dict(CASES[2], search=None)]))
    with pytest.raises(AnswerEvalError, match="cannot read"):
        load_answer_cases(tmp_path / "missing.jsonl")


def test_the_command_names_a_bad_set_and_exits_2(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from turnout.cli import app

    # `settings` caches the suite's settings before the URL below is set: the command reads the cached ones, and
    # no test after this one gets settings read with that URL (the suite's settings are read once, at first use).
    monkeypatch.setenv("TURNOUT_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # never reached
    missing = CliRunner().invoke(app, ["eval-answers", "--file", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    bad = CliRunner().invoke(app, ["eval-answers", "--file", str(_write(tmp_path / "bad.jsonl", [{"id": 1}]))])
    assert bad.exit_code == 2 and "bad.jsonl:1" in bad.output
    assert CliRunner().invoke(app, ["eval-answers", "--split", "all"]).exit_code == 2


def test_the_answer_language_is_judged_over_the_cases_answered(tmp_path: Path) -> None:
    # A no-answer case whose search found nothing has no answer text: no language to get wrong (the eighth
    # set's run counted it as a wrong language, 97.2% where every answer was in the asked one).
    case = load_answer_cases(_write(tmp_path / "one.jsonl", CASES[:1]))[0]
    sources = [Source(article_id="f6b46697c4422f29", title="Fiddle", snippet="Tainted strings.", score=1)]
    answered = score_case(case, AskOutcome(status=ResultStatus.ANSWERED, answer="Tainted strings reach system calls [1].",
                                           answer_kind="llm", sources=sources, usage=Usage(), answer_language="en"),
                          first_delta_s=1.0, total_s=2.0)
    nothing = score_case(case, AskOutcome(status=ResultStatus.NO_RESULTS, answer=None, sources=[], usage=Usage(),
                                          answer_language="en"), first_delta_s=None, total_s=1.0)
    assert answered.language_right and not nothing.language_right
    report = ModelReport("m", [answered, nothing]).document()
    assert report["languageRight"] == 1.0 and report["cases"] == 2
