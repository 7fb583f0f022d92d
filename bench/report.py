"""Run the benchmarks and print one table of ratios against their in-run baselines.

Each benchmark is a module `bench/<name>.py` that writes `bench/results/<name>.json`:
{"name", "date", "rows": [{"metric", "value", "baseline", "ratio", "target", "unit"}]}.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

RESULTS = Path(__file__).parent / "results"
BENCHMARKS = ["search_bench", "job_list_bench", "rag_bench", "api_bench", "load_bench", "fairness_bench", "routing_bench", "answer_bench",
              "slot_bench", "prompt_read_bench"]


def run_one(name: str, timeout_s: float) -> tuple[bool, float, str]:
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", f"bench.{name}"], capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - started, f"timed out after {timeout_s:.0f}s"
    tail = (proc.stdout + proc.stderr)[-2000:]
    return proc.returncode == 0, time.monotonic() - started, tail


def machine() -> str:
    import os

    return f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"


def nearest_rank(samples: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `samples`, the nearest rank (the search and job-list benchmarks)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timing_row(metric: str, value: float, baseline: float | None, target: str = "", unit: str = "ms") -> dict[str, Any]:
    """One result row beside its in-run baseline, rounded to 0.01."""
    return {"metric": metric, "value": round(value, 2), "baseline": None if baseline is None else round(baseline, 2),
            "ratio": None if not baseline else round(value / baseline, 2), "target": target, "unit": unit}


def render_rows(result: dict[str, Any], *, width: int) -> str:
    """One benchmark's rows as a table (metric, value, in-run baseline, ratio, target)."""
    lines = [f"{'metric':<{width}} {'value':>9} {'baseline':>9} {'ratio':>7}  target"]
    for row in result["rows"]:
        base = "-" if row["baseline"] is None else f"{row['baseline']:.2f}"
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}x"
        lines.append(f"{row['metric'] + ' (' + row['unit'] + ')':<{width}} {row['value']:>9.2f} {base:>9} {ratio:>7}  "
                     f"{row['target']}")
    return "\n".join(lines)


def render(results: list[dict[str, object]]) -> str:
    rows: list[tuple[str, str, str, str, str, str]] = []
    for result in results:
        for row in cast(list[object], result.get("rows", [])):
            assert isinstance(row, dict)
            unit = row.get("unit", "")
            value, base, ratio = row.get("value"), row.get("baseline"), row.get("ratio")
            rows.append((
                str(result["name"]),
                str(row["metric"]) + (f" ({unit})" if unit else ""),
                f"{value:.2f}" if isinstance(value, float | int) else str(value),
                f"{base:.2f}" if isinstance(base, float | int) else "-",
                f"{ratio:.2f}x" if isinstance(ratio, float | int) else "-",
                str(row.get("target", "")),
            ))
    name_w = max([len("benchmark"), *(len(r[0]) for r in rows)])
    metric_w = max([len("metric"), *(len(r[1]) for r in rows)])
    header = f"{'benchmark':<{name_w}}  {'metric':<{metric_w}}  {'value':>10}  {'baseline':>10}  {'ratio':>7}  target"
    lines = [header, "-" * len(header)]
    lines += [f"{n:<{name_w}}  {m:<{metric_w}}  {v:>10}  {b:>10}  {r:>7}  {t}" for n, m, v, b, r, t in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run", action="store_true", help="run the benchmarks first (else just report)")
    parser.add_argument("--only", nargs="*", default=BENCHMARKS)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per benchmark")  # rag: ~4 min
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    failures: list[str] = []
    durations: dict[str, float] = {}
    if args.run:
        for name in args.only:
            print(f"== {name}", flush=True)
            ok, took, tail = run_one(name, args.timeout)
            durations[name] = round(took, 1)
            if not ok:
                failures.append(name)
                print(f"{name} FAILED after {took:.0f}s:\n{tail}", file=sys.stderr)
            else:
                print(f"   done in {took:.0f}s", flush=True)
    results = []
    for name in args.only:
        path = RESULTS / f"{name.removesuffix('_bench')}.json"
        if path.exists():
            results.append(json.loads(path.read_text()))
    print()
    print(f"Turnout benchmarks, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine()}")
    print(render(results))
    summary = {"date": datetime.now(UTC).isoformat(), "machine": machine(), "durations_s": durations,
               "failed": failures, "results": results}
    (RESULTS / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"\nJSON: {RESULTS / 'summary.json'}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
