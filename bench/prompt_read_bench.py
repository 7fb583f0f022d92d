"""Prompt reading by llama-server build: the portable (AVX2) build against the AVX-512 one, side by side.

Reading the prompt is most of the time to an answer's first word on 2 cores (docs/local-llm.md), so
this measures it alone: each round starts one build (as `turnout eval --local-llm` does), sends the
same answer-sized prompts (corpus passages of ~600 tokens, each prompt different so none is read
from llama-server's cache, one token out), stops it, then does the same with the other build; the
rounds alternate which build goes first. Reported: prompt tokens a second (llama-server's own
timing) per build, p50, and the ratio AVX-512 / portable.

Both builds must be in the cache: `TURNOUT_LOCAL_LLM_CPU=portable turnout llm build` and, on a CPU
with AVX-512, `turnout llm build`. Otherwise one "skipped" row says which is missing.

Run: ``.venv/bin/python -m bench.prompt_read_bench [--rounds 2] [--prompts 4]``.
Writes bench/results/prompt_read.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.report import timing_row
from infra.corpus import ArticleRecord, read_corpus
from infra.local_llm.build import server_ready
from infra.local_llm.config import LocalLLMConfig
from infra.local_llm.weights import weights_ready
from infra.settings import get_settings
from infra.text import to_plain_text

RESULTS = Path(__file__).parent / "results"
PROMPT_CHARS = 1_800  # ~600 tokens: the compact answer prompt's size


def _write(rows: list[dict[str, Any]]) -> None:
    RESULTS.mkdir(exist_ok=True)
    out = {"name": "prompt_read", "date": datetime.now(UTC).isoformat(), "rows": rows}
    (RESULTS / "prompt_read.json").write_text(json.dumps(out, indent=2, ensure_ascii=False))


def _passages() -> list[str]:
    """Corpus articles long enough for one prompt, as plain text (read once for every round)."""
    from tests.support import services

    records = [r for r in read_corpus(services.SHARED_CORPUS) if isinstance(r, ArticleRecord)]
    texts = (to_plain_text(r.body_html_or_md, r.body_format) for r in records)
    return [t[:PROMPT_CHARS] for t in texts if len(t) >= PROMPT_CHARS]


def _prompts(passages: list[str], count: int, offset: int) -> list[str]:
    return [f"Passage:\n{passages[(offset + i) * 7 % len(passages)]}\n\nWhat is this passage about?"
            for i in range(count)]


def _read_rates(config: LocalLLMConfig, prompts: list[str]) -> list[float]:
    from turnout.embedded.local_llm import start_for_eval

    settings, stop = start_for_eval(get_settings(), config)
    try:
        rates = []
        for prompt in prompts:
            response = httpx.post(f"{settings.llm_base_url}/chat/completions", timeout=300, json={
                "model": settings.llm_router_model, "messages": [{"role": "user", "content": prompt}],
                "max_tokens": 1, "temperature": 0})
            response.raise_for_status()
            rates.append(float(response.json()["timings"]["prompt_per_second"]))
        return rates
    finally:
        stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=4, help="prompts per build and round")
    args = parser.parse_args()
    builds = {"portable": LocalLLMConfig(cpu="portable"), "avx512": LocalLLMConfig(cpu="auto")}
    missing = [f"{name} ({config.venv})" for name, config in builds.items() if not server_ready(config)]
    if not builds["avx512"].variant.name:
        missing.append("avx512 (this CPU has no AVX-512)")
    if missing or not weights_ready(builds["portable"]):
        why = f"not built here: {', '.join(missing)}" if missing else "no weights (run `turnout llm build`)"
        print(f"prompt_read_bench: skipped -- {why}")
        _write([{"metric": "prompt read p50, AVX-512 build", "value": f"skipped: {why}", "unit": "tokens/s"}])
        return 0
    passages = _passages()
    rates: dict[str, list[float]] = {name: [] for name in builds}
    for round_no in range(args.rounds):
        order = list(builds) if round_no % 2 == 0 else list(reversed(builds))
        prompts = _prompts(passages, args.prompts, round_no * args.prompts)
        for name in order:
            rates[name] += _read_rates(builds[name], prompts)
    p50 = {name: statistics.median(values) for name, values in rates.items()}
    rows = [timing_row(f"prompt read p50, {builds['avx512'].variant.name} build (baseline: portable AVX2 build)",
                       p50["avx512"], p50["portable"], unit="tokens/s")]
    rows[0]["samples"] = {name: [round(v, 1) for v in values] for name, values in rates.items()}
    _write(rows)
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
