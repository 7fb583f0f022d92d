"""What a worker thread's tasks are wired with, built once per thread (`Runtime.extras`): the
router's dependencies (its tools run on the queues) and the RAG context (the vector store)."""

from __future__ import annotations

from retrieval.rag import RagContext
from router.service import RouterDeps
from workers._runtime import Runtime
from workers.executor import QueueExecutor
from workers.lost_tasks import LostTaskWatch
from workers.spend import KeySpendLedger


async def router_deps(rt: Runtime) -> RouterDeps:
    """Fails at the first job on configuration errors (tool names, URLs)."""
    deps: RouterDeps | None = rt.extras.get("jobs.router_deps")
    if deps is None:
        watch = LostTaskWatch(rt.settings)
        pool = await rt.pool()
        deps = RouterDeps.for_settings(
            rt.settings, pool=pool, redis=await rt.redis(), executor=QueueExecutor(watch=watch),
            spend=KeySpendLedger(pool, rt.settings),
        )
        rt.extras["jobs.router_deps"] = deps
        rt.close_with(watch.close)
    return deps


async def rag_context(rt: Runtime) -> RagContext:
    ctx: RagContext | None = rt.extras.get("rag_context")
    if ctx is None:
        pool = await rt.pool()
        ctx = RagContext.for_settings(rt.settings, pool, spend=KeySpendLedger(pool, rt.settings))
        rt.extras["rag_context"] = ctx
    return ctx
