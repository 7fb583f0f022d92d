"""Every route module, in the order they appear in the OpenAPI document."""

from fastapi import APIRouter

from api.routes import ops

ROUTERS: list[APIRouter] = [ops.router]

# Job API (issue 6): submit, poll/cancel/stream/pages, webhook deliveries.
from api.routes import jobs, questions, webhooks  # noqa: E402

ROUTERS += [questions.router, jobs.router, webhooks.router]

# Retrieval (issue 4): admin re-embedding runs.
from api.routes import reembed  # noqa: E402

ROUTERS += [reembed.router]
