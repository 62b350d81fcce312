"""Research rounds end to end on the embedded backend: a bridge question whose second paragraph is
named only inside the first, with faults, budgets, channel policy and a fake model."""

import json
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from bot.chat.render import answer_json, plain_answer
from bot.chat.service import ResearchService
from bot.metrics import MetricsLLMObserver, build_metrics
from graph.context import ResearchLimits
from graph.events import BranchFinished, FollowUp, LLMFallback, ProgressEvent
from graph.llm.openai_client import build_chat_model
from graph.models import Answer
from retrieval.audience import Audience
from retrieval.backends import SearchBackend
from retrieval.collections import Collection, CollectionsConfig, load_collections
from retrieval.ingest.pipeline import index_collection
from retrieval.passages import Passage
from tests.fakes.backends import FaultyBackend
from tests.fakes.llm_api import FakeLLM, Reply

FILMS = [
    (
        "f1",
        "Big Hollow Bend (film)",
        "Big Hollow Bend is a 2014 American romantic comedy film written and directed by Delia Fontaine.",
    ),
    ("f2", "Ivo Marsh (film)", "Ivo Marsh is a 1994 biographical film directed by Rafe Calder."),
    ("f3", "Tidewater (film)", "Tidewater is a 1990 romantic comedy film starring Solenne and Maren Vale."),
    ("f4", "Lanternjack", "Lanternjack is a 1988 fantasy horror comedy film directed by Rafe Calder."),
    ("f5", "Silas Shearwater", "Silas Shearwater is a 1990 fantasy film starring Jory Dunmore."),
]
PEOPLE = [
    ("p1", "Delia Fontaine", "Delia Fontaine is a best-selling novelist and filmmaker from Virginia."),
    ("p2", "Rafe Calder", "Rafe Calder is an American filmmaker known for gothic fantasy films."),
    # BM25 needs a few documents per collection for its term weights to mean anything.
    ("p3", "Maren Vale", "Maren Vale is an actress who starred in Lanternjack."),
    ("p4", "Solenne", "Solenne is a singer and actress with a career spanning six decades."),
    ("p5", "Ivo Marsh", "Edward Davis Wood Jr. was a filmmaker, actor and author."),
    ("p6", "Jory Dunmore", "Jory Dunmore is an actor who played Ivo Marsh."),
]
SECRET = [("s1", "Delia Fontaine", "Delia Fontaine signed a confidential contract in Virginia.")]
QUESTION = "Which state is the director of the romantic comedy Big Hollow Bend from?"
FIRST_CLAIM = "written and directed by Delia Fontaine"


@pytest.fixture
def wiki(tmp_path: Path) -> CollectionsConfig:
    return write_wiki(tmp_path)


def write_wiki(tmp_path: Path) -> CollectionsConfig:
    """Films, people and a secret collection; channels that may search some of them."""
    root = tmp_path / "wiki"
    root.mkdir()
    for name, rows in (("films", FILMS), ("people", PEOPLE), ("secret", SECRET)):
        (root / f"{name}.jsonl").write_text(
            "\n".join(json.dumps({"id": i, "title": t, "text": x}) for i, t, x in rows) + "\n"
        )
    (root / "collections.yaml").write_text(
        "collections:\n"
        "  - {name: films, title: Films, sources: [films.jsonl]}\n"
        "  - {name: people, title: People, sources: [people.jsonl]}\n"
        "  - {name: secret, title: Secret, sources: [secret.jsonl]}\n"
        "channels:\n"
        "  C_PUBLIC: {allow: [films, people]}\n"
        "  C_FILMS: {allow: [films]}\n"
    )
    return load_collections(root / "collections.yaml")


