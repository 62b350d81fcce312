"""Factories that build the real clients from settings (the only place that does)."""

from typing import TYPE_CHECKING

from bot.settings import ConferSettings
from retrieval.collections import CollectionsConfig, load_collections

if TYPE_CHECKING:  # the graph, the service and the clients load only when built (fast CLI start)
    from bot.chat.cache import AnswerCache
    from bot.chat.service import ResearchService
    from bot.metrics import ConferMetrics
    from graph import ChatModel, ResearchLimits
    from retrieval.backends import SearchBackend
    from retrieval.embeddings import Embedder


def build_embedder(settings: ConferSettings) -> "Embedder | None":
    """The configured embedder (CONFER_EMBEDDINGS), or ``None`` for search by words alone."""
    if settings.embeddings == "off":
        return None
    if settings.embeddings == "endpoint":
        from retrieval.embeddings import EndpointEmbedder

        assert settings.embeddings_model is not None  # checked by the settings
        return EndpointEmbedder(
            base_url=settings.embeddings_base_url,
            api_key=settings.embeddings_api_key.get_secret_value() if settings.embeddings_api_key else None,
            model=settings.embeddings_model,
            dimensions=settings.embeddings_dimensions,
            batch_size=settings.embeddings_batch_size,
        )
    from retrieval.embeddings import LocalEmbedder

    return LocalEmbedder()


def build_backend(settings: ConferSettings, metrics: "ConferMetrics | None" = None) -> "SearchBackend":
    from retrieval.embeddings import VectorCache

    embedder = build_embedder(settings)
    cache = VectorCache(settings.vector_cache_path) if embedder is not None else None
    on_failure = None
    if metrics is not None:
        counter = metrics.embedding_failures

        def on_failure(reason: str) -> None:
            counter.inc()

    if settings.elasticsearch_url:
        from retrieval.backends.elastic import build_elasticsearch_backend  # only with ELASTICSEARCH_URL

        api_key = (
            settings.elasticsearch_api_key.get_secret_value() if settings.elasticsearch_api_key else None
        )
        return build_elasticsearch_backend(
            url=settings.elasticsearch_url,
            api_key=api_key,
            embedder=embedder,
            vector_cache=cache,
            on_embedding_failure=on_failure,
        )
    from retrieval.backends.embedded import build_embedded_backend

    return build_embedded_backend(
        settings.data_dir, embedder=embedder, vector_cache=cache, on_embedding_failure=on_failure
    )


def build_limits(settings: ConferSettings) -> "ResearchLimits":
    from graph import ResearchLimits

    return ResearchLimits(
        top_k=settings.top_k,
        max_fanout=settings.max_fanout,
        branch_timeout=min(settings.branch_timeout, settings.question_timeout),
        routing_ratio=settings.routing_ratio,
        max_rounds=settings.max_rounds,
        model_deadline=settings.llm_deadline,
    )


def build_llm(settings: ConferSettings, metrics: "ConferMetrics") -> "ChatModel | None":
    """The configured OpenAI-compatible model, or ``None`` (extractive answers) without LLM_MODEL."""
    if not settings.llm_model:
        return None
    from bot.chat.breaker import build_breaker
    from bot.metrics import MetricsLLMObserver
    from graph import build_chat_model  # the openai package loads only when needed

    return build_chat_model(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
        model=settings.llm_model,
        observer=MetricsLLMObserver(metrics),
        breaker=build_breaker(settings.redis_url.get_secret_value() if settings.redis_url else None),
        stall_seconds=settings.llm_stall,
        cooldown=settings.llm_cooldown,
    )


def build_cache(settings: ConferSettings) -> "AnswerCache | None":
    """The answer cache CONFER_CACHE names: Redis by default when REDIS_URL is set, else in process."""
    from bot.chat.cache import build_answer_cache
    from bot.settings import SettingsError

    redis_url = settings.redis_url.get_secret_value() if settings.redis_url else None
    mode = settings.cache or ("redis" if redis_url else "memory")
    if mode == "redis" and not redis_url:
        raise SettingsError(["CONFER_CACHE: redis needs REDIS_URL (or use memory or off)"])
    return build_answer_cache(mode=mode, ttl=settings.cache_ttl, redis_url=redis_url)


def build_service(
    settings: ConferSettings,
    *,
    config: CollectionsConfig | None = None,
    backend: "SearchBackend | None" = None,
    metrics: "ConferMetrics | None" = None,
) -> "ResearchService":
    from bot.chat.service import ResearchService
    from bot.metrics import build_metrics

    metrics = metrics or build_metrics()
    return ResearchService(
        config=config or load_collections(settings.collections_path),
        backend=backend or build_backend(settings, metrics),
        metrics=metrics,
        limits=build_limits(settings),
        question_timeout=settings.question_timeout,
        delivery_timeout=settings.delivery_timeout,
        llm=build_llm(settings, metrics),
        cache=build_cache(settings),
        model=settings.llm_model or "",
    )
