"""Maintenance queue: liveness ping (used by health checks and tests)."""

from __future__ import annotations

import os
import socket

from infra.status import Queue
from workers.base import turnout_task


@turnout_task(Queue.MAINTENANCE, "ping", time_limit_s=10, ignore_result=False)
def ping() -> dict[str, object]:
    return {"pong": True, "host": socket.gethostname(), "pid": os.getpid()}
