"""`turnout eval-answers`: are the RAG answers worth reading? (issue 25)

Each labelled case (retrieval/data/answer_eval_{dev,test}.jsonl, format in docs/rag.md) goes
through the real RAG path: a SearchAndAskArticles case searches first (its ``search`` filters,
dated by the case's ``today``) and answers from exactly the articles found; an AskArticles case
answers over the language filter. Per answer model:

- **answer language right**: the answer's own words (citations, quotes and names left out) are in
  ``answerLanguage`` (`answer_language`);
- **accepted non-answers**: an ``llm`` answer that restates the question, asks for it, or says it
  cannot help — judged here by its words (``NON_ANSWER``), independently of the product's check;
- **key-fact recall**: a fact counts when any of its surface forms occurs (case-insensitive);
- **citation validity**: every ``[n]`` names a source and its sentence shares a content word with
  that source's title or snippet (across scripts, resolving is enough) -- and, the issue's own
  definition, with its title or the passages the model read of it (the chunks in ``Source.chunks``);
- **repeated sources**: answers whose sources list an article twice (must be 0);
- **time to first delta** and to the final answer (p50/p95).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import asyncpg
from pydantic.alias_generators import to_camel

from infra.db.rag_chunks import chunks_of
from infra.llm import create_llm_client
from infra.messages.ask import AskOutcome
from infra.results import Source
from infra.settings import Settings
from infra.text_language import detect
from retrieval.answer_check import citation_numbers, has_cyrillic, stems
from retrieval.answer_eval_cases import AnswerCase, AnswerEvalError
from retrieval.answer_stream import DELTA, AnswerStream
from retrieval.chunking import split_sentences
from retrieval.hybrid import PeriodOf, RetrievalText
from retrieval.rag import RagContext, answer_question
from retrieval.rag_eval import machine, percentile
from retrieval.search import normalize_search, search_articles

# The independent judge of a non-answer: what such replies say, in the three languages.
NON_ANSWER = re.compile(
    r"(provide|give|send|share)( me)? (the|your|a) question|what (is|would be) your question|"
    r"(can ?not|can't|unable to|not able to) (help|answer|assist)|i'?m sorry|as an ai|"
    r"(предоставьте|задайте|укажите|пришлите|уточните)( ваш| свой| пожалуйста)? вопрос|"
    r"(не могу|не в состоянии) (помочь|ответить)|к сожалению,? (я )?не|"
    r"(stellen|nennen|geben) sie (mir )?(ihre|bitte ihre|die) frage|kann (ich )?(ihnen )?(dabei )?(leider )?"
    r"nicht helfen|leider (kann|habe) ich",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?(?:\s*\[\d+\])*")
_STRAIGHT_QUOTE = re.compile(r"\"[^\"]*\"")
_WORD = re.compile(r"[^\W\d_][^\W_]*", re.UNICODE)
MIN_OWN_WORDS = 3  # fewer words of its own than this: the language is read over all of the answer's words


class _TimedStream(AnswerStream):
    """The answer's deltas kept in memory, timed; no job events are written."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        super().__init__(pool, "eval-answers")
        self.started = time.monotonic()
        self.first_delta_s: float | None = None

    async def start(self) -> None:
        self.started = time.monotonic()

    async def _write(self, conn: asyncpg.Connection, kind: str, data: dict[str, str]) -> None:
        if kind == DELTA and self.first_delta_s is None:
            self.first_delta_s = time.monotonic() - self.started
        self.events += 1


@dataclass
class CaseResult:
    id: str
    answer_kind: str | None
    language_right: bool
    non_answer: bool
    facts_found: int
    facts: int
    citations: int
    citations_valid: int  # against the cited source's title and snippet (what a reader sees)
    citations_valid_read: int  # against its title and the passages the model read (the chunks it used)
    repeated_sources: bool
    expected_cited: bool
    first_delta_s: float | None
    total_s: float
    message: str | None = None
    answer: str | None = None

    def document(self) -> dict[str, Any]:
        return {to_camel(k): v for k, v in self.__dict__.items()}


def _prose(answer: str) -> str:
    """The answer without citation markers and quoted passages: the words the model wrote."""
    return re.sub(r"\[\d+\]", " ", _STRAIGHT_QUOTE.sub(" ", _without_guillemets(answer)))


