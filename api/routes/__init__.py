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

# Conversations and feedback (issue 28).
from api.routes import conversations, feedback  # noqa: E402

ROUTERS += [conversations.router, feedback.router]

# Job management (issue 27): the admin job view and bulk retry runs (list and retry are in jobs.py).
from api.routes import admin_jobs  # noqa: E402

ROUTERS += [admin_jobs.router]

# Budgets in money (issue 27): the spend report.
from api.routes import usage  # noqa: E402

ROUTERS += [usage.router]
