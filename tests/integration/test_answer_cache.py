"""The answer cache on the sample collections: a repeated question is answered from it with a note
saying so; `confer index` changing a collection researches exactly the answers that used it again; a
place with narrower access never gets an answer cached for a wider one; a Redis that does not answer
costs the cache, never a question; with a model, a hit makes no model call."""

import socket
from pathlib import Path

from bot import messages
from bot.chat.cache import MemoryAnswerCache, RedisAnswerCache, cache_key, normalise
from bot.chat.render import plain_answer
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from graph import Answer, Question
from graph.context import ResearchLimits
from retrieval.audience import EVERYONE, Audience
from retrieval.backends import SearchBackend
from retrieval.collections import Collection, CollectionsConfig
from retrieval.ingest.pipeline import index_collection
from retrieval.passages import Passage
from tests.fakes.llm_api import FakeLLM

EVERYTHING = ("engineering", "security", "people", "product")


async def _service(config: CollectionsConfig, backend: SearchBackend, **extra: object) -> ResearchService:
    for collection in config.collections:
        await index_collection(backend, collection, config)
    return ResearchService(
        config=config,
        backend=backend,
        metrics=build_metrics(),
        limits=ResearchLimits(),
        question_timeout=30,
        cache=extra.pop("cache", MemoryAnswerCache(ttl=3600)),  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )


def _lookups(service: ResearchService, outcome: str) -> float:
    return service.metrics.registry.get_sample_value("confer_answer_cache_total", {"outcome": outcome}) or 0.0


def _question(text: str, allowed: tuple[str, ...] = EVERYTHING) -> Question:
    return Question(text=text, allowed=allowed)


def test_the_key_reads_a_question_however_it_is_typed_and_nothing_else() -> None:
    assert (
        normalise("How long is  parental leave?")
        == normalise("how long is parental leave")
        == ("how long is parental leave")
    )
    key = cache_key(_question("How long is parental leave?"), mode="extractive", model="")
    assert key == cache_key(_question("  how LONG is parental leave "), mode="extractive", model="")
    assert key != cache_key(
        _question("How long is parental leave?", ("people",)), mode="extractive", model=""
    )
    assert key != cache_key(_question("How long is paternal leave?"), mode="extractive", model="")
    assert key != cache_key(_question("How long is parental leave?"), mode="llm", model="m")
    requested = Question(text="How long is parental leave?", allowed=EVERYTHING, requested=("people",))
    assert key != cache_key(requested, mode="extractive", model="")


async def test_a_repeated_question_is_answered_from_the_cache_with_a_note_and_fresh_researches_it(
    embedded: SearchBackend, sample_config: CollectionsConfig
) -> None:
    service = await _service(sample_config, embedded)
    first = await service.answer(_question("How long is parental leave?"), surface="cli")
    again = await service.answer(_question("how long is parental leave"), surface="cli")
    assert first.cached_at == 0 and again.cached_at > 0
    assert (
        again.sections == first.sections and again.citations == first.citations and again.trace == first.trace
    )
    assert messages.cached_note(again.cached_at) in plain_answer(again, sample_config)
    assert messages.cached_note(again.cached_at).startswith("Cached answer, from ")
    assert (_lookups(service, "hit"), _lookups(service, "miss")) == (1.0, 1.0)
    fresh = await service.answer(_question("How long is parental leave?"), surface="cli", fresh=True)
    assert fresh.cached_at == 0 and "20 weeks" in plain_answer(fresh, sample_config)


async def test_indexing_a_changed_collection_researches_again_exactly_the_answers_that_used_it(
    embedded: SearchBackend, sample_config: CollectionsConfig, sample_dir: Path
) -> None:
    service = await _service(sample_config, embedded)
    leave = Question(text="How long is parental leave?", allowed=EVERYTHING, requested=("people",))
    deploys = Question(text="how do deploys work", allowed=EVERYTHING, requested=("engineering",))
    await service.answer(leave, surface="cli")
    await service.answer(deploys, surface="cli")
    document = sample_dir / "samples" / "people" / "remote-work.md"
    document.write_text(
        document.read_text(encoding="utf-8") + "\n\nParental leave can be extended by 6 unpaid weeks.\n",
        encoding="utf-8",
    )
    people = sample_config.get("people")
    assert people is not None
    await index_collection(embedded, people, sample_config)  # what `confer index` runs
    again = await service.answer(leave, surface="cli")
    assert again.cached_at == 0  # researched again: its collection changed
    assert "6 unpaid weeks" in plain_answer(again, sample_config)
    assert (await service.answer(deploys, surface="cli")).cached_at > 0  # engineering did not change
    assert (
        service.metrics.registry.get_sample_value("confer_answer_cache_evictions_total", {"reason": "index"})
        == 1.0
    )
    unchanged = sample_config.get("engineering")
    assert unchanged is not None
    await index_collection(embedded, unchanged, sample_config)  # nothing changed: nothing evicted
    assert (await service.answer(deploys, surface="cli")).cached_at > 0


