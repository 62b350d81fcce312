"""All Prometheus metrics, built per process into their own registry. README's Operate table lists
each with its labels (a test keeps the two the same); the alert rules and the dashboard under
``deploy/`` query them."""

import collections
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from graph import Answer

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120)
_FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)


@dataclass(frozen=True)
class ConferMetrics:
    registry: CollectorRegistry
    questions: Counter
    question_duration: Histogram
    ack_duration: Histogram
    subagent_duration: Histogram
    subagents: Counter
    retrieval_duration: Histogram
    llm_requests: Counter
    llm_duration: Histogram
    llm_tokens: Counter
    slack_api_calls: Counter
    slack_rate_limited: Counter
    events_deduplicated: Counter
    citations_dropped: Counter
    embedding_failures: Counter
    questions_in_flight: Gauge
    feedback: Counter
    traces_shown: Counter
    answer_cache: Counter
    answer_cache_evictions: Counter
    llm_fallbacks: Counter
    ready: Gauge
    teams_api_calls: Counter
    teams_rate_limited: Counter
    slack_requests_rejected: Counter
    questions_undelivered: Counter
    dedupe_entries: Gauge
    dedupe_evictions: Counter
    memory_unavailable: Counter
    slack_stream_fallbacks: Counter
    llm_breaker_trips: Counter
    llm_skipped: Counter


class MetricsLLMObserver:
    """Turns the model client's per-request reports into the LLM metrics."""

    def __init__(self, metrics: ConferMetrics) -> None:
        self._metrics = metrics

    def request_finished(
        self, *, outcome: str, seconds: float, prompt_tokens: int, completion_tokens: int
    ) -> None:
        self._metrics.llm_requests.labels(outcome).inc()
        self._metrics.llm_duration.observe(seconds)
        if prompt_tokens:
            self._metrics.llm_tokens.labels("prompt").inc(prompt_tokens)
        if completion_tokens:
            self._metrics.llm_tokens.labels("completion").inc(completion_tokens)

    def breaker_tripped(self, *, reason: str, seconds: float) -> None:
        self._metrics.llm_breaker_trips.labels(reason).inc()

    def request_skipped(self, *, reason: str) -> None:
        self._metrics.llm_skipped.labels(reason).inc()


