"""Which passages the answer model reads: best-first by article, within the budget in tokens."""

from __future__ import annotations

from infra.db.rag_sources import SourceArticle
from infra.vectors import Hit
from infra.vectors.base import StoredChunk
from retrieval.answer_prompt import MIN_FILL_CHARS, article_header, select_passages
from retrieval.chunking import estimate_tokens

QUESTION = "Which port does the relay listen on?"
FILLER = [f"Paragraph {n} of the release notes talks about packaging, mirrors and the changelog format." for n in
          range(12)]
ANSWER = "The relay listens on port 8443 by default."


def _hit(localization: str, position: int, text: str, score: float) -> Hit:
    return Hit(score=score, chunk=StoredChunk(id=f"{localization}:{position}", localization_id=localization,
                                              article_id=localization, language="en", position=position, text=text,
                                              content_hash="h"))


SOURCES = {
    "notes": SourceArticle(id="notes", article_id="notes", language="en", title="Release notes"),
    "relay": SourceArticle(id="relay", article_id="relay", language="en", title="Running the relay"),
}


def test_the_room_a_whole_chunk_does_not_fit_is_filled_with_its_sentences_nearest_the_question() -> None:
    first = " ".join(FILLER[:6])  # ~550 characters: fits whole
    second = " ".join(FILLER[6:9] + [ANSWER] + FILLER[9:])  # ~800 characters: tightened to 600, does not fit
    hits = [_hit("notes", 0, first, 0.9), _hit("relay", 0, second, 0.8)]
    header = estimate_tokens(article_header(1, SOURCES["notes"]))
    budget = header + estimate_tokens(first) + estimate_tokens(article_header(2, SOURCES["relay"])) + 100
    selection = select_passages(hits, SOURCES, budget, QUESTION)
    assert [a.source.id for a in selection.articles] == ["notes", "relay"] and selection.cut
    tail = selection.articles[1].texts[0]
    assert ANSWER in tail and len(tail) <= 300 < len(second)  # the sentence that answers, in the room left
    used = sum(estimate_tokens(article_header(a.number, a.source)) + sum(map(estimate_tokens, a.texts))
               for a in selection.articles)
    assert used <= budget


def test_less_room_than_a_sentence_is_left_empty() -> None:
    first = " ".join(FILLER[:6])
    hits = [_hit("notes", 0, first, 0.9), _hit("relay", 0, " ".join(FILLER[6:] + [ANSWER]), 0.8)]
    room = (MIN_FILL_CHARS // 3) - 1
    budget = estimate_tokens(article_header(1, SOURCES["notes"])) + estimate_tokens(first) + room + \
        estimate_tokens(article_header(2, SOURCES["relay"]))
    selection = select_passages(hits, SOURCES, budget, QUESTION)
    assert [a.source.id for a in selection.articles] == ["notes"] and selection.cut


def test_the_best_chunk_alone_over_the_budget_is_cut_to_its_sentences_nearest_the_question() -> None:
    text = " ".join(FILLER[:5] + [ANSWER] + FILLER[5:])
    budget = estimate_tokens(article_header(1, SOURCES["relay"])) + 40
    selection = select_passages([_hit("relay", 0, text, 0.9)], SOURCES, budget, QUESTION)
    [only] = selection.articles
    assert ANSWER in only.texts[0] and len(only.texts[0]) <= 120 and selection.cut


def test_the_selection_carries_the_parts_of_a_question_that_asks_several_things() -> None:
    hits = [_hit("relay", 0, ANSWER, 0.9)]
    two = select_passages(hits, SOURCES, 200, "Which port does the relay listen on and how do I change it?")
    assert two.parts == ["Which port does the relay listen on", "how do I change it"]
    assert select_passages(hits, SOURCES, 200, QUESTION).parts == []  # one thing asked: no list in the prompt
