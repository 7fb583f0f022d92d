"""A real `turnout up` for the drills of tests/proof (`test_fault_supervisor.py`,
`test_fault_postmaster.py`): started with the scripted LLM, its banner read, every process of its
tree remembered, stopped with Ctrl-C afterwards (what is left killed), its logs kept."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from tests.support import services
from tests.support.llm_server import ScriptedLLM


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Up:
    proc: subprocess.Popen[str]
    data_dir: Path
    base: str
    stderr_path: Path
    key: str = ""
    dsn: str = ""
    lines: list[str] = field(default_factory=list)
    seen: dict[int, psutil.Process] = field(default_factory=dict)  # every process of the tree ever seen

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def tree(self) -> list[psutil.Process]:
        me = psutil.Process(self.proc.pid)
        found = [me, *me.children(recursive=True)]
        for p in found:
            self.seen.setdefault(p.pid, p)
        return found

    def child_pid(self, name: str) -> int:
        """The pid of a direct child of `turnout up` (or the postmaster) by service name."""
        if name == "postgres":
            return int((self.data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
        marks = {"api": " api ", "worker-router": "router@", "worker-front": "front@",
                 "worker-vector": "vector@", "redis": "redis-server"}
        for p in self.tree():
            try:
                if p.ppid() == self.proc.pid and marks[name] in " ".join(p.cmdline()) + " ":
                    return p.pid
            except psutil.NoSuchProcess:
                continue
        raise AssertionError(f"no {name} child of turnout up; stderr:\n{self.stderr[-3000:]}")

    def restarted(self, name: str, count: int) -> float | None:
        """Seconds the child was down, from the supervisor's `count`-th restart line, or None."""
        found = re.findall(rf"supervisor: {re.escape(name)} restarted \(restart #(\d+); it was down ([\d.]+)s\)",
                           self.stderr)
        for n, down in found:
            if int(n) == count:
                return float(down)
        return None

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {self.key}"}, timeout=10)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TURNOUT_")}


@contextmanager
def running_up(llm_server: ScriptedLLM, stderr_dir: Path, env: dict[str, str], *, index: bool) -> Iterator[Up]:
    """`turnout up` with `env` over the scripted LLM (routing, answers, embeddings); with `index`,
    ready once the first indexing run has finished."""
    data_dir = services.ARTIFACTS / f"up-drill-{secrets.token_hex(3)}"  # short: the PostgreSQL socket path
    port = free_port()
    env = {
        **clean_env(),
        "TURNOUT_LLM_BASE_URL": llm_server.base_url,
        "TURNOUT_EMBEDDING_PROVIDER": "openai",
        "TURNOUT_EMBEDDING_BASE_URL": llm_server.base_url,
        "TURNOUT_EMBEDDING_MODEL": "scripted-embedding",
        **env,
    }
    stderr_path = stderr_dir / "up.stderr"
    err = stderr_path.open("a", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnout", "up", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=services.REPO_ROOT,
    )
    err.close()
    stack = Up(proc, data_dir, f"http://127.0.0.1:{port}", stderr_path)
    threading.Thread(target=stack._read, daemon=True).start()
    try:
        deadline = time.monotonic() + 180
        while not any(line.startswith("Press Ctrl-C") for line in stack.lines):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"turnout up not ready (exit {proc.poll()}):\n" + "\n".join(stack.lines)
                                     + f"\nstderr:\n{stack.stderr[-4000:]}")
            time.sleep(0.25)
        banner = "\n".join(stack.lines)
        stack.key = re.search(r"local key\s+(\S+)", banner).group(1)  # type: ignore[union-attr]
        stack.dsn = re.search(r"psql '([^']+)'", banner).group(1)  # type: ignore[union-attr]
        assert "?host=" in stack.dsn and str(data_dir) in stack.dsn  # the embedded unix socket
        if index:
            wait_for_index(stack)
        stack.tree()
        yield stack
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                for p in stack.seen.values():
                    try:
                        p.kill()
                    except psutil.NoSuchProcess:
                        pass
        kept = services.ARTIFACTS / f"{data_dir.name}-logs"  # the children's logs outlive the data directory
        shutil.copytree(data_dir / "logs", kept, dirs_exist_ok=True)
        shutil.copy(stderr_path, kept / "up.stderr")
        print(f"turnout up logs kept in {kept}")
        shutil.rmtree(data_dir, ignore_errors=True)


def wait_for_index(stack: Up, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    with stack.client() as c:
        while time.monotonic() < deadline:
            response = c.get("/v1/ops/queues")
            if response.status_code == 200:
                run = response.json().get("reembed")
                if run is not None and run["status"] not in ("queued", "running"):
                    assert run["status"] == "completed" or run["failed"] == 0, run
                    return
            time.sleep(1)
    raise AssertionError("the first indexing run did not finish")


