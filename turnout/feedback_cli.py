"""`turnout eval export-feedback`: rated jobs as eval cases for a person to label (issue 28).

One JSON object a line: the question (and the previous turn of a follow-up), the decision that
was made (tool, normalized arguments, routedBy), the rating and its comment, and an empty
`expected` to be filled in -- then the line can join a labelled set (router/eval.py's format).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from infra.conversation import PreviousTurn
from infra.db import feedback as feedback_db
from infra.db import jobs as jobs_db
from infra.db.pool import create_pool
from infra.settings import ConfigError, get_settings

EXPORT_LIMIT = 1_000


def feedback_case(job: jobs_db.JobRow, previous: jobs_db.JobRow | None) -> dict[str, Any]:
    """One rated job as an unlabelled eval case."""
    decision = PreviousTurn.from_job(job)
    routed_by = job.result.routed_by if job.result is not None else None
    case: dict[str, Any] = {
        "id": f"fb-{job.id}", "jobId": job.id, "question": job.question, "today": job.created_at.date().isoformat(),
        "answerLanguage": job.answer_language, "language": job.language, "tags": ["feedback", job.feedback_rating],
        "previous": None,
        "decision": {"tool": decision.tool, "arguments": decision.arguments, "routedBy": routed_by,
                     "status": job.status.value},
        "rating": job.feedback_rating, "comment": job.feedback_comment,
        "ratedAt": job.feedback_at.isoformat() if job.feedback_at else None,
        "expected": None,  # for a person to label: {"tool", "arguments"}
    }
    if previous is not None:
        turn = PreviousTurn.from_job(previous)
        case["previous"] = {"question": turn.question, "tool": turn.tool, "arguments": turn.arguments}
    return case


async def _export(database_url: str, limit: int) -> list[dict[str, Any]]:
    pool = await create_pool(database_url, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            rated = await feedback_db.rated_jobs(conn, limit=limit)
            cases = []
            for job in rated:
                previous = await jobs_db.get_job(conn, job.previous_job_id) if job.previous_job_id else None
                cases.append(feedback_case(job, previous))
            return cases
    finally:
        await pool.close()


def export_feedback(
    out: Annotated[Path | None, typer.Option(help="write the JSONL here (default: standard output)")] = None,
    limit: Annotated[int, typer.Option(min=1, help="at most this many rated jobs, the latest first")] = EXPORT_LIMIT,
) -> None:
    """Write the rated jobs as eval cases (question, the decision made, the rating) for a person to label."""
    settings = get_settings()
    if not settings.database_url:
        raise ConfigError("TURNOUT_DATABASE_URL is not set: the ratings are in the jobs table")
    cases = asyncio.run(_export(settings.database_url, limit))
    lines = "".join(json.dumps(case, ensure_ascii=False, default=str) + "\n" for case in cases)
    if out is None:
        sys.stdout.write(lines)
    else:
        out.write_text(lines, encoding="utf-8")
        typer.echo(f"{len(cases)} rated job(s) written to {out}", err=True)
