"""Fuzzed tool arguments, as a broken or hostile model would send them (SPEC §5): wrong types,
huge numbers, long strings, SQL and JSON metacharacters, NUL, dates in other languages and
malformed ones, unknown keys, arguments that are not JSON at all.

Three layers, the same promise: every call is either rejected with a precise `ERROR: …` tool
message or executed with clamped arguments whose clamps are reported; no exception escapes
the router, no page is larger than the limit.
- the gateway's validator alone (many examples, pure);
- the router loop in-process: the scripted LLM over HTTP sends the fuzzed call, the gateway
  validates, the real search runs on PostgreSQL, the audit is written to PostgreSQL;
- a handful of jobs through the real API and worker processes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import date
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from infra.db.pool import create_pool
from infra.results import QuestionResult
from infra.settings import Settings
from retrieval.search import MAX_PAGE, TEXT_MAX_CHARS
from router.engine import OpenAIEngine
from router.errors import RoutingFailed
from router.executor import InProcessExecutor
from router.gateway import CallValidator, Rejection, ValidatedCall
from router.service import RouterDeps, RouteRequest, route_question
from router.tools import ASK, SEARCH, SEARCH_AND_ASK, default_registry
from tests.api.support import ApiServer, issue_key, query, throwaway_database, wait_for_job
from tests.retrieval.rag_fixtures import CORPUS, HIDDEN_ID, load
from tests.router.conftest import RecordingExecutor
from tests.support.llm_server import ScriptedLLM, Text, ToolCall

TODAY = date(2026, 9, 15)
TOOLS = (SEARCH, ASK, SEARCH_AND_ASK)
# How a routing job may end when its model only sends garbage (anything else is a bug).
ACCEPTABLE_FAILURES = {"no_tool_call", "limit_max_rounds", "limit_tool_executions", "tool_failed"}

NASTY_STRINGS = [
    "'; DROP TABLE localizations; --", "%' OR hidden OR '%", '{"$where": "1==1"}', '"}]}', "\\u0000",
    "nul\x00byte", "\x00", "Robert'); DELETE FROM jobs; --", "ru' OR '1'='1", "<script>alert(1)</script>",
    "Привет, мир", "Grüße aus Köln", "日本語のテキスト", "🙂🙂🙂", "a" * 5000, "слово " * 400, "", "   ", "\n\t\r",
    "en\" OR \"1\"=\"1", "de; hidden=true", "../../etc/passwd", "klingon", "EN", " ru ", "null", "None",
]
NASTY_DATES = [
    "15. März 2025", "1 января 2024", "2025-02-30", "2025/01/01", "01.02.2025", "yesterday", "gestern",
    "последние 12 месяцев", "9999-12-31", "0001-01-01", "0000-00-00", "2025-1-1", "+2025-01-01", " 2025-01-01 ",
    "2025-01-01T00:00:00Z", "2026-09-16", "2100-01-01", "2025-13-01", "２０２５-０１-０１",
]
NUMBERS = st.one_of(
    st.integers(), st.integers(min_value=-(2**80), max_value=2**80), st.sampled_from([0, -1, 51, 10_000, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
)
SCALARS = st.one_of(st.none(), NUMBERS, st.text(max_size=40), st.sampled_from(NASTY_STRINGS))
ANY = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                         max_size=3), max_leaves=6)
DATES = st.one_of(st.dates(min_value=date(1, 1, 1)).map(str), st.sampled_from(NASTY_DATES), ANY)
LANGUAGES = st.one_of(st.sampled_from(["ru", "en", "de"]), st.sampled_from(NASTY_STRINGS), ANY)
KNOWN = {
    "text": st.one_of(st.sampled_from(NASTY_STRINGS), st.text(max_size=300), ANY),
    "question": st.one_of(st.sampled_from(NASTY_STRINGS), st.text(max_size=300), st.just("q" * 2100), ANY),
    "language": LANGUAGES, "answerLanguage": LANGUAGES, "dateFrom": DATES, "dateTo": DATES,
    "sort": st.one_of(st.sampled_from(["newest", "oldest", "random", "NEWEST", "asc"]), ANY),
    "page": st.one_of(NUMBERS, ANY), "pageSize": st.one_of(NUMBERS, ANY),
}
UNKNOWN_KEYS = st.one_of(
    st.sampled_from(["includeHidden", "hidden", "published", "scope", "id", "sql", "page_size", "PageSize",
                     "__proto__", "$where", "status", "limit", "ids"]),
    st.text(max_size=12),
)
ARGUMENTS = st.builds(
    lambda known, unknown: {**unknown, **known},
    st.fixed_dictionaries({}, optional=KNOWN),
    st.dictionaries(UNKNOWN_KEYS, ANY, max_size=2) | st.just({}),
)
BROKEN_JSON = st.sampled_from(['{"text": ', "null", "[]", '"text"', "42", '{"text": "a"} trailing', "{'text': 'a'}",
                               "{" + '"a":{' * 200, "\x00", "NaN", '{"pageSize": 1e999}'])
TOOL_NAMES = st.one_of(st.sampled_from(TOOLS), st.sampled_from(
    ["searcharticles", "DeleteArticles", "ExecuteSQL", "run_shell", "SearchArticles ", "Search_Articles", ""]),
    st.text(max_size=20))


def _validator(settings: Settings, question: str = "fuzzing the gateway") -> CallValidator:
    return CallValidator(default_registry(), settings.limits, today=TODAY, question=question, user_language="en")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_verdict(settings: Settings, name: str, arguments: Any, verdict: ValidatedCall | Rejection) -> None:
    """The invariants of one gateway verdict."""
    limits = settings.limits
    spec = default_registry().get(name)
    if isinstance(verdict, Rejection):
        assert verdict.message.startswith("ERROR: ") and len(verdict.message) > 12, verdict
        if spec is None:
            assert "unknown tool" in verdict.reason
        return
    assert spec is not None, f"an unregistered tool {name!r} was accepted"
    assert isinstance(arguments, dict) and set(arguments) <= spec.argument_names, (name, arguments)
    search = verdict.search
    if name in (SEARCH, SEARCH_AND_ASK):
        assert search is not None
        assert 1 <= search.page_size <= limits.page_size_max and 1 <= search.page <= MAX_PAGE
        assert search.language in (None, "ru", "en", "de") and search.sort in ("newest", "oldest")
        assert search.text is None or (len(search.text) <= TEXT_MAX_CHARS and "\x00" not in search.text)
        if search.date_to is not None:
            assert search.date_to <= TODAY
            assert search.date_from is None or search.date_from <= search.date_to
        asked = _int(arguments.get("pageSize"))
        if name == SEARCH and asked is not None and not 1 <= asked <= limits.page_size_max:
            assert any(a.startswith(f"pageSize {asked} clamped") for a in search.adjustments), search
        asked_page = _int(arguments.get("page"))
        if name == SEARCH and asked_page is not None and not 1 <= asked_page <= MAX_PAGE:
            assert any(a.startswith(f"page {asked_page} clamped") for a in search.adjustments), search
        if name == SEARCH_AND_ASK:
            assert search.page == 1
    if name in (ASK, SEARCH_AND_ASK):
        assert verdict.question and len(verdict.question) <= limits.question_max_chars
        assert verdict.answer_language in ("ru", "en", "de") and verdict.language in (None, "ru", "en", "de")


@given(name=TOOL_NAMES, arguments=st.one_of(ARGUMENTS, BROKEN_JSON))
@hypothesis_settings(max_examples=600, deadline=None, database=None)
def test_the_validator_rejects_or_clamps_every_fuzzed_call(settings: Settings, name: str, arguments: Any) -> None:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    verdict = _validator(settings).validate(name, raw)
    parsed = json.loads(raw) if isinstance(arguments, dict) else None
    check_verdict(settings, name, parsed if parsed is not None else arguments, verdict)


@pytest.fixture(scope="module")
def fuzz_dsn(test_environment: None) -> Iterator[str]:
    """A database of its own (its audit rows stay out of the session's ops figures) with a small
    article set, one of them hidden."""
    with throwaway_database("tool_fuzz") as dsn:
        async def fill() -> None:
            pool = await create_pool(dsn, min_size=1, max_size=1)
            try:
                await load(pool, CORPUS)
            finally:
                await pool.close()

        asyncio.run(fill())
        yield dsn


@pytest.fixture
def own_llm() -> Iterator[ScriptedLLM]:
    """A scripted model of this test's own: the session's workers call the shared one, and a job
    they route meanwhile (one another test left) must not take this test's scripted replies."""
    server = ScriptedLLM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


async def _route(deps: RouterDeps, question: str) -> QuestionResult | RoutingFailed:
    try:
        return await route_question(deps, RouteRequest(question=question, today=TODAY))
    except RoutingFailed as exc:  # the documented way a job ends failed; anything else escapes
        return exc


def test_the_router_survives_fuzzed_calls_from_the_model(
    settings: Settings, own_llm: ScriptedLLM, fuzz_dsn: str, loop: asyncio.Runner
) -> None:
    llm = own_llm
    settings = settings.model_copy(update={"llm_base_url": own_llm.base_url})
    pool = loop.run(create_pool(fuzz_dsn, min_size=1, max_size=4))
    executor = RecordingExecutor(InProcessExecutor(pool))  # no RAG context: an accepted ask fails as tool_failed
    registry = default_registry()
    deps = RouterDeps(settings=settings, pool=pool, redis=None, executor=executor,
                      engine=OpenAIEngine(settings, registry), registry=registry, use_decision_cache=False)
    seen = {"rejected": 0, "executed": 0}

    @given(name=TOOL_NAMES, arguments=st.one_of(ARGUMENTS, BROKEN_JSON))
    @hypothesis_settings(max_examples=60, deadline=None, database=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    def one_call(name: str, arguments: Any) -> None:
        llm.reset()
        executor.searches.clear()
        executor.asks.clear()
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        llm.script(ToolCall(name, raw), Text("Done."), Text("Done."))
        outcome = loop.run(_route(deps, "fuzzed tool call from a scripted model"))
        verdict = _validator(settings, "fuzzed tool call from a scripted model").validate(name, raw)
        requests = llm.chat_requests
        assert 1 <= len(requests) <= settings.limits.max_rounds
        if isinstance(verdict, Rejection):
            seen["rejected"] += 1
            # The rejected call is answered with the precise error, on its own tool_call_id.
            tool_messages = [m for m in requests[1]["messages"] if m["role"] == "tool"]
            assert [m["content"] for m in tool_messages] == [verdict.message]
            # The model's call never ran; after its prose the deterministic router decided (one call at most).
            assert len(executor.searches) + len(executor.asks) <= 1
            if isinstance(outcome, RoutingFailed):
                assert outcome.code in ACCEPTABLE_FAILURES, outcome
            else:
                assert outcome.routed_by == "fallback" and outcome.routed_reason, outcome
        else:
            seen["executed"] += 1
            assert executor.searches or executor.asks
            for search in executor.searches:
                assert search.page_size <= settings.limits.page_size_max
                assert search.wire() == verdict.search.wire()  # type: ignore[union-attr]
            if isinstance(outcome, RoutingFailed):
                assert outcome.code in ACCEPTABLE_FAILURES, outcome
            else:
                assert outcome.articles is None or outcome.articles.page_size <= settings.limits.page_size_max
                ids = {i.id for i in (outcome.articles.items if outcome.articles else [])}
                assert HIDDEN_ID not in ids

    try:
        one_call()
    finally:
        loop.run(pool.close())
    assert seen["rejected"] and seen["executed"], seen  # both paths were exercised
    # Every call the model made is in the audit trail: rejected ones with their error.
    rows = query(settings.model_copy(update={"database_url": fuzz_dsn}),
                 "SELECT kind, count(*) AS n FROM audit_events GROUP BY kind")
    counts = {r["kind"]: r["n"] for r in rows}
    assert counts.get("tool_rejected", 0) >= seen["rejected"] and counts.get("llm_round", 0) >= 60


# A handful through the real API and worker processes: (the fuzzed call, what must happen).
THROUGH_WORKERS: list[tuple[str, str | dict[str, Any]]] = [
    (SEARCH, {"text": "ruby", "pageSize": 10_000, "page": -5}),
    (SEARCH, {"text": "'; DROP TABLE localizations; --", "language": "en\" OR \"1\"=\"1"}),
    (SEARCH, {"text": "ruby", "dateFrom": "15. März 2025"}),
    (SEARCH, {"text": "nul\x00byte", "includeHidden": True}),
    (ASK, {"question": "\x00", "answerLanguage": "klingon"}),
    (SEARCH_AND_ASK, {"question": "Vergleich", "scope": ["*"], "pageSize": 500}),
    ("ExecuteSQL", {"sql": "DROP TABLE jobs"}),
    (SEARCH, '{"text": "ruby", "pageSize": '),
]


@pytest.fixture(scope="module")
def session_api(celery_worker: object, settings: Settings) -> Iterator[ApiServer]:
    server = ApiServer(settings).start()
    yield server
    server.stop()


@pytest.mark.usefixtures("shared_corpus")
def test_fuzzed_calls_through_the_api_and_workers(session_api: ApiServer, settings: Settings, llm: ScriptedLLM) -> None:
    token = issue_key(settings, "tool-fuzz").token
    follow_up = ToolCall(SEARCH, {"text": "ruby", "language": "en", "pageSize": 7})
    with httpx.Client(base_url=session_api.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        for n, (name, arguments) in enumerate(THROUGH_WORKERS):
            llm.reset()
            verdict = _validator(settings, "x").validate(name, arguments)
            llm.script(ToolCall(name, arguments), follow_up)
            response = client.post("/v1/questions", json={"question": f"Find articles about Ruby (fuzzed call {n} through the workers)"})
            assert response.status_code == 202, response.text
            doc = wait_for_job(client, response.json()["id"], timeout=60)
            assert doc["status"] == "succeeded", (name, arguments, doc)
            search = doc["result"]["search"]
            assert doc["result"]["articles"]["pageSize"] == search["pageSize"] <= settings.limits.page_size_max
            audit = query(settings, "SELECT kind, tool, error FROM audit_events WHERE job_id = $1 ORDER BY id",
                          doc["id"])
            executed = [r["tool"] for r in audit if r["kind"] == "tool_execution"]
            if isinstance(verdict, Rejection):
                # Rejected with the precise error the model saw, then the corrected call ran.
                second = llm.chat_requests[1]["messages"]
                assert [m["content"] for m in second if m["role"] == "tool"] == [verdict.message]
                assert [r["error"] for r in audit if r["kind"] == "tool_rejected"] == [verdict.reason]
                assert executed == [SEARCH] and search["pageSize"] == 7
            else:
                # Executed once, clamped, and the clamps are in the result the client sees.
                assert executed == [name] and len(llm.chat_requests) == 1
                assert search["pageSize"] == 50 and search["page"] == 1
                assert any(a.startswith("pageSize 10000 clamped") for a in search["adjustments"])
                assert any(a.startswith("page -5 clamped") for a in search["adjustments"])
