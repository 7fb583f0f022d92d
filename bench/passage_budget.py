"""Key facts the answer model can read at a passage budget: the prompt's recall ceiling.

For each case of an answer eval set (dev by default: tune on dev only), the production path up to
the prompt — search (combined cases), hybrid retrieval, visible sources, ``select_passages`` — at
each budget of ``--budgets``; a key fact counts when any of its forms occurs in the selected
passages (case-insensitive), as `turnout eval-answers` scores answers. No LLM: this is the most a
model could recall from that prompt, and the estimated prompt tokens it costs. Each budget is measured
side by side three ways: with the period an ask names preferred, as an AskArticles call retrieves
(`retrieve_preferring_period`); without (plain `retrieve`, the baseline); and as the code-filled
routing sends an ask that names a period (`router.code_filters.fill_filters`: the combined tool, its
search filtered to the period, the answer from the articles it found). Also counted, the cases whose
answering article is among the passages.

Run against an installation with the corpus indexed (stop the Edge vector worker first):
``.venv/bin/python -m bench.passage_budget [--split dev] [--budgets 300,450,700]``.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from infra.settings import get_settings
from retrieval.answer_eval_cases import load_answer_cases, resolve_set
from retrieval.chunking import estimate_tokens

if TYPE_CHECKING:
    from infra.db.collections import CollectionVersion
    from infra.db.rag_sources import SourceArticle
    from infra.messages.ask import PublishedPeriod
    from infra.vectors import Hit
    from retrieval.hybrid import RetrievalConfig
    from retrieval.rag import RagContext


PREFERRED, BASELINE, ROUTED = "period preferred", "no preference (baseline)", "as routed (combined, filtered)"
MODES = (PREFERRED, BASELINE, ROUTED)


@dataclass
class BudgetTotals:
    found: int = 0
    facts: int = 0
    cases: int = 0
    article_read: int = 0  # cases with an answering article among the passages
    tokens: list[int] = field(default_factory=list)


async def _visible_hits(
    ctx: RagContext, version: CollectionVersion, question: str, period: PublishedPeriod | None,
    language: str | None, scope: list[str] | None, config: RetrievalConfig,
) -> tuple[list[Hit], dict[str, SourceArticle]]:
    """What production retrieves for an ask (preferring ``period`` when one is given), the chunks of
    articles still visible, and those articles."""
    from infra.db.rag_sources import visible_sources
    from retrieval.hybrid import retrieve_preferring_period

    retrieved = await retrieve_preferring_period(ctx.pool, ctx.store, ctx.embedders, version, question, period=period,
                                                 language=language, scope=scope, config=config)
    sources = await visible_sources(ctx.pool, [h.chunk.localization_id for h in retrieved.hits])
    return [h for h in retrieved.hits if h.chunk.localization_id in sources], sources


def _retrieved_as(question: str) -> str:
    """What retrieval reads for ``question``, as the router's executors ask (`AskCall.retrieval_text`)."""
    from router.question_reading import retrieval_text

    return retrieval_text(question) or question


async def _routed_scope(
    ctx: RagContext, question: str, today: date, language: str | None,
) -> tuple[str, list[str] | None]:
    """What the code-filled routing makes of an ask (the model picked AskArticles): the question to
    answer and, when it names a period, the articles the combined tool's search finds (its scope).
    The search reads the case's ``language``, as the other two ways retrieve: only the path differs."""
    from retrieval.search import search_articles
    from router.code_filters import fill_filters
    from router.gateway import CallValidator, Rejection
    from router.question_reading import read_question
    from router.tools import ASK, default_registry

    reading = read_question(question, today)
    tool, arguments = fill_filters(ASK, {"question": question}, reading)
    call = CallValidator(default_registry(), ctx.settings.limits, today=today, question=question,
                         user_language=reading.answer).validate(tool, arguments)
    if isinstance(call, Rejection) or call.question is None:  # nothing answered
        return question, []
    if call.search is None:
        return call.question, None
    search = call.search.model_copy(update={"language": language})
    return call.question, [item.id for item in (await search_articles(ctx.pool, search)).items]


async def measure(split: str, budgets: list[int]) -> dict[tuple[int, str], BudgetTotals]:
    from infra.db.pool import create_pool
    from infra.vectors import open_vector_store
    from retrieval.answer_prompt import select_passages
    from retrieval.embeddings import EmbedderRegistry
    from retrieval.hybrid import RetrievalConfig
    from retrieval.rag import RagContext, resolve_read_version
    from retrieval.search import normalize_search, search_articles
    from router.question_reading import question_period

    settings = get_settings()
    pool = await create_pool(settings.database_url, min_size=1, max_size=2)
    ctx = RagContext(settings=settings, pool=pool, store=open_vector_store(settings),
                     embedders=EmbedderRegistry(settings), llm=None, reranker=None)
    version = await resolve_read_version(ctx)
    assert version is not None, "no collection version serves reads: run `turnout reembed` first"
    totals = {(b, mode): BudgetTotals() for b in budgets for mode in MODES}
    config = RetrievalConfig.from_settings(settings)
    for case in load_answer_cases(resolve_set(split), split=split):
        if not case.key_facts:
            continue
        scope = None
        today = date.fromisoformat(case.today)
        if case.tool == "SearchAndAskArticles":
            query = normalize_search(case.search or {}, limits=settings.limits, today=today)
            scope = [item.id for item in (await search_articles(pool, query)).items]
        asked = _retrieved_as(case.question)
        period = question_period(case.question, today)
        preferred_hits = await _visible_hits(ctx, version, asked, period, case.language, scope, config)
        # Without a period, or within a scope, the preference changes nothing: one retrieval serves both.
        plain_hits = (preferred_hits if period is None or scope is not None
                      else await _visible_hits(ctx, version, asked, None, case.language, scope, config))
        routed_hits = preferred_hits
        if period is not None and case.tool == "AskArticles":
            routed_question, routed_scope = await _routed_scope(ctx, case.question, today, case.language)
            routed_asked = _retrieved_as(routed_question)
            routed_hits = await _visible_hits(ctx, version, routed_asked, None, case.language, routed_scope, config)
        for mode, (hits, sources) in ((PREFERRED, preferred_hits), (BASELINE, plain_hits), (ROUTED, routed_hits)):
            for budget in budgets:
                selection = select_passages(hits, sources, budget, asked) if hits else None
                text = " ".join(selection.texts).lower() if selection else ""
                read = {a.source.id for a in selection.articles} if selection else set()
                found = sum(any(form.lower() in text for form in fact) for fact in case.key_facts)
                totals[budget, mode].found += found
                totals[budget, mode].facts += len(case.key_facts)
                totals[budget, mode].cases += 1
                totals[budget, mode].article_read += bool(read & set(case.article_ids))
                totals[budget, mode].tokens.append(estimate_tokens(text))
    await pool.close()
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--budgets", default="300,450,700")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    totals = asyncio.run(measure(args.split, budgets))
    print("| budget (tokens) | retrieval | key facts in the passages | answering article read | "
          "passage tokens p50 |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for (budget, mode), t in totals.items():
        tokens = sorted(t.tokens)
        print(f"| {budget} | {mode} | {t.found}/{t.facts} "
              f"({t.found / max(t.facts, 1):.1%}) | {t.article_read}/{t.cases} | "
              f"{tokens[(len(tokens) - 1) // 2] if tokens else 0} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
