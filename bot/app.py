"""Factories that build the real clients from settings (the only place that does)."""

import logging
import sys

from bot.metrics import ConferMetrics, build_metrics
from bot.service import ResearchService
from bot.settings import ConferSettings
from graph.context import ResearchLimits
from retrieval.backends import SearchBackend
from retrieval.backends.elastic import build_elasticsearch_backend
from retrieval.backends.embedded import build_embedded_backend
from retrieval.collections import CollectionsConfig, load_collections


def build_backend(settings: ConferSettings) -> SearchBackend:
    if settings.elasticsearch_url:
        api_key = (
            settings.elasticsearch_api_key.get_secret_value() if settings.elasticsearch_api_key else None
        )
        return build_elasticsearch_backend(url=settings.elasticsearch_url, api_key=api_key)
    return build_embedded_backend(settings.data_dir)


def build_limits(settings: ConferSettings) -> ResearchLimits:
    return ResearchLimits(
        top_k=settings.top_k,
        max_fanout=settings.max_fanout,
        branch_timeout=min(settings.branch_timeout, settings.question_timeout),
        routing_ratio=settings.routing_ratio,
    )


def build_service(
    settings: ConferSettings,
    *,
    config: CollectionsConfig | None = None,
    backend: SearchBackend | None = None,
    metrics: ConferMetrics | None = None,
) -> ResearchService:
    return ResearchService(
        config=config or load_collections(settings.collections_path),
        backend=backend or build_backend(settings),
        metrics=metrics or build_metrics(),
        limits=build_limits(settings),
        question_timeout=settings.question_timeout,
    )


def configure_logging(level: str) -> None:
    """Logging goes to stderr so ``--json`` keeps stdout clean; set up once per process."""
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("elastic_transport", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