def answer_language(prose: str) -> str | None:
    """The language of the words the model wrote itself: lingua over ``prose`` with its names left out,
    a word with a digit, with more than one capital (RubyGems, REXML, CVE) or with a capital inside a
    sentence (a name, or a German noun). Names are the sources' words in whatever language: over all its
    words lingua read a Russian sentence listing Ruby, RubyGems and Bundler versions as German, and a
    German one naming an English-named conference as English (3 answers of the seventh set, docs/rag.md
    round 19). On 1-3 sentences of each corpus article (~1,125 snippets, three draws, `bench.language_check`)
    it misreads 5-8, against 11-15 over all the words, most of those Russian. With fewer than
    ``MIN_OWN_WORDS`` such words, lingua reads all of them."""
    own: list[str] = []
    for sentence in split_sentences(" ".join(prose.split())):
        for i, word in enumerate(_WORD.findall(sentence)):
            name = any(c.isdigit() for c in word) or sum(c.isupper() for c in word) > 1 or (i > 0 and word[0].isupper())
            if not name:
                own.append(word)
    return detect(" ".join(own) if len(own) >= MIN_OWN_WORDS else prose)


def _without_guillemets(text: str) -> str:
    """``text`` without its «…» quotes, nested ones included (a quoted passage quotes its own names:
    «… представляет «Ruby Box» и «ZJIT» …»); a quote left open keeps its text."""
    out: list[str] = []
    depth, opened = 0, 0
    for i, ch in enumerate(text):
        if ch == "«":
            opened = i if depth == 0 else opened
            depth += 1
        elif ch == "»" and depth:
            depth -= 1
            out.append(" " if depth == 0 else "")
        elif depth == 0:
            out.append(ch)
    return "".join(out) + (text[opened:] if depth else "")


def citation_validity(answer: str, sources: Sequence[Source], read: Sequence[str] | None = None) -> tuple[int, int]:
    """(markers, valid markers): a valid one names a source sharing a content word with its sentence --
    with its title and snippet, or with ``read[n-1]`` (its title and the chunks the model read) when given."""
    total = valid = 0
    sentences: list[str] = []
    for line in answer.splitlines():
        # A line that opens with its marker (an extractive quote, a list item) is what it cites.
        sentences += [line] if re.match(r"\s*\[\d+\]", line) else _SENTENCE.findall(line)
    for sentence in sentences:
        words = stems(sentence)
        cyrillic = has_cyrillic(sentence)
        for n in citation_numbers(sentence):
            total += 1
            if not 1 <= n <= len(sources):
                continue
            source = sources[n - 1]
            cited = read[n - 1] if read is not None else source.title + " " + source.snippet
            if words & stems(cited) or cyrillic != has_cyrillic(cited):
                valid += 1
    return total, valid


def score_case(
    case: AnswerCase, outcome: AskOutcome, first_delta_s: float | None, total_s: float, read: Sequence[str] | None = None
) -> CaseResult:
    """``read``: per source, its title and the chunks the model read (None: scored on the snippets alone)."""
    answer = outcome.answer or ""
    prose = _prose(answer)
    ids = [s.article_id for s in outcome.sources]
    lowered = answer.lower()
    found = sum(1 for forms in case.key_facts if any(f.lower() in lowered for f in forms))
    markers, valid = citation_validity(answer, outcome.sources)
    valid_read = citation_validity(answer, outcome.sources, read)[1] if read is not None else valid
    cited = {ids[n - 1] for n in citation_numbers(answer) if 1 <= n <= len(ids)}
    llm_answer = outcome.answer_kind == "llm"
    # Quoted words count here: a name the reply gives in quotes is content it chose to give (the product's
    # check counts it too); only its language is read without them (docs/rag.md, round 19).
    restated = llm_answer and not (stems(answer) - stems(case.question))
    return CaseResult(
        id=case.id, answer_kind=outcome.answer_kind,
        language_right=bool(prose.strip()) and answer_language(prose) == case.answer_language,
        # On a no_answer case saying "not in the articles" is the right answer, not a non-answer.
        non_answer=llm_answer and bool(case.key_facts) and (bool(NON_ANSWER.search(prose)) or restated),
        facts_found=found, facts=len(case.key_facts), citations=markers, citations_valid=valid, citations_valid_read=valid_read,
        repeated_sources=len(ids) != len(set(ids)), expected_cited=bool(cited & set(case.article_ids)),
        first_delta_s=first_delta_s, total_s=total_s, message=outcome.message, answer=outcome.answer,
    )