async def test_a_place_with_narrower_access_never_gets_an_answer_cached_for_a_wider_one(
    embedded: SearchBackend, sample_config: CollectionsConfig
) -> None:
    service = await _service(sample_config, embedded)
    wide = await service.answer(_question("How long is parental leave?"), surface="cli")
    assert any(c.passage.collection == "people" for c in wide.citations)
    narrow = await service.answer(
        _question("How long is parental leave?", ("engineering", "security")), surface="cli"
    )
    assert narrow.cached_at == 0
    assert all(c.passage.collection in ("engineering", "security") for c in narrow.citations)
    assert narrow.trace is not None and "people" not in narrow.trace.model_dump_json()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: nothing listens there


async def test_with_redis_down_questions_are_answered_uncached(
    embedded: SearchBackend, sample_config: CollectionsConfig
) -> None:
    from redis.asyncio import Redis

    down = RedisAnswerCache(client=Redis.from_url(f"redis://127.0.0.1:{_closed_port()}/0"), ttl=60)
    service = await _service(sample_config, embedded, cache=down)
    answers: list[Answer] = [
        await service.answer(_question("How long is parental leave?"), surface="cli") for _ in "ab"
    ]
    assert all("20 weeks" in plain_answer(a, sample_config) and a.cached_at == 0 for a in answers)
    assert _lookups(service, "miss") == 2.0 and _lookups(service, "hit") == 0.0
    await service.close()


async def test_replicas_share_answers_through_redis(
    embedded: SearchBackend, sample_config: CollectionsConfig, redis_url: str
) -> None:
    from redis.asyncio import Redis

    one = await _service(
        sample_config, embedded, cache=RedisAnswerCache(client=Redis.from_url(redis_url), ttl=60)
    )
    other = await _service(
        sample_config, embedded, cache=RedisAnswerCache(client=Redis.from_url(redis_url), ttl=60)
    )
    question = _question(f"How long is parental leave? {id(one)}")  # a key no other run wrote
    await one.answer(question, surface="cli")
    assert (await other.answer(question, surface="cli")).cached_at > 0
    await one.cache.close()  # type: ignore[union-attr]
    await other.cache.close()  # type: ignore[union-attr]


async def test_with_a_model_a_cached_answer_asks_the_model_nothing(
    embedded: SearchBackend, sample_config: CollectionsConfig
) -> None:
    from graph import build_chat_model

    llm = await FakeLLM().start()
    model = build_chat_model(base_url=llm.url, api_key="sk-test", model="fake-model")
    try:
        service = await _service(sample_config, embedded, llm=model, model="fake-model")
        first = await service.answer(_question("How long is parental leave?"), surface="cli")
        asked = len(llm.requests)
        again = await service.answer(_question("How long is parental leave?"), surface="cli")
    finally:
        await model.close()
        await llm.stop()
    assert first.mode == "llm" and asked > 0
    assert again.cached_at > 0 and len(llm.requests) == asked


async def test_an_answer_built_for_a_wider_reader_is_never_served_to_a_narrower_one(
    embedded: SearchBackend, tmp_path: Path
) -> None:
    """Readers from a source with permissions: the same question asked by someone who may read a
    restricted passage, then by someone who may not, in the same place, is researched again for
    the second (and the first's answer is kept for the first)."""
    config = CollectionsConfig(
        collections=(Collection(name="hr", title="HR", sources=("x",)),), base_dir=tmp_path
    )
    restricted = ("ana@example.com",)
    await embedded.sync_collection(
        config.collections[0],
        [
            Passage(
                id=f"p{n}",
                collection="hr",
                doc_id=f"d{n}",
                source=f"wiki/{n}",
                title=title,
                text=text,
                readers=readers,
            )
            for n, (title, text, readers) in enumerate(
                [
                    ("Salary bands", "A senior engineer is paid 88,000 euros a year.", restricted),
                    ("Pay", "Salaries are reviewed every March.", (EVERYONE,)),
                ]
            )
        ],
    )
    service = ResearchService(
        config=config,
        backend=embedded,
        metrics=build_metrics(),
        limits=ResearchLimits(),
        question_timeout=30,
        cache=MemoryAnswerCache(ttl=3600),
    )
    ana = Question(
        text="What is a senior engineer paid?", allowed=("hr",), audience=Audience.person(["ana@example.com"])
    )
    cy = ana.model_copy(update={"audience": Audience.person(["cy@example.com"])})
    wide = await service.answer(ana, surface="dm")
    assert "88,000" in plain_answer(wide, config)
    narrow = await service.answer(cy, surface="dm")
    assert narrow.cached_at == 0 and "88,000" not in plain_answer(narrow, config)
    assert (await service.answer(ana, surface="dm")).cached_at > 0  # each kept for its own reader
    assert cache_key(ana, mode="extractive", model="") != cache_key(cy, mode="extractive", model="")
    # Two people who may read the same keep one key; the operator (the terminal) another.
    bo = ana.model_copy(update={"audience": Audience.person(["bo@example.com"])})
    assert cache_key(cy, mode="extractive", model="") != cache_key(bo, mode="extractive", model="")
    anyone = ana.model_copy(update={"audience": Audience.anyone()})
    operator = ana.model_copy(update={"audience": Audience.everything()})
    assert len({cache_key(q, mode="extractive", model="") for q in (ana, anyone, operator)}) == 3