class SpyBackend(FaultyBackend):
    """Records probes too, and fails or delays the searches whose query names ``target``."""

    def __init__(
        self, inner: SearchBackend, *, target: str = "", fail: bool = False, delay: float = 0.0, **kw: float
    ) -> None:
        super().__init__(inner, **kw)  # type: ignore[arg-type]
        self.target, self.fail, self.delay = target, fail, delay
        self.probed: list[str] = []

    async def search(
        self,
        collection: Collection,
        query: str,
        *,
        limit: int,
        broad: bool = False,
        meaning: str | None = None,
        corpus: Sequence[Collection] = (),
        audience: Audience | None = None,
    ) -> list[Passage]:
        if self.target and self.target in query:
            self.searches.append((collection.name, query))
            import asyncio

            from retrieval.errors import SearchUnavailableError

            await asyncio.sleep(self.delay)
            if self.fail:
                raise SearchUnavailableError(collection=collection.name, reason="ConnectionError")
        return await super().search(
            collection, query, limit=limit, broad=broad, meaning=meaning, corpus=corpus, audience=audience
        )

    async def probe(
        self,
        collections: Sequence[Collection],
        query: str,
        *,
        meaning: str | None = None,
        audience: Audience | None = None,
    ) -> dict[str, float]:
        self.probed.extend(c.name for c in collections)
        return await super().probe(collections, query, meaning=meaning, audience=audience)


@pytest.fixture
async def indexed(wiki: CollectionsConfig, embedded: SearchBackend) -> AsyncIterator[SearchBackend]:
    for collection in wiki.collections:
        await index_collection(embedded, collection, wiki)
    yield embedded


def _service(
    config: CollectionsConfig, backend: SearchBackend, *, question_timeout: float = 30, **limits: float
) -> ResearchService:
    return ResearchService(
        config=config,
        backend=backend,
        metrics=build_metrics(),
        limits=ResearchLimits(**limits),  # type: ignore[arg-type]
        question_timeout=question_timeout,
    )


async def _ask(
    service: ResearchService, text: str, channel: str = "C_PUBLIC"
) -> tuple[Answer, list[ProgressEvent]]:
    events: list[ProgressEvent] = []

    async def record(event: ProgressEvent) -> None:
        events.append(event)

    answer = await service.answer(
        service.make_question(text, channel=channel), surface="cli", on_event=record
    )
    return answer, events


def _cited_ids(answer: Answer) -> set[str]:
    return {c.passage.id for c in answer.citations}


async def test_a_bridge_question_is_followed_up_in_the_collection_that_holds_the_entity(
    wiki: CollectionsConfig, indexed: SearchBackend
) -> None:
    service = _service(wiki, indexed)
    answer, events = await _ask(service, QUESTION)
    # The director's paragraph shares no word with the question: only the film's paragraph names her.
    assert [p.id for p in answer.retrieved[:2]] == ["f1", "p1"]
    assert len(answer.rounds) == 2
    # Routed by a probe: the name is found where it is the subject (and where it is mentioned).
    assert answer.rounds[1].collections[0] == "people"
    assert answer.rounds[1].entities[0] == "Delia Fontaine"  # the best lead first
    follow = [e for e in events if isinstance(e, FollowUp)]
    assert len(follow) == 1 and follow[0].targets[0] == ("Delia Fontaine", "people")
    second = [e for e in events if isinstance(e, BranchFinished) and e.round == 2]
    assert ("people", "ok", "Delia Fontaine") in [(e.collection, e.status, e.entity) for e in second]
    assert "Virginia" in plain_answer(answer, wiki)
    assert {"f1", "p1"} <= _cited_ids(answer)
    assert not answer.partial
    payload = answer_json(answer, wiki, 0.1)
    assert payload["rounds"][1]["collections"][0] == "people"
    assert payload["rounds"][1]["queries"][0] == "Delia Fontaine"
    assert [c["name"] for c in payload["collections"]] == [o.name for o in answer.outcomes]


async def test_one_round_when_max_rounds_is_one(wiki: CollectionsConfig, indexed: SearchBackend) -> None:
    spy = SpyBackend(indexed)
    answer, events = await _ask(_service(wiki, spy, max_rounds=1), QUESTION)
    assert len(answer.rounds) == 1 and not any(isinstance(e, FollowUp) for e in events)
    assert not any("Fontaine" in query for _, query in spy.searches)