def build_metrics(registry: CollectorRegistry | None = None) -> ConferMetrics:
    registry = registry or CollectorRegistry(auto_describe=True)
    return ConferMetrics(
        registry=registry,
        questions=Counter(
            "confer_questions",
            "Questions by surface and outcome.",
            ["surface", "outcome"],
            registry=registry,
        ),
        question_duration=Histogram(
            "confer_question_duration_seconds",
            "Time to answer a question.",
            ["surface"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        ),
        ack_duration=Histogram(
            "confer_ack_duration_seconds",
            "Time to acknowledge a Slack request.",
            buckets=_FAST_BUCKETS,
            registry=registry,
        ),
        subagent_duration=Histogram(
            "confer_subagent_duration_seconds",
            "Time of one research sub-agent.",
            ["collection", "outcome"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        ),
        subagents=Counter(
            "confer_subagents",
            "Research sub-agents by collection and outcome.",
            ["collection", "outcome"],
            registry=registry,
        ),
        retrieval_duration=Histogram(
            "confer_retrieval_duration_seconds",
            "Time of one search request.",
            ["backend"],
            buckets=_FAST_BUCKETS,
            registry=registry,
        ),
        llm_requests=Counter(
            "confer_llm_requests", "LLM requests by outcome.", ["outcome"], registry=registry
        ),
        llm_duration=Histogram(
            "confer_llm_duration_seconds",
            "Time of one LLM request.",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        ),
        llm_tokens=Counter("confer_llm_tokens", "LLM tokens by kind.", ["kind"], registry=registry),
        slack_api_calls=Counter(
            "confer_slack_api_calls",
            "Slack Web API calls by method and outcome.",
            ["method", "outcome"],
            registry=registry,
        ),
        slack_rate_limited=Counter(
            "confer_slack_rate_limited",
            "Slack 429 answers by method.",
            ["method"],
            registry=registry,
        ),
        events_deduplicated=Counter(
            "confer_events_deduplicated", "Duplicate Slack deliveries dropped.", registry=registry
        ),
        citations_dropped=Counter(
            "confer_citations_dropped",
            "Answer sentences dropped by verification, by reason.",
            ["reason"],
            registry=registry,
        ),
        embedding_failures=Counter(
            "confer_embedding_failures",
            "Searches that fell back to words only because the question could not be embedded.",
            registry=registry,
        ),
        questions_in_flight=Gauge(
            "confer_questions_in_flight", "Questions being answered now.", registry=registry
        ),
        feedback=Counter("confer_feedback", "Answer feedback clicks by vote.", ["vote"], registry=registry),
        answer_cache=Counter(
            "confer_answer_cache",
            "Answer cache lookups by outcome (hit, or miss: not kept, or its collections changed).",
            ["outcome"],
            registry=registry,
        ),
        answer_cache_evictions=Counter(
            "confer_answer_cache_evictions",
            "Cached answers evicted: a collection they used was indexed anew, or a 👎 on one.",
            ["reason"],
            registry=registry,
        ),
        traces_shown=Counter(
            "confer_traces_shown", "Answer traces shown on demand (How I found this).", registry=registry
        ),
        ready=Gauge(
            "confer_ready",
            "1 while the service is ready (search reachable, taking questions).",
            registry=registry,
        ),
        llm_fallbacks=Counter(
            "confer_llm_fallbacks",
            "Steps where the model was not usable and the extractive or heuristic path ran.",
            ["stage"],
            registry=registry,
        ),
        teams_api_calls=Counter(
            "confer_teams_api_calls",
            "Bot Framework connector calls by method and outcome.",
            ["method", "outcome"],
            registry=registry,
        ),
        teams_rate_limited=Counter(
            "confer_teams_rate_limited",
            "Teams 429 answers by method.",
            ["method"],
            registry=registry,
        ),
        slack_requests_rejected=Counter(
            "confer_slack_requests_rejected",
            "Requests to /slack/events refused before Bolt: bad signature (401), unparsable (400).",
            ["reason"],
            registry=registry,
        ),
        questions_undelivered=Counter(
            "confer_questions_undelivered",
            "Questions whose thread could not be posted in the channel, by how the asker was told instead.",
            ["surface", "told"],
            registry=registry,
        ),
        dedupe_entries=Gauge(
            "confer_dedupe_entries",
            "Delivery ids the in-process deduplicator remembers now.",
            registry=registry,
        ),
        dedupe_evictions=Counter(
            "confer_dedupe_evictions",
            "Delivery ids the in-process deduplicator forgot before their TTL because it was full.",
            registry=registry,
        ),
        memory_unavailable=Counter(
            "confer_memory_unavailable",
            "Thread memory or feedback store operations that failed (answered without them), by operation.",
            ["operation"],
            registry=registry,
        ),
        slack_stream_fallbacks=Counter(
            "confer_slack_stream_fallbacks",
            "Questions whose streamed Slack reply fell back to a posted-and-edited status, by Slack's error "
            "(a refusal such as not_allowed, or other).",
            ["error"],
            registry=registry,
        ),
        llm_breaker_trips=Counter(
            "confer_llm_breaker_trips",
            "Times the model breaker opened (model skipped, answers extractive until it may be asked "
            "again), by reason: stalled (no first token in time) or rate_limited (429 with Retry-After).",
            ["reason"],
            registry=registry,
        ),
        llm_skipped=Counter(
            "confer_llm_skipped",
            "Model calls not sent, by reason: breaker_open (stalled or rate-limited model), deadline (the "
            "question's model deadline had passed).",
            ["reason"],
            registry=registry,
        ),
    )


DROP_REASONS = ("unsupported", "number", "negation", "name", "roles", "quantifier", "comparative", "judge")


def record_drops(metrics: ConferMetrics, answer: Answer) -> None:
    """``confer_citations_dropped_total{reason}``: sentences whose reason is unknown (extractive
    composition) count as ``unsupported``; the label stays bounded."""
    reasons = collections.Counter(r if r in DROP_REASONS else "unsupported" for r in answer.drop_reasons)
    unexplained = answer.dropped - sum(reasons.values())
    if unexplained > 0:
        reasons["unsupported"] += unexplained
    for reason, count in reasons.items():
        metrics.citations_dropped.labels(reason=reason).inc(count)
