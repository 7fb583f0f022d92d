"""A whole Turnout stack of its own for a test or a benchmark: throwaway database, Redis prefix,
scripted LLM, router/front/vector worker processes and the API over HTTP."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from infra.settings import Settings
from tests.api.support import ApiServer, issue_key, stack_settings, start_worker, throwaway_database
from tests.support import services
from tests.support.llm_server import ScriptedLLM


@dataclass
class Stack:
    settings: Settings
    api: ApiServer
    llm: ScriptedLLM
    workers: list[services.WorkerProcess] = field(default_factory=list)

    def client(self, name: str) -> httpx.Client:
        return self.api.client(issue_key(self.settings, name).token)


@contextmanager
def open_stack(base: Settings, name: str, *, vector: bool, router_threads: int = 8,
               overrides: Mapping[str, int | float | str] | None = None) -> Iterator[Stack]:
    """A stack of its own: database, Redis prefix, scripted LLM, worker processes and the API.
    LLM and submission rate limits are lifted (these tests measure other limits). `overrides`:
    plain settings (e.g. `jobs_per_key_in_flight`) for the API and, as TURNOUT_ variables, the workers."""
    llm = ScriptedLLM().start()
    data_dir = tempfile.mkdtemp(prefix=f"turnout-{name}-")  # the vector worker's own Qdrant Edge
    env = {"TURNOUT_LLM_BASE_URL": llm.base_url, "TURNOUT_DATA_DIR": data_dir,
           "TURNOUT_LIMIT_LLM_REQUESTS_PER_MINUTE": "1000000", "TURNOUT_LIMIT_LLM_TOKENS_PER_MINUTE": "1000000000",
           "TURNOUT_LIMIT_SUBMISSIONS_PER_MINUTE": "1000000",
           **{f"TURNOUT_{setting.upper()}": str(value) for setting, value in (overrides or {}).items()}}
    workers: list[services.WorkerProcess] = []
    api: ApiServer | None = None
    try:
        with throwaway_database(name) as dsn:
            settings = stack_settings(
                base, database_url=dsn, redis_prefix=f"{base.redis_prefix}{name}:", llm_base_url=llm.base_url,
                data_dir=Path(data_dir), limits__submissions_per_minute=1_000_000,
                limits__llm_requests_per_minute=1_000_000, limits__llm_tokens_per_minute=1_000_000_000,
                **(overrides or {}),
            )
            try:
                # The front worker first: it answers the readiness ping the others wait for.
                workers.append(start_worker(settings, "search,webhooks,maintenance", beat=False, env=env))
                workers.append(start_worker(settings, "router", beat=False, env=env, concurrency=router_threads))
                if vector:
                    workers.append(start_worker(settings, "rag,embeddings", beat=False, env=env))
                api = ApiServer(settings).start()
                yield Stack(settings, api, llm, workers)
            finally:
                if api is not None:
                    api.stop()
                for worker in workers:
                    worker.stop()
    finally:
        llm.stop()
        services.delete_redis_prefix(f"{base.redis_prefix}{name}:")
        shutil.rmtree(data_dir, ignore_errors=True)
