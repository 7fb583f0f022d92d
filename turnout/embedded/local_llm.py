"""`turnout up --local-llm`: llama-server as a supervised child of the stack.

The stack starts at once in degraded mode (the router's readiness probe sends questions to the
deterministic router while llama-server is not answering); a background thread builds the
server and fetches the weights if this machine has not yet (progress on the terminal), then
the server starts on loopback, is warmed with the router's system prompt (its prompt cache),
and the router switches to it by itself. A server that dies is restarted a few times; Ctrl-C
stops it with the rest of the stack.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from infra.local_llm.build import ensure_server
from infra.local_llm.config import MODEL_ALIAS, LocalLLMConfig, LocalLLMError
from infra.local_llm.server import Phase, is_ready, server_argv, stack_env, write_state
from infra.local_llm.weights import ensure_weights
from infra.settings import Settings
from turnout.embedded.processes import Child, free_port, port_is_free, wait_until

_READY_TIMEOUT_S = 300.0  # loading 1.1 GB from a cold disk on a busy machine
_MAX_RESTARTS = 3
_REPORT_EVERY_S = 15.0


class LocalLLM:
    def __init__(self, config: LocalLLMConfig, *, data_dir: Path, logs: Path, step: Callable[[str], None],
                 warm_up: Callable[[str], object] | None = None) -> None:
        self.config = config
        self.data_dir = data_dir
        self.logs = logs
        self.step = step
        self.warm_up = warm_up  # called with the base URL once the server answers
        self.port = 0
        self.child: Child | None = None
        self.phase: Phase = "starting"
        self.detail = ""
        self.restarts = 0
        self._argv: list[str] | None = None
        self._launch_pending = False  # built and fetched: the main thread starts the server
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._last_report = 0.0
        self._started = time.monotonic()

    # ---- set-up ----
    def prepare(self) -> dict[str, str]:
        """Choose the port; the environment every process of the stack gets."""
        self.port = self.config.port or free_port(self.config.host)
        if self.config.port and not port_is_free(self.config.host, self.port):
            raise LocalLLMError(f"port {self.port} for llama-server is in use; set TURNOUT_LOCAL_LLM_PORT to "
                                "another one (or 0 for any free port)")
        self._set("starting", "preparing")
        return stack_env(self.config, self.port)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._bring_up, name="local-llm", daemon=True)
        self._thread.start()

    @property
    def ready(self) -> bool:
        return self.phase == "ready"

    def _set(self, phase: Phase, detail: str) -> None:
        with self._lock:
            self.phase, self.detail = phase, detail
        write_state(self.data_dir, phase, detail, model=MODEL_ALIAS, baseUrl=self.config.base_url(self.port))

    def _progress(self, phase: Phase) -> Callable[[str, int, int], None]:
        def report(what: str, done: int, total: int) -> None:
            detail = f"{what} {done}/{total}" if total else what
            self._set(phase, detail)
            now = time.monotonic()
            if now - self._last_report >= _REPORT_EVERY_S or done == total or not total:
                self._last_report = now
                self.step(f"local LLM: {detail}")

        return report

    def _bring_up(self) -> None:
        """Background thread: build and fetch what is missing; the launch itself is `poll`'s."""
        try:
            binary = ensure_server(self.config, self._progress("building"), self._cancel)
            model = ensure_weights(self.config, self._progress("downloading"))
            self._argv = server_argv(binary, self.config, model, self.port)
            self._set("starting", "llama-server is about to start")
            self._launch_pending = True
        except LocalLLMError as exc:
            if not self._cancel.is_set():
                self._set("failed", str(exc).splitlines()[0])
                self.step(f"local LLM failed, the stack stays in degraded mode: {exc}")
        except Exception as exc:  # the stack must keep running degraded whatever broke here
            self._set("failed", f"{type(exc).__name__}: {exc}")
            self.step(f"local LLM failed, the stack stays in degraded mode: {type(exc).__name__}: {exc}")

    def _await_ready(self, child: Child) -> None:
        """Background thread: wait for /health, warm the prompt cache, then report ready."""
        health = self.config.health_url(self.port)

        def answering() -> bool:
            return self._cancel.is_set() or child.exit_code() is not None or is_ready(health)

        wait_until(answering, timeout_s=_READY_TIMEOUT_S, interval_s=0.5)
        if self._cancel.is_set():
            return
        if child.exit_code() is not None or not is_ready(health):
            self._set("failed", f"llama-server did not become ready (exit {child.exit_code()})")
            self.step(f"local LLM failed, the stack stays in degraded mode: llama-server did not become ready "
                      f"(exit {child.exit_code()}); last lines of {child.log_path}:\n{child.log_tail(10)}")
            return
        if self.warm_up is not None:
            self._set("starting", "reading the router's system prompt into the prompt cache")
            try:
                self.warm_up(self.config.base_url(self.port))
            except Exception as exc:  # a cold cache only costs the first question time
                self.step(f"local LLM: warm-up failed ({type(exc).__name__}: {exc}); continuing")
        self._set("ready", f"serving {MODEL_ALIAS} at {self.config.base_url(self.port)}")
        self.step(f"local LLM ready after {time.monotonic() - self._started:.0f}s: routing and answers "
                  f"now go to {self.config.base_url(self.port)}")

    def _launch(self) -> None:
        # Spawned from the stack's main thread: a child's PR_SET_PDEATHSIG fires when the *thread*
        # that forked it exits, so a helper thread must never start it.
        assert self._argv is not None
        self._set("starting", f"starting llama-server on {self.config.host}:{self.port}")
        self.child = Child("llama-server", self._argv, log_path=self.logs / "llama-server.log",
                           env=dict(os.environ)).start()
        self._thread = threading.Thread(target=self._await_ready, args=(self.child,), name="local-llm",
                                        daemon=True)
        self._thread.start()

    # ---- supervision (the stack's main thread calls this about once a second) ----
    def poll(self) -> None:
        if self._cancel.is_set():
            return
        if self._launch_pending:
            self._launch_pending = False
            self._launch()
            return
        child = self.child
        if child is None or self.phase != "ready":
            return
        code = child.exit_code()
        if code is None:
            return
        if self.restarts >= _MAX_RESTARTS:
            self._set("failed", f"llama-server exited (code {code}) {self.restarts + 1} times")
            self.step(f"llama-server exited (code {code}) again; the stack stays in degraded mode "
                      f"(log: {child.log_path})")
            return
        self.restarts += 1
        self.step(f"llama-server exited (code {code}); restarting it ({self.restarts}/{_MAX_RESTARTS})")
        self._launch()

    def banner_line(self) -> str:
        with self._lock:
            phase, detail = self.phase, self.detail
        if phase == "ready":
            return f"LOCAL llama-server {self.config.base_url(self.port)} ({MODEL_ALIAS}, json_schema): router = LLM"
        return (f"LOCAL llama-server {phase} ({detail}) -> router = deterministic fallback until it is ready; "
                "it switches by itself")

    def stop(self) -> None:
        self._cancel.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self.child is not None:
            self.step("stopping llama-server")
            self.child.stop(timeout_s=10)
        self._set("stopped", "the stack stopped")