async def read_by_source(pool: asyncpg.Pool, collection: str, sources: Sequence[Source]) -> list[str]:
    """Each source's title and the whole chunks the answer model read of it (``Source.chunks``)."""
    rows = await chunks_of(pool, collection, [s.article_id for s in sources])
    return [s.title + "\n" + "\n".join(r.text for r in rows
                                        if r.localization_id == s.article_id and r.position in (s.chunks or []))
            for s in sources]


async def run_case(
    ctx: RagContext, case: AnswerCase, retrieval_text: RetrievalText | None = None, collection: str | None = None,
    period_of: PeriodOf | None = None,
) -> CaseResult:
    """One case through the real path: search (combined) then retrieve, select, answer, check. An ask
    case prefers the articles of the period its question names (``period_of``), as the router's ask does."""
    stream = _TimedStream(ctx.pool)
    started = time.monotonic()
    scope: list[str] | None = None
    truncated = False
    if case.tool == "SearchAndAskArticles":
        query = normalize_search(case.search or {}, limits=ctx.settings.limits, today=date.fromisoformat(case.today))
        page = await search_articles(ctx.pool, query)
        scope = [item.id for item in page.items]
        truncated = page.total_items > len(page.items)
    deadline = time.monotonic() + ctx.settings.limits.job_deadline_s
    outcome = await answer_question(
        ctx, question=case.question, language=case.language, answer_language=case.answer_language, scope=scope,
        scope_truncated=truncated, deadline=deadline, stream=stream,
        retrieval_text=retrieval_text(case.question) if retrieval_text else None,
        prefer_period=period_of(case.question, date.fromisoformat(case.today)) if period_of and scope is None else None,
    )
    total_s = time.monotonic() - started
    read = await read_by_source(ctx.pool, collection, outcome.sources) if collection is not None else None
    return score_case(case, outcome, stream.first_delta_s, total_s, read)


@dataclass
class ModelReport:
    model: str
    results: list[CaseResult] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        r = self.results
        n = max(len(r), 1)
        llm = [x for x in r if x.answer_kind == "llm"]
        # A case with no answer text (nothing found to answer from) has no language to be right or wrong in.
        answered = [x for x in r if x.answer_kind is not None]
        firsts = [x.first_delta_s for x in r if x.first_delta_s is not None]
        markers = sum(x.citations for x in r)
        return {
            "model": self.model, "cases": len(r),
            "llmAnswers": len(llm), "extractive": sum(1 for x in r if x.answer_kind == "extractive"),
            "noAnswer": sum(1 for x in r if x.answer_kind is None),
            "noAnswerCases": sum(1 for x in r if not x.facts),
            "languageRight": round(sum(x.language_right for x in answered) / max(len(answered), 1), 3),
            "languageRightLlm": round(sum(x.language_right for x in llm) / max(len(llm), 1), 3),
            "acceptedNonAnswers": sum(x.non_answer for x in r),
            "keyFactRecall": round(sum(x.facts_found for x in r) / max(sum(x.facts for x in r), 1), 3),
            "keyFactRecallLlm": round(sum(x.facts_found for x in llm) / max(sum(x.facts for x in llm), 1), 3),
            "citations": markers,
            "citationValidity": round(sum(x.citations_valid for x in r) / markers, 3) if markers else None,
            "citationValidityRead": round(sum(x.citations_valid_read for x in r) / markers, 3) if markers else None,
            "repeatedSources": sum(x.repeated_sources for x in r),
            "expectedCited": round(sum(x.expected_cited for x in r) / n, 3),
            "firstDeltaP50S": round(percentile(firsts, 50), 2), "firstDeltaP95S": round(percentile(firsts, 95), 2),
            "totalP50S": round(percentile([x.total_s for x in r], 50), 2),
            "totalP95S": round(percentile([x.total_s for x in r], 95), 2),
            "results": [x.document() for x in r],
        }


