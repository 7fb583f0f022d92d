"""workers.dispatch.answers_ping, the readiness ping of `turnout up` and of the tests' workers,
leaves no pending result behind. Left pending, the garbage collector's `AsyncResult.__del__`
unsubscribes over the network from whatever thread it runs in: with that stack's Redis gone it
blocked ~19 s (Celery's reconnect retries), with it frozen for minutes. That is what could stop the
frozen-Redis drill's in-process API (an intermittent 30 s hang in CI): its event loop's thread
collecting a drill worker's readiness ping."""

from __future__ import annotations

import gc
import time

from infra.settings import Settings
from tests.api.support import RedisServer, stack_settings
from workers.app import create_celery
from workers.dispatch import answers_ping


def test_an_unanswered_ping_leaves_nothing_to_unsubscribe_once_its_redis_is_gone(settings: Settings) -> None:
    server = RedisServer().start()
    gc.disable()  # the ping's garbage is collected below, once its Redis is gone, as in the drill
    try:
        try:
            app = create_celery(stack_settings(settings, redis_url=server.url))
            assert not answers_ping(app, timeout=0.3)  # no worker consumes this Redis
            app.close()
            del app
        finally:
            server.kill()
        started = time.monotonic()
        gc.collect()
        took = time.monotonic() - started
    finally:
        gc.enable()
    assert took < 3.0, f"collecting the ping's garbage took {took:.1f}s"
