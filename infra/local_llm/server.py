"""One `llama-server`: its command line, its readiness probe, and the state file that tells
`turnout status`, /v1/ops/health and the dashboard which router is live."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

import httpx

from infra.local_llm.config import CALL_TIMEOUT_S, MODEL_ALIAS, STATE_FILE, LocalLLMConfig

Phase = Literal["building", "downloading", "starting", "ready", "failed", "stopped"]


def server_argv(binary: list[str], config: LocalLLMConfig, model: Path, port: int) -> list[str]:
    """Loopback only; ``config.slots`` slots of ``config.context`` tokens each (`-c` is their total), so
    the router's and the answer's system messages each stay cached in a slot between questions."""
    return [
        *binary, "-m", str(model), "--alias", MODEL_ALIAS, "--host", config.host, "--port", str(port),
        "-c", str(config.context * config.slots), "-np", str(config.slots),
        "-t", str(config.threads), "-tb", str(config.threads),
        "--no-webui",
    ]


def stack_env(config: LocalLLMConfig, port: int) -> dict[str, str]:
    """What every process of the stack reads to route and answer through the local server."""
    return {
        "TURNOUT_LLM_BASE_URL": config.base_url(port),
        "TURNOUT_LLM_READY_URL": config.health_url(port),
        "TURNOUT_LLM_ROUTER_MODEL": MODEL_ALIAS,
        "TURNOUT_LLM_ANSWER_MODEL": MODEL_ALIAS,
        "TURNOUT_LLM_MODE": "json_schema",  # the model writes no native tool calls (measured)
        "TURNOUT_LIMIT_LLM_CALL_TIMEOUT_S": f"{CALL_TIMEOUT_S:g}",
    }


def is_ready(health_url: str, timeout_s: float = 1.0) -> bool:
    """llama-server answers /health with 503 while it loads the model, 200 once it serves."""
    try:
        return httpx.get(health_url, timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


# ---- the state file ----
def write_state(data_dir: Path, phase: Phase, detail: str, **extra: Any) -> None:
    path = data_dir / STATE_FILE
    doc = {"phase": phase, "detail": detail, "updatedAt": time.time(), **extra}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    tmp.replace(path)


def read_state(data_dir: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((data_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def describe(data_dir: Path, *, up: bool) -> str | None:
    """One line on the local model and the live router, or None when no local profile runs here."""
    state = read_state(data_dir)
    if state is None:
        return None
    if up:
        return f"local llama-server ({MODEL_ALIAS}): router = LLM (json_schema)"
    return (f"local llama-server {state.get('phase', '?')}: {state.get('detail', '')}; "
            "router = deterministic fallback until it is ready")