def render_markdown(report: dict[str, Any], *, title: str) -> str:
    lines = [
        f"### {title}: {report['cases']} cases"
        + (f" (the first {report['cases']} of {report['casesPlanned']}: the time budget ran out)"
           if report.get("casesPlanned", report["cases"]) > report["cases"] else "") + f", {report['date']}", "",
        f"Machine: {report['machine']}. Version `{report['collection']}`.", "",
        "| model | llm / extractive | language right | accepted non-answers | key-fact recall (llm only) | "
        "citations valid (snippets / passages read) | repeated sources | expected article cited | first delta p50 / p95 s | "
        "answer p50 / p95 s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in report["models"]:
        validity = "–" if m["citationValidity"] is None else (
            f"{m['citationValidity']:.1%} / {m.get('citationValidityRead', m['citationValidity']):.1%} of {m['citations']}")
        lines.append(
            f"| {m['model']} | {m['llmAnswers']} / {m['extractive']} | {m['languageRight']:.1%} | "
            f"{m['acceptedNonAnswers']} | {m['keyFactRecall']:.1%} ({m['keyFactRecallLlm']:.1%}) | {validity} | "
            f"{m['repeatedSources']} | {m['expectedCited']:.1%} | {m['firstDeltaP50S']:.1f} / "
            f"{m['firstDeltaP95S']:.1f} | {m['totalP50S']:.1f} / {m['totalP95S']:.1f} |")
    return "\n".join(lines) + "\n"


async def run_answer_eval(
    ctxs: Sequence[RagContext], cases: Sequence[AnswerCase], *, time_budget_s: float | None = None,
    retrieval_text: RetrievalText | None = None, period_of: PeriodOf | None = None,
) -> dict[str, Any]:
    """Every case with every answer model (one context each), cases interleaved across models so a
    load spike on a shared machine hits them alike. With ``time_budget_s``, no case starts after
    that many seconds: the report covers the first cases in file order (never a chosen subset)
    and says how many of the planned ran."""
    from datetime import UTC, datetime

    from retrieval.rag import resolve_read_version

    version = await resolve_read_version(ctxs[0])
    if version is None:
        raise AnswerEvalError("no collection version serves reads: import the corpus and run `turnout reembed` first")
    await ctxs[0].embedders.get(version.model).embed(["warm-up"])  # model load is not a question's latency
    reports = [ModelReport(ctx.settings.llm_answer_model if ctx.llm is not None else "extractive") for ctx in ctxs]
    stop_at = time.monotonic() + time_budget_s if time_budget_s is not None else None
    ran = 0
    for case in cases:
        if stop_at is not None and time.monotonic() >= stop_at:
            break
        for ctx, report in zip(ctxs, reports, strict=True):
            report.results.append(await run_case(ctx, case, retrieval_text, version.name, period_of))
        ran += 1
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
            "collection": version.name, "cases": ran, "casesPlanned": len(cases),
            "models": [r.document() for r in reports]}


async def eval_installation(
    settings: Settings, cases: Sequence[AnswerCase], models: Sequence[str], *, time_budget_s: float | None = None,
    retrieval_text: RetrievalText | None = None, period_of: PeriodOf | None = None,
) -> dict[str, Any]:
    """The configured database, vector store and LLM endpoint; one run per answer model. With
    Qdrant Edge stop the vector worker first (it holds the store)."""
    from infra.db.pool import create_pool
    from infra.vectors import open_vector_store
    from retrieval.embeddings import EmbedderRegistry
    from retrieval.rerank import Reranker

    pool = await create_pool(settings.database_url, min_size=1, max_size=4)
    store = open_vector_store(settings)
    embedders = EmbedderRegistry(settings)
    reranker = Reranker.from_settings(settings)
    try:
        ctxs = []
        for model in models or [settings.llm_answer_model]:
            configured = settings.model_copy(update={"llm_answer_model": model})
            ctxs.append(RagContext(settings=configured, pool=pool, store=store, embedders=embedders,
                                   llm=create_llm_client(configured) if configured.llm_configured else None,
                                   reranker=reranker))
        return await run_answer_eval(ctxs, cases, time_budget_s=time_budget_s, retrieval_text=retrieval_text,
                                     period_of=period_of)
    finally:
        if reranker is not None:
            await reranker.close()
        store.close()
        await pool.close()
