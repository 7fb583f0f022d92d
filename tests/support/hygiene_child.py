"""Run only by tests/proof/test_process_hygiene.py, in a child pytest that it then SIGTERMs (the
name does not match test_*.py, so the suite never collects it): starts what tests start - a
private redis-server and a Celery worker in its own session with its beat child - says so in
the file named by HYGIENE_READY, and waits to be killed."""

from __future__ import annotations

import json
import os
import time

import psutil

from tests.api.support import RedisServer
from tests.conftest import TEST_DATABASE, TEST_PREFIX
from tests.support import services


def test_starts_processes_and_waits_to_be_killed() -> None:
    redis = RedisServer().start()
    worker = services.WorkerProcess(queues="maintenance", concurrency=1, beat=True).start(wait_ready=True)
    assert worker.proc is not None and redis.proc is not None
    deadline = time.monotonic() + 60
    while not psutil.Process(worker.proc.pid).children() and time.monotonic() < deadline:
        time.sleep(0.2)  # the embedded beat process
    started = [redis.proc.pid, worker.proc.pid, *(c.pid for c in psutil.Process(worker.proc.pid).children())]
    ready = os.environ["HYGIENE_READY"]
    with open(ready + ".tmp", "w") as out:
        json.dump({"pids": started, "database": TEST_DATABASE, "prefix": TEST_PREFIX}, out)
    os.replace(ready + ".tmp", ready)
    time.sleep(600)  # SIGTERM arrives here: no finalizer of this test or its fixtures runs
