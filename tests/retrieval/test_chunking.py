"""Chunking: bounded, overlapping, complete, deterministic; hashes track what is embedded."""

from __future__ import annotations

import re

import pytest

from infra.corpus import ArticleRecord, read_corpus
from infra.text import content_hash
from retrieval.chunking import (
    CHUNKER_VERSION,
    MAX_CHARS,
    chunk_hash,
    chunk_localization,
    estimate_tokens,
    point_id,
    split_sentences,
    split_text,
)
from tests.support.services import SHARED_CORPUS

TEXT = " ".join(f"Sentence number {i} says something about topic {i % 7}." for i in range(60))


def test_chunks_are_bounded_overlapping_and_cover_every_sentence() -> None:
    chunks = split_text(TEXT, max_chars=300, overlap_chars=80)
    assert len(chunks) > 5
    assert all(len(c) <= 300 for c in chunks)
    sentences = re.findall(r"Sentence number \d+ says something about topic \d\.", TEXT)
    joined = " ".join(chunks)
    assert all(s in joined for s in sentences)
    for before, after in zip(chunks, chunks[1:], strict=False):
        first_sentence = after.split(". ")[0] + "."
        assert first_sentence in before  # the next chunk starts with the previous one's tail
        assert after != before


def test_paragraphs_and_long_sentences() -> None:
    long_word_run = "word " * 500  # no sentence end at all
    chunks = split_text(f"Short intro.\n\n{long_word_run}\n\nClosing line!", max_chars=200, overlap_chars=40)
    assert all(len(c) <= 200 for c in chunks)
    assert chunks[0].startswith("Short intro.")
    assert chunks[-1].endswith("Closing line!")
    assert sum(c.count("word") for c in chunks) >= 500  # nothing dropped (overlap may repeat)
    assert split_text("") == []
    with pytest.raises(ValueError):
        split_text("x", max_chars=10, overlap_chars=10)


def test_hashes_and_ids_are_deterministic_and_cover_the_title() -> None:
    a = chunk_localization("Title", TEXT)
    b = chunk_localization("Title", TEXT)
    assert [c.content_hash for c in a] == [c.content_hash for c in b]
    assert [c.position for c in a] == list(range(len(a)))
    renamed = chunk_localization("Another title", TEXT)
    assert {c.content_hash for c in renamed}.isdisjoint({c.content_hash for c in a})  # title is embedded too
    assert chunk_hash("T", "x") != chunk_hash("T", "y")
    # The chunker version is part of every hash: a chunking change re-embeds everything.
    assert chunk_hash("T", "x") == content_hash(CHUNKER_VERSION, "T", "x") != content_hash("other-chunker", "T", "x")
    assert point_id("loc", 0) == point_id("loc", 0) != point_id("loc", 1)


def test_bodyless_localizations_fall_back_to_summary_then_title() -> None:
    assert [c.text for c in chunk_localization("Only a title", "")] == ["Only a title"]
    assert [c.text for c in chunk_localization("T", "  ", "A summary.")] == ["A summary."]


def test_token_estimate_is_conservative() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("a" * 900) == 300


def test_real_corpus_chunks_stay_within_the_model_size() -> None:
    records = [r for r in read_corpus(SHARED_CORPUS) if isinstance(r, ArticleRecord)]
    sizes = [len(c.text) for r in records for c in chunk_localization(r.title, r.plain_text(), r.summary)]
    assert len(sizes) > len(records)
    assert max(sizes) <= MAX_CHARS
    assert sum(sizes) / len(sizes) > MAX_CHARS / 2  # packed, not one sentence per chunk


@pytest.mark.parametrize(("paragraph", "sentences"), [
    ("Das gilt z. B. für Ruby. Es gibt bzw. gab Probleme, d. h. Fehler. Neu ist ca. 5 %. Ende.",
     ["Das gilt z. B. für Ruby.", "Es gibt bzw. gab Probleme, d. h. Fehler.", "Neu ist ca. 5 %.", "Ende."]),
    ("Это значит, т. е. проще говоря, всё хорошо. См. рис. 3 ниже. Готово!",
     ["Это значит, т. е. проще говоря, всё хорошо.", "См. рис. 3 ниже.", "Готово!"]),
    ("Use a client, e.g. certbot. Renew often, i.e. twice a day. Dr. Smith agrees. Really? Yes.",
     ["Use a client, e.g. certbot.", "Renew often, i.e. twice a day.", "Dr. Smith agrees.", "Really?", "Yes."]),
    ("Ruby 3.4.0 was released. Version 2.7 is EOL.", ["Ruby 3.4.0 was released.", "Version 2.7 is EOL."]),
])
def test_sentences_end_where_sentences_end_not_after_abbreviations(paragraph: str, sentences: list[str]) -> None:
    assert split_sentences(paragraph) == sentences


def test_chunks_never_start_inside_an_abbreviation() -> None:
    text = " ".join(f"Satz {i} nennt z. B. das Thema {i} und bzw. den Fall {i}." for i in range(40))
    chunks = split_text(text, max_chars=200, overlap_chars=60)
    assert all(c.startswith("Satz ") for c in chunks)
