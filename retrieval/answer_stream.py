"""Streamed answers: the answer's text as `answer_delta` job events, read by the job's SSE stream.

Events go to `job_events` like every progress event, so the existing stream carries them with
ids a reconnecting client sends back as `Last-Event-ID` (it gets what it missed, then the rest).

The contract a client relies on: the `text` of the `answer_delta` events since the last
`answer_reset` concatenate to exactly the final `answer` of the result. So leading and trailing
whitespace is not sent (the final answer is stripped), and an answer that starts over (the model
call is retried, it fails and the extractive answer replaces it, or the job runs the answer
again) is preceded by an `answer_reset`. Extractive answers stream their passages.

A job cancelled while its answer streams stops between two chunks: a chunk is written only while
no cancel was requested (`add_answer_event`), else `AnswerCancelled` ends the answer.
"""

from __future__ import annotations

import time

import asyncpg

from infra.db.job_events import add_answer_event, has_event

DELTA = "answer_delta"
RESET = "answer_reset"
FLUSH_CHARS = 48  # a delta event carries a few words, not one token: a row per token is wasteful
FLUSH_S = 0.1


class AnswerCancelled(Exception):
    """The job's cancel was requested: the answer stops between chunks (workers/cancel.py)."""


class AnswerStream:
    def __init__(self, pool: asyncpg.Pool, job_id: str) -> None:
        self.pool = pool
        self.job_id = job_id
        self.emitted = False  # deltas of the current answer were written
        self._started = False  # a non-space character was seen
        self._pending = ""
        self._held = ""  # trailing whitespace: sent only if more text follows
        self._last_flush = time.monotonic()
        self.events = 0

    async def start(self) -> None:
        """Begin an answer; a job that already streamed one (a re-run) gets a reset first."""
        async with self.pool.acquire() as conn:
            if await has_event(conn, self.job_id, DELTA):
                await self._write(conn, RESET, {"reason": "the answer starts again"})

    async def add(self, text: str) -> None:
        if not self._started:
            text = text.lstrip()
            if not text:
                return
            self._started = True
        combined = self._held + text
        core = combined.rstrip()
        self._held = combined[len(core):]
        self._pending += core
        if len(self._pending) >= FLUSH_CHARS or time.monotonic() - self._last_flush >= FLUSH_S:
            await self._flush()

    async def finish(self) -> None:
        await self._flush()

    async def reset(self, reason: str) -> None:
        """Discard what was streamed of this answer (the next text replaces it)."""
        had = self.emitted
        self.emitted, self._started, self._pending, self._held = False, False, "", ""
        if had:
            async with self.pool.acquire() as conn:
                await self._write(conn, RESET, {"reason": reason})

    async def passages(self, answer: str) -> None:
        """An extractive answer, a line (header, passage) per event."""
        lines = answer.split("\n")
        async with self.pool.acquire() as conn:
            for i, line in enumerate(lines):
                text = line + ("\n" if i < len(lines) - 1 else "")
                if text:
                    await self._write(conn, DELTA, {"text": text})
                    self.emitted = True

    async def _flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        text, self._pending = self._pending, ""
        async with self.pool.acquire() as conn:
            await self._write(conn, DELTA, {"text": text})
        self.emitted = True

    async def _write(self, conn: asyncpg.Connection, kind: str, data: dict[str, str]) -> None:
        if await add_answer_event(conn, self.job_id, kind, data) is None:
            raise AnswerCancelled(self.job_id)  # stops the model's stream: its HTTP response is closed
        self.events += 1
