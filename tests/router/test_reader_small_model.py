"""Code-filled filters (json_schema, the small-model path): a period cue the reader cannot read
is asked of the model in a closed schema, validated in code (issue 22, item 4a); an unusable
answer leaves the search over all dates with the "could not read" adjustment (item 4b)."""

from __future__ import annotations

import asyncpg
import pytest

from infra.db.audit import list_audit_events
from infra.settings import LLMFilters, LLMMode, Settings
from router.service import RouteRequest, route_question
from tests.router.conftest import TODAY, make_deps
from tests.support.llm_server import ScriptedLLM, Text, json_decision

pytestmark = pytest.mark.usefixtures("shared_corpus")
QUESTION = "Zeig mir Artikel über RubyGems aus dem vorvorigen Quartal"  # "vorvorigen": a word the grammar does not read


async def test_the_model_is_asked_for_just_the_period_and_code_computes_it(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, new_job: object
) -> None:
    llm.script(Text('{"unit": "quarter", "offset": -1, "count": 1}'), json_decision("SearchArticles", {"text": "RubyGems"}),
               Text('{"tool": null, "reason": "nothing in that quarter"}'))  # the corpus has none then: it stops
    job = await new_job(QUESTION)  # type: ignore[operator]
    deps = make_deps(settings, db, None, mode=LLMMode.JSON_SCHEMA, filters=LLMFilters.CODE)
    result = await route_question(deps, RouteRequest(question=QUESTION, job_id=job, today=TODAY))
    first = llm.chat_requests[0]
    assert first["response_format"]["json_schema"]["name"] == "period" and first["max_tokens"] <= 40
    assert "aus dem vorvorigen Quartal" in first["messages"][-1]["content"]
    assert result.search is not None  # today 2026-09-15: the previous quarter is Q2 2026
    assert (str(result.search.date_from), str(result.search.date_to)) == ("2026-04-01", "2026-06-30")
    assert not any("could not read" in a for a in result.search.adjustments)
    assert result.usage.llm_calls == 3 and result.routed_by == "llm"
    rounds = [e for e in await list_audit_events(db, job) if e.kind == "llm_round"]
    assert [(e.loop_mode, e.outcome) for e in rounds][:2] == [("period", "period"), ("json_schema", "tool_call")]


@pytest.mark.parametrize("answer", [
    '{"none": true}', '{"unit": "quarter", "offset": 3, "count": 1}', '{"dateFrom": "2030-01-01", "dateTo": "2030-03-31"}',
    '{"unit": "fortnight", "offset": -1, "count": 1}', "not json",
])
async def test_an_unusable_answer_leaves_all_dates_and_says_so(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool, answer: str
) -> None:
    llm.script(Text(answer), json_decision("SearchArticles", {"text": "RubyGems"}))
    deps = make_deps(settings, db, None, mode=LLMMode.JSON_SCHEMA, filters=LLMFilters.CODE)
    result = await route_question(deps, RouteRequest(question=QUESTION, today=TODAY))
    assert result.search is not None and result.search.date_from is None and result.search.date_to is None
    assert "could not read the period 'aus dem vorvorigen Quartal'; searched all dates" in result.search.adjustments
    assert result.search.text == "RubyGems"


async def test_no_extra_round_when_the_reader_reads_the_period(
    llm: ScriptedLLM, settings: Settings, db: asyncpg.Pool
) -> None:
    llm.script(json_decision("SearchArticles", {"text": "RubyGems"}))
    deps = make_deps(settings, db, None, mode=LLMMode.JSON_SCHEMA, filters=LLMFilters.CODE)
    result = await route_question(deps, RouteRequest(question="Zeig mir Artikel über RubyGems aus dem letzten Quartal",
                                                     today=TODAY))
    assert result.usage.llm_calls == 1 and result.search is not None
    assert (str(result.search.date_from), str(result.search.date_to)) == ("2026-04-01", "2026-06-30")
