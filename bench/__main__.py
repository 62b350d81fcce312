"""``make bench``: run the benchmarks and write bench-results/report.{json,md}."""

import argparse
import asyncio
import json
import platform
import time
from pathlib import Path
from typing import Any

from bench.fanout import measure_fanout
from bench.llm_latency import measure_llm_latency
from bench.search import measure_search
from bench.slack_load import measure_slack_load


async def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
    }
    print("fan-out: 8 collections × 200 ms …", flush=True)
    report["fanout_8x200ms"] = await measure_fanout(8, 0.2, args.runs)
    print("LLM mode: 6 collections, model at 300 ms a call …", flush=True)
    report["llm_6x300ms"] = await measure_llm_latency(6, 0.3, 5)
    print("embedded search on 50,000 passages …", flush=True)
    report["embedded_search_50k"] = await measure_search(50_000, args.queries)
    print("slack: 100 concurrent mentions through the HTTP endpoint …", flush=True)
    report["slack_100_mentions"] = await measure_slack_load(100)
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
    llm = report.get("llm_6x300ms")
    if llm:
        lines += [
            "## LLM mode: 6 collections, every model call a fixed 300 ms (fake OpenAI-compatible server)",
            "",
            f"{llm['model_calls_per_question']} model calls per question (plan, one draft per collection, "
            f"synthesis): {llm['sequential_model_time_seconds']} s if made one after another. Answers were "
            f"{', '.join(llm['answer_modes'])}.",
            "",
            "| median question (s) | plan (s) | slowest branch (s) | synthesis (s) "
            "| critical path (s) | ratio |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {llm['median_seconds']} | {llm['median_plan_seconds']} | "
            f"{llm['median_slowest_branch_seconds']} | "
            f"{llm['median_synthesis_seconds']} | {llm['median_critical_path_seconds']} | "
            f"{llm['ratio_to_critical_path']} |",
            "",
        ]
    slack = report.get("slack_100_mentions")
    if slack:
        lines += [
            "## Slack: 100 concurrent mentions through POST /slack/events (fake Web API)",
            "",
            f"{slack['mentions']} mentions in 10 channels plus {slack['duplicate_deliveries']} "
            "redeliveries of the same events, all sent at once; the fake Slack API answered 429 "
            f"(Retry-After: 1) to the first {slack['rate_limited_429s']} status edits. The bot keeps "
            "Slack's real limits: at most 8 questions at once, about one edit a second per message, "
            "about 50 `chat.update` a minute per workspace.",
            "",
            "| measurement | value |",
            "|---|---:|",
            f"| acks with HTTP 200 | {slack['acks_200']} of "
            f"{slack['mentions'] + slack['duplicate_deliveries']} |",
            f"| ack latency p50 / p99 / max (ms) | {slack['ack_p50_ms']} / {slack['ack_p99_ms']} / "
            f"{slack['ack_max_ms']} |",
            f"| questions answered | {slack['answered']} |",
            f"| duplicate answers | {slack['duplicate_answers']} |",
            f"| Web API calls per question | {slack['web_api_calls_per_question']} |",
            f"| status edits per question | {slack['status_edits_per_question']} |",
            f"| 429s met and recovered | {slack['rate_limited_429s']} |",
            f"| status messages ending in their final summary | {slack['status_messages_final']} of "
            f"{slack['status_messages']} |",
            f"| seconds until every answer was posted | {slack['seconds_until_all_answered']} |",
            f"| seconds until every status message was final | {slack['seconds_until_all_status_final']} |",
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
