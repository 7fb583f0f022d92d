"""The HTTP hop of the job baseline: a bare FastAPI app whose one route does a raw Celery round trip.

`POST /relay` sends `bench.relay_llm` (bench/celery_baseline.py: the router queue, the same
LLM call, the real search task) and answers with its result. Served by uvicorn with the flags
the benchmark's API runs with, so the client reaches the Celery round trip through the same
hops a job takes (client -> HTTP server -> router queue -> LLM -> search queue -> back), with
none of the job machinery: no auth, no rate limit, no job row, no audit, no cache.

Run by bench/api_bench.py: `uvicorn bench.relay_api:create_app --factory`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Body, FastAPI

from bench.celery_baseline import RELAY_LLM_TASK, send_relay


def create_app() -> FastAPI:
    app = FastAPI(title="Turnout benchmark relay")

    @app.post("/relay")
    async def relay(search: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        # Sent and awaited in a helper thread, as the job API sends its run_job message.
        return await asyncio.to_thread(send_relay, RELAY_LLM_TASK, search)

    return app
