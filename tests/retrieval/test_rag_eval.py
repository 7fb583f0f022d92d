"""The shipped RAG evaluation sets and the scoring arithmetic of `turnout eval-rag`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from infra.corpus import ArticleRecord, read_corpus
from retrieval.rag_eval import SETS, RagEvalFileError, Score, first_rank, load_rag_cases, percentile
from tests.support import services


def test_shipped_sets_cover_languages_and_kinds_and_point_at_real_articles() -> None:
    dev, test = load_rag_cases(SETS["dev"]), load_rag_cases(SETS["test"])
    assert len(dev) + len(test) >= 120
    assert not {c.id for c in dev} & {c.id for c in test}
    assert not {c.question for c in dev} & {c.question for c in test}
    corpus = {r.id: r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)}
    for cases in (dev, test):
        assert Counter(c.question_language for c in cases).keys() == {"ru", "en", "de"}
        tags = Counter(t for c in cases for t in c.tags)
        for tag in ("named_entity", "cve", "package", "version", "cross_language", "scoped", "topical"):
            assert tags[tag] >= 5, tag
        entity_cases = [c for c in cases if "cross_language_entity" in c.tags]  # issue 25's shape
        assert len(entity_cases) >= 20
        assert Counter(c.question_language for c in entity_cases).keys() == {"ru", "en", "de"}
        for case in cases:
            assert case.expected <= corpus.keys(), case.id
            assert all(corpus[i].language == case.language for i in case.expected if case.language), case.id
            langs = {corpus[i].language for i in case.expected}
            assert ("cross_language" in case.tags) == (case.question_language not in langs), case.id


def test_the_user_phrased_set_is_apart_from_the_halves_and_points_at_real_articles() -> None:
    users, earlier = load_rag_cases(SETS["users"]), load_rag_cases(SETS["dev"]) + load_rag_cases(SETS["test"])
    assert len(users) >= 80 and not {c.id for c in users} & {c.id for c in earlier}
    assert Counter(c.question_language for c in users) == {"ru": 30, "en": 30, "de": 30}
    corpus = {r.id: r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)}
    tags = Counter(t for c in users for t in c.tags)
    assert tags["descriptive"] > tags["named_entity"] >= 20 and tags["cross_language"] >= 30, tags
    for case in users:
        assert case.expected <= corpus.keys() and case.language is None, case.id
        langs = {corpus[i].language for i in case.expected}
        assert ("cross_language" in case.tags) == (case.question_language not in langs), case.id


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "not a case"),
    ('{"id": "a", "question": "q", "questionLanguage": "en", "expected": []}', "at least one expected"),
    ('{"id": "a", "question": "q", "questionLanguage": "fr", "expected": ["x"]}', "ru, en or de"),
    ('{"id": "a", "question": "q", "questionLanguage": "en", "scope": ["y"], "expected": ["x"]}', "outside"),
])
def test_a_bad_case_names_its_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "cases.jsonl"
    good = json.dumps({"id": "ok", "question": "q", "questionLanguage": "en", "expected": ["x"]})
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(RagEvalFileError, match=f":2: .*{message}"):
        load_rag_cases(path)


def test_ranks_percentiles_and_scores() -> None:
    assert first_rank(["a", "b", "c"], frozenset({"c", "z"})) == 3
    assert first_rank(["a"] * 10 + ["c"], frozenset({"c"})) is None  # past the depth counts as a miss
    assert percentile([float(x) for x in range(1, 101)], 95) == 95.0
    assert percentile([3.0], 95) == 3.0
    score = Score()
    for rank in (1, 2, None, 6):
        score.add(rank)
    assert score.rounded() == {"n": 4, "hit1": 0.25, "hit5": 0.5, "mrr": round((1 + 0.5 + 1 / 6) / 4, 3)}


def test_the_command_names_a_bad_set_and_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from turnout.cli import app

    monkeypatch.setenv("TURNOUT_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # never reached
    missing = CliRunner().invoke(app, ["eval-rag", "--set", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n', encoding="utf-8")
    bad = CliRunner().invoke(app, ["eval-rag", "--set", str(tmp_path / "bad.jsonl")])
    assert bad.exit_code == 2 and "bad.jsonl:1" in bad.output
