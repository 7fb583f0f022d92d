"""The messages between processes are the models of infra/messages (issue 26): no send site builds
a dict by hand, the senders take the models, and a message from before them still parses."""

from __future__ import annotations

import ast
import typing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra.db.jobs import JobRow
from infra.messages.ask import AskOutcome, AskRequest
from infra.messages.job import JobMessage
from infra.status import JobStatus
from workers import dispatch, executor

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("api", "workers", "retrieval", "router")
# Celery's sends and the project's senders around them.
SENDERS = frozenset({"send_task", "apply_async", "delay", "signature", "send_run_job", "send_webhook"})


def _hand_built(node: ast.expr) -> ast.expr | None:
    """A dict literal, dict comprehension or `dict(...)` in `node` (through lists, tuples, `x if c else y`)."""
    if isinstance(node, ast.Dict | ast.DictComp):
        return node
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return node
    children: list[ast.expr] = []
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        children = list(node.elts)
    elif isinstance(node, ast.IfExp):
        children = [node.body, node.orelse]
    elif isinstance(node, ast.Starred):
        children = [node.value]
    return next((found for child in children if (found := _hand_built(child)) is not None), None)


def _sender(call: ast.Call) -> str | None:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
    if name == "partial" and call.args:  # functools.partial(send_run_job, ...)
        first = call.args[0]
        name = first.attr if isinstance(first, ast.Attribute) else getattr(first, "id", None)
    return name if name in SENDERS else None


def send_sites(source: str) -> tuple[list[str], list[str]]:
    """(every send call's sender, the hand-built message dicts among their arguments as "line: sender")."""
    sites, found = [], []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or (sender := _sender(node)) is None:
            continue
        sites.append(sender)
        for value in [*node.args, *(k.value for k in node.keywords)]:
            if (built := _hand_built(value)) is not None:
                found.append(f"{built.lineno}: {sender}")
    return sites, found


def test_the_check_finds_a_dict_passed_to_a_sender() -> None:
    """The rule below fails on a reintroduced dict (the shapes this code had before the models)."""
    for source in (
        'app.send_task(RUN_JOB.name, args=[job_id], kwargs={"submitted": submitted} if submitted else None)',
        'send_run_job(producer, settings, job_id, submitted={"question": job.question})',
        'functools.partial(send_run_job, producer, settings, job.id, submitted=dict(question=q))',
        'self.app.send_task(task.name, args=[{**payload, "deadlineS": left}], queue=q)',
    ):
        assert send_sites(source)[1], source
    assert send_sites("app.send_task(SEARCH.name, args=[q.wire()], queue=q)") == (["send_task"], [])


def test_no_message_dict_is_built_by_hand_at_a_send_site() -> None:
    sites: dict[str, list[str]] = {}
    offences: list[str] = []
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            senders, found = send_sites(path.read_text())
            sites[name] = senders
            offences += [f"{name}:{where}" for where in found]
    assert offences == [], f"a message built as a dict; send an infra/messages model's .wire(): {offences}"
    # The scan saw the send sites it guards (else it would pass for proving nothing).
    assert "send_task" in sites["workers/dispatch.py"] and "send_task" in sites["workers/executor.py"]
    assert "send_run_job" in sites["api/submission.py"]


def test_the_senders_take_the_models() -> None:
    """mypy holds every caller to these types; a dict would not pass the check."""
    assert typing.get_type_hints(dispatch.send_run_job)["submitted"] == JobMessage | None
    hints = typing.get_type_hints(executor.QueueExecutor._call)
    assert set(typing.get_args(hints["request"])) == {AskRequest, executor.NormalizedSearch}


def _row(**columns: object) -> JobRow:
    now = datetime.now(UTC)
    values: dict[str, typing.Any] = dict(
        id="job_x", api_key_id="key_x", status=JobStatus.QUEUED, question="Ruby articles", answer_language="de",
        page_size=5, webhook_url=None, idempotency_key=None, request_hash=None, result=None, error=None, usage={},
        attempts=0, lease_expires_at=None, created_at=now, updated_at=now, started_at=None, finished_at=None,
    )
    return JobRow(**(values | columns))


def test_the_job_message_is_the_row_s_question() -> None:
    message = JobMessage.for_job(_row(language="en"), None)
    assert message.wire() == {"question": "Ruby articles", "answerLanguage": "de", "pageSize": 5, "language": "en",
                              "toolCall": None, "previous": None}
    call = {"tool": "SearchArticles", "arguments": {"text": "Ruby"}}
    told = JobMessage.for_job(_row(tool_call=call, page_size=None), None).tool_call
    assert told is not None and told.wire() == call
    assert JobMessage.model_validate(message.wire()) == message


def test_a_message_from_before_the_models_still_parses() -> None:
    """In the queue over a deploy: the HTTP route's dict (no toolCall) and MCP's (no language)."""
    http = {"question": "q", "answerLanguage": None, "pageSize": 5, "language": "de", "previous": None}
    mcp = {"question": "q", "answerLanguage": "en", "pageSize": None,
           "toolCall": {"tool": "AskArticles", "arguments": {"question": "q"}}, "previous": None}
    assert JobMessage.model_validate(http).language == "de" and JobMessage.model_validate(http).tool_call is None
    told = JobMessage.model_validate(mcp)
    assert told.tool_call is not None and told.tool_call.wire() == mcp["toolCall"] and told.language is None
    assert JobMessage.model_validate({**http, "priority": 3}).page_size == 5  # a newer sender's field: ignored
    with pytest.raises(ValueError):
        JobMessage.model_validate({**http, "answerLanguage": "fr"})
    old_ask = {"question": "q", "language": ["de", "en"], "answerLanguage": "en", "scope": None,
               "scopeTruncated": False, "deadlineS": 3.0, "jobId": "job_x"}
    # Nothing of it is lost; the fields added since read the question itself (retrievalText) and
    # prefer no period (preferPeriod).
    assert AskRequest.model_validate(old_ask).wire() == {**old_ask, "retrievalText": None, "preferPeriod": None}
    assert AskRequest.model_validate(old_ask).with_deadline(1.5).deadline_s == 1.5
    old_outcome = {"status": "answered", "answer": "a [1]", "answerKind": "llm", "sources": [], "coverageLimited": False,
                   "usage": {"llmCalls": 1}, "answerLanguage": "en", "message": None}
    assert AskOutcome.model_validate(old_outcome).usage.llm_calls == 1


def test_http_and_mcp_submit_through_one_function() -> None:
    """Only api/submission.py makes a job's row in the API (POST /v1/questions and MCP call it)."""
    makers = []
    for path in sorted((ROOT / "api").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "create_job":
                makers.append(str(path.relative_to(ROOT)))
    assert makers == ["api/submission.py"]
    for caller in ("api/routes/questions.py", "api/mcp/server.py"):
        assert "from api.submission import" in (ROOT / caller).read_text(), caller
