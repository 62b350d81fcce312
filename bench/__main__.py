"""``make bench``: run the benchmarks and write bench-results/report.{json,md}."""

import argparse
import asyncio
import json
import platform
import time
from pathlib import Path
from typing import Any

from bench.fanout import measure_fanout
from bench.search import measure_search


async def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
    }
    print("fan-out: 8 collections × 200 ms …", flush=True)
    report["fanout_8x200ms"] = await measure_fanout(8, 0.2, args.runs)
    print("embedded search on 50,000 passages …", flush=True)
    report["embedded_search_50k"] = await measure_search(50_000, args.queries)
    return report


def markdown(report: dict[str, Any]) -> str:
    fan = report["fanout_8x200ms"]
    search = report["embedded_search_50k"]
    lines = [
        "# Confer benchmark report",
        "",
        f"Generated {report['generated_at']} on Python {report['machine']['python']}, "
        f"{report['machine']['cpus']} CPUs. Figures are medians of {fan['runs']} runs in one process.",
        "",
        "## Fan-out: 8 collections, each search a fixed 200 ms",
        "",
        "| mode | median question (s) | median slowest branch + synthesis (s) | ratio |",
        "|---|---:|---:|---:|",
    ]
    for mode in ("parallel", "sequential"):
        row = fan[mode]
        lines.append(
            f"| {mode} | {row['median_seconds']} | {row['median_critical_path_seconds']} | "
            f"{row['ratio_to_critical_path']} |"
        )
    lines += [
        "",
        f"Parallel is {fan['speedup']}× faster than one branch at a time. The target is a parallel "
        "ratio of at most 1.1 (question time over slowest branch plus synthesis).",
        "",
        "## Embedded search (SQLite FTS5, BM25)",
        "",
        "| passages | index build (s) | p50 (ms) | p95 (ms) | mean (ms) | 4-way concurrent (queries/s) |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {search['passages']:,} | {search['index_seconds']} | {search['p50_ms']} | {search['p95_ms']} | "
        f"{search['mean_ms']} | {search['concurrent_queries_per_second']} |",
        "",
        f"{search['queries_with_hits']} of {search['queries']} synthetic queries "
        "(2–5 mid-frequency words) had hits.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    report = asyncio.run(run(args))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "report.md").write_text(markdown(report))
    print(markdown(report))
    print(f"wrote {args.out / 'report.json'} and {args.out / 'report.md'}")


if __name__ == "__main__":
    main()