def start_for_eval(settings: Settings, config: LocalLLMConfig | None = None) -> tuple[Settings, Callable[[], None]]:
    """llama-server for the length of `turnout eval --local-llm`: built and fetched if needed,
    started from this thread. Returns the settings pointing at it and how to stop it."""
    config = config or LocalLLMConfig()

    def report(what: str, done: int, total: int) -> None:
        print(f"· local LLM: {what} {done}/{total}" if total else f"· local LLM: {what}", file=sys.stderr, flush=True)

    binary = ensure_server(config, report)
    model = ensure_weights(config, report)
    port = config.port or free_port(config.host)
    logs = settings.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    child = Child("llama-server", server_argv(binary, config, model, port), log_path=logs / "llama-server.log",
                  env=dict(os.environ)).start()
    health = config.health_url(port)
    wait_until(lambda: child.exit_code() is not None or is_ready(health), timeout_s=_READY_TIMEOUT_S)
    if not is_ready(health):
        child.stop(timeout_s=10)
        raise LocalLLMError(f"llama-server did not become ready (exit {child.exit_code()}); last lines of "
                            f"{child.log_path}:\n{child.log_tail(10)}")
    env = stack_env(config, port)
    limits = settings.limits.model_copy(update={"llm_call_timeout_s": float(env["TURNOUT_LIMIT_LLM_CALL_TIMEOUT_S"])})
    local = settings.model_copy(update={
        "llm_base_url": env["TURNOUT_LLM_BASE_URL"], "llm_router_model": env["TURNOUT_LLM_ROUTER_MODEL"],
        "limits": limits,
    })
    return local, lambda: child.stop(timeout_s=10)
