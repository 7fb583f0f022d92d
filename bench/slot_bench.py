"""The answer's first token after its question's routing call: llama-server with one slot against two,
side by side.

A job on the local profile routes its question (the router's ~1,900-token prompt, its system message
the same every time) and then answers it (the compact answer prompt, its ~190-token system message
the same every time) on the same llama-server. With one slot the routing call takes the slot between
two answers, and llama-server's host-memory cache restores a cached prompt only when at least a
quarter of it is shared: a filled answer prompt plus its answer shares less, so every answer read its
system message again. With two slots each prompt keeps one.

Each round starts llama-server with one slot and with two (as `turnout eval --local-llm` does; the
order alternates between rounds), warms the router's prompt as `turnout up` does, then for each of
the first N questions of the retrieval eval's dev half makes the production routing call (the
router's turns, its reply room) and streams the production answer (`bench.answer_bench`'s material,
`call_answer_model`). Measured: the answer's time to its first token and to its last. The first
question of a round reads the answer's system message in both (nothing cached yet): the p50 is over
the later ones, as a running stack meets them.

Run: ``.venv/bin/python -m bench.slot_bench [--questions 4] [--rounds 2]``. Writes bench/results/slot.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.answer_bench import TARGET_FIRST_S, bench_cases, compact_messages, material_for, p50, timed_answer
from bench.report import timing_row
from infra.local_llm.build import server_ready
from infra.local_llm.config import LocalLLMConfig
from infra.local_llm.weights import weights_ready
from infra.settings import LLMMode, Settings, get_settings

RESULTS = Path(__file__).parent / "results"
SLOTS = (1, 2)


def _write(rows: list[dict[str, Any]], **extra: Any) -> None:
    RESULTS.mkdir(exist_ok=True)
    out = {"name": "slot", "date": datetime.now(UTC).isoformat(), "rows": rows, **extra}
    (RESULTS / "slot.json").write_text(json.dumps(out, indent=2, ensure_ascii=False))


async def _route(settings: Settings, question: str) -> float:
    """The production routing call for ``question`` (json_schema, code-filled filters); its seconds."""
    from router.llm_round import routing_reply_tokens
    from router.warmup import routing_call

    started = time.monotonic()
    await routing_call(settings, question, max_output_tokens=routing_reply_tokens(question), timeout_s=300)
    return time.monotonic() - started


def _one_server(settings: Settings, slots: int, questions: int) -> list[dict[str, Any]]:
    from router.warmup import warm_up
    from turnout.embedded.local_llm import start_for_eval

    local, stop = start_for_eval(settings, LocalLLMConfig(slots=slots))
    local = local.model_copy(update={"llm_answer_model": local.llm_router_model, "llm_mode": LLMMode.JSON_SCHEMA})
    cases, records = bench_cases(questions)
    out = []
    try:
        warm_up(local.llm_base_url or "", local.llm_router_model)
        for number, case in enumerate(cases):
            routed_s = asyncio.run(_route(local, case["question"]))
            answer = asyncio.run(timed_answer(local, compact_messages(local, case, material_for(case, records))))
            sample = {"slots": slots, "case": case["id"], "first": number == 0, "route_s": round(routed_s, 2), **answer}
            print(sample, flush=True)
            out.append(sample)
    finally:
        stop()
    return out


def run(settings: Settings, questions: int, rounds: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    samples: list[dict[str, Any]] = []
    for number in range(rounds):
        for slots in SLOTS if number % 2 == 0 else tuple(reversed(SLOTS)):
            samples += _one_server(settings, slots, questions)

    def metric(key: str, slots: int) -> float:
        return p50([s[key] for s in samples if s["slots"] == slots and not s["first"]])

    rows = []
    for key, name in (("first_s", "answer's first token after its routing call p50"),
                      ("total_s", "whole answer after its routing call p50"), ("route_s", "routing call p50")):
        rows.append(timing_row(f"{name}, two slots vs one", metric(key, 2), metric(key, 1), unit="s",
                               target=f"<= {TARGET_FIRST_S:.0f} s" if key == "first_s" else ""))
    return rows, samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=4, help="the first N questions of the dev half")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of one server each way")
    args = parser.parse_args()
    config = LocalLLMConfig()
    if not (server_ready(config) and weights_ready(config)):
        print("slot_bench: skipped -- no local model built here (run `turnout llm build` once, ~15 min)")
        _write([{"metric": "answer's first token after its routing call p50, local 1.5B",
                 "value": "skipped: no local model built", "target": f"<= {TARGET_FIRST_S:.0f} s"}])
        return 0
    rows, samples = run(get_settings(), args.questions, args.rounds)
    _write(rows, questions=args.questions, rounds=args.rounds, samples=samples)
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