async def test_no_follow_up_when_another_round_would_not_fit_the_question_budget(
    wiki: CollectionsConfig, indexed: SearchBackend
) -> None:
    # The first round takes at least 0.4 s of a 1 s question: another like it would not fit.
    slow = SpyBackend(indexed, default_delay=0.4)
    answer, events = await _ask(_service(wiki, slow, question_timeout=1.0), QUESTION)
    assert answer.found and len(answer.rounds) == 1
    assert not any(isinstance(e, FollowUp) for e in events)


async def test_a_failed_follow_up_leaves_the_first_rounds_answer_and_says_it_is_partial(
    wiki: CollectionsConfig, indexed: SearchBackend
) -> None:
    broken = SpyBackend(indexed, target="Fontaine", fail=True)
    answer, _ = await _ask(_service(wiki, broken), QUESTION)
    assert answer.found and answer.partial
    assert FIRST_CLAIM in plain_answer(answer, wiki) and "f1" in _cited_ids(answer)
    assert answer.retrieved[0].id == "f1"
    first_round = [o for o in answer.outcomes if o.round == 1]
    assert first_round and all(o.status == "ok" or o.status == "empty" for o in first_round)
    second = [(o.name, o.status) for o in answer.outcomes if o.round == 2]
    assert ("people", "failed") in second and all(status == "failed" for _, status in second)
    text = answer_json(answer, wiki, 0.1)["answer"]
    assert "partial" in text and "People" in text


async def test_a_follow_up_that_runs_past_its_budget_times_out_without_holding_the_answer(
    wiki: CollectionsConfig, indexed: SearchBackend
) -> None:
    slow = SpyBackend(indexed, target="Fontaine", delay=5.0)
    started = time.monotonic()
    answer, _ = await _ask(_service(wiki, slow, branch_timeout=0.5), QUESTION)
    assert time.monotonic() - started < 5.0, "the slow follow-up must not hold the answer"
    assert answer.found and answer.partial and FIRST_CLAIM in plain_answer(answer, wiki)
    second = [(o.name, o.status) for o in answer.outcomes if o.round == 2]
    assert ("people", "timeout") in second and all(status == "timeout" for _, status in second)


async def test_follow_ups_never_search_a_collection_the_channel_may_not_search(
    wiki: CollectionsConfig, indexed: SearchBackend
) -> None:
    spy = SpyBackend(indexed)
    answer, _ = await _ask(_service(wiki, spy), QUESTION, channel="C_PUBLIC")
    assert "secret" not in {name for name, _ in spy.searches} | set(spy.probed)
    assert all(p.collection != "secret" for p in answer.retrieved)
    # A channel that may search films only: the director cannot be followed up anywhere else.
    spy = SpyBackend(indexed)
    answer, _ = await _ask(_service(wiki, spy), QUESTION, channel="C_FILMS")
    assert {name for name, _ in spy.searches} | set(spy.probed) <= {"films"}
    assert all(c in ("films",) for r in answer.rounds for c in r.collections)
    # Explicit in: keeps follow-ups inside the named collections.
    spy = SpyBackend(indexed)
    answer, _ = await _ask(_service(wiki, spy), f"in:films {QUESTION}", channel="C_PUBLIC")
    assert {name for name, query in spy.searches if query != QUESTION} <= {"films"}
    assert all(p.collection == "films" for p in answer.retrieved)
    # Films only name the director (the first hop): not found there. Only the question itself is
    # then tried in the other collections the channel may search, to name one that answers.
    assert not answer.found
    assert {name for name, query in spy.searches if query == QUESTION} <= {"films", "people"}


# --- with the fake model ---------------------------------------------------------------------------


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLM]:
    fake = await FakeLLM().start()
    yield fake
    await fake.stop()


