"""Routing latency with the local model: code-filled filters against the model filling them.

Needs the local model built (`turnout llm build`, once per machine); without it the benchmark
writes one "skipped" row and says so, and `./bench/run` goes on. With it: llama-server is started
(as `turnout eval --local-llm` does), its prompt cache warmed for each prompt, and the same
questions -- the first N of the eval set's held-out test half -- are decided in json_schema mode
twice, side by side in one run: the model writes the tool and topic and code fills the filters
(the default, `TURNOUT_LLM_FILTERS=code`), and the model fills every argument (`model`, the
baseline). Nothing is executed. The target (issue 15): routing p50 <= 3 s a question on an idle
2-core machine.

Run: ``.venv/bin/python -m bench.routing_bench [--questions N]``. Writes bench/results/routing.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.local_llm.build import server_ready
from infra.local_llm.config import LocalLLMConfig
from infra.local_llm.weights import weights_ready
from infra.settings import LLMFilters, LLMMode, get_settings
from router.warmup import warm_up

RESULTS = Path(__file__).parent / "results"
TARGET_P50_S = 3.0


def _write(rows: list[dict[str, Any]], **extra: Any) -> None:
    RESULTS.mkdir(exist_ok=True)
    out = {"name": "routing", "date": datetime.now(UTC).isoformat(), "rows": rows, **extra}
    (RESULTS / "routing.json").write_text(json.dumps(out, indent=2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=30, help="the first N questions of the test half")
    args = parser.parse_args()
    config = LocalLLMConfig()
    if not (server_ready(config) and weights_ready(config)):
        print("routing_bench: skipped -- no local model built here (run `turnout llm build` once, ~15 min)")
        _write([{"metric": "routing p50, local 1.5B (code filters)", "value": "skipped: no local model built",
                 "target": f"<= {TARGET_P50_S:.0f} s"}])
        return 0

    from turnout.embedded.local_llm import start_for_eval
    from turnout.eval_cli import evaluate

    settings, stop = start_for_eval(get_settings())
    try:
        reports = {}
        for filters in (LLMFilters.CODE, LLMFilters.MODEL):
            run_settings = settings.model_copy(update={"llm_filters": filters, "llm_mode": LLMMode.JSON_SCHEMA})
            warm_up(run_settings.llm_base_url or "", run_settings.llm_router_model, filters=filters)
            reports[filters] = asyncio.run(evaluate(None, run_settings, fallback=False, mode=LLMMode.JSON_SCHEMA,
                                                    limit=args.questions, split="test"))
    finally:
        stop()
    code, model = (reports[f].summary for f in (LLMFilters.CODE, LLMFilters.MODEL))

    def seconds(summary: dict[str, Any], key: str) -> float:
        return float(summary["latencyMs"][key]) / 1000

    rows = [
        {"metric": "routing p50, code filters vs model filters", "value": seconds(code, "p50"),
         "baseline": seconds(model, "p50"), "ratio": round(seconds(code, "p50") / seconds(model, "p50"), 2),
         "target": f"<= {TARGET_P50_S:.0f} s", "unit": "s"},
        {"metric": "routing p95, code filters vs model filters", "value": seconds(code, "p95"),
         "baseline": seconds(model, "p95"), "ratio": round(seconds(code, "p95") / seconds(model, "p95"), 2),
         "unit": "s"},
        {"metric": "output tokens a question, code vs model filters",
         "value": code["perQuestion"]["outputTokens"], "baseline": model["perQuestion"]["outputTokens"],
         "ratio": round(code["perQuestion"]["outputTokens"] / max(model["perQuestion"]["outputTokens"], 1e-9), 2)},
    ]
    _write(rows, questions=args.questions)
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