async def _ask_with_model(
    wiki: CollectionsConfig, backend: SearchBackend, llm: FakeLLM
) -> tuple[Answer, list[ProgressEvent]]:
    metrics = build_metrics()
    model = build_chat_model(
        base_url=llm.url, api_key="sk-test", model="fake-model", observer=MetricsLLMObserver(metrics)
    )
    model._backoff = 0.05
    service = ResearchService(
        config=wiki,
        backend=backend,
        metrics=metrics,
        limits=ResearchLimits(),
        question_timeout=30,
        llm=model,
    )
    try:
        return await _ask(service, QUESTION)
    finally:
        await model.close()


async def test_the_model_proposes_follow_ups_that_are_used_when_valid(
    wiki: CollectionsConfig, indexed: SearchBackend, llm: FakeLLM
) -> None:
    proposal = {
        "entity": "Delia Fontaine novelist",
        "query": "Delia Fontaine novelist",
        "collection": "people",
    }
    llm.script("reflect", Reply(content=json.dumps({"follow_ups": [{**proposal, "source": 1}]})))
    # The rules' follow-up searches are still running when the model's proposals come: they join.
    spy = SpyBackend(indexed, target="Delia Fontaine", delay=0.5)
    answer, events = await _ask_with_model(wiki, spy, llm)
    assert llm.stages().count("reflect") == 1  # after the first round; the second is the last
    assert answer.rounds[1].entities[0] == "Delia Fontaine"  # the rules' follow-up, sent at once
    assert ("people", "Delia Fontaine novelist") in spy.searches  # and the model's, joined to it
    follow_ups = [e for e in events if isinstance(e, FollowUp)]
    assert [t for e in follow_ups for t in e.targets][-1] == ("Delia Fontaine novelist", "people")
    assert [p.id for p in answer.retrieved[:2]] == ["f1", "p1"]
    assert not any(isinstance(e, LLMFallback) and e.stage == "reflect" for e in events)


async def test_model_follow_ups_that_come_after_their_round_are_left(
    wiki: CollectionsConfig, indexed: SearchBackend, llm: FakeLLM
) -> None:
    proposal = {
        "entity": "Delia Fontaine novelist",
        "query": "Delia Fontaine novelist",
        "collection": "people",
    }
    llm.script("reflect", Reply(content=json.dumps({"follow_ups": [{**proposal, "source": 1}]}), delay=30))
    spy = SpyBackend(indexed, target="Delia Fontaine")
    started = time.monotonic()
    answer, events = await _ask_with_model(wiki, spy, llm)
    assert time.monotonic() - started < 20  # logical bound: the 30 s proposals were not waited for
    assert ("people", "Delia Fontaine novelist") not in spy.searches
    assert answer.rounds[1].entities[0] == "Delia Fontaine"
    assert [p.id for p in answer.retrieved[:2]] == ["f1", "p1"]
    assert any(isinstance(e, LLMFallback) and e.reason == "after its round" for e in events)


@pytest.mark.parametrize(
    "content",
    [
        # a collection the channel may not search, an unknown one, an empty query: none usable
        json.dumps(
            {
                "follow_ups": [
                    {"entity": "Delia Fontaine", "query": "Delia Fontaine", "collection": "secret"},
                    {"entity": "Delia Fontaine", "query": "Delia Fontaine", "collection": "nowhere"},
                    {"entity": "Delia Fontaine", "query": "  ", "collection": "people"},
                ]
            }
        ),
        "not json at all",
        json.dumps({"follow_ups": "Delia Fontaine"}),
    ],
)
async def test_unusable_model_follow_ups_fall_back_to_the_heuristic(
    wiki: CollectionsConfig, indexed: SearchBackend, llm: FakeLLM, content: str
) -> None:
    spy = SpyBackend(indexed)
    llm.script("reflect", Reply(content=content))
    answer, events = await _ask_with_model(wiki, spy, llm)
    assert any(isinstance(e, LLMFallback) and e.stage == "reflect" for e in events)
    assert "secret" not in {name for name, _ in spy.searches}
    assert answer.rounds[1].collections[0] == "people" and answer.rounds[1].entities[0] == "Delia Fontaine"
    assert [p.id for p in answer.retrieved[:2]] == ["f1", "p1"]
