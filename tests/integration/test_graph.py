"""The research graph end to end on the real embedded backend, with injected faults."""

import re
import time

import pytest

from bot.chat.render import answer_json
from bot.chat.service import QuestionTimeoutError, ResearchService
from bot.metrics import build_metrics
from graph.context import ResearchLimits
from graph.events import AnswerReady, BranchFinished, BranchStarted, PlanReady, ProgressEvent
from retrieval.backends import SearchBackend
from retrieval.collections import CollectionsConfig
from retrieval.ingest.pipeline import index_collection
from tests.fakes.backends import FaultyBackend


async def _indexed(backend: SearchBackend, config: CollectionsConfig) -> SearchBackend:
    for collection in config.collections:
        await index_collection(backend, collection, config)
    return backend


def _service(config: CollectionsConfig, backend: SearchBackend, **limits: float) -> ResearchService:
    return ResearchService(
        config=config,
        backend=backend,
        metrics=build_metrics(),
        limits=ResearchLimits(**limits),  # type: ignore[arg-type]
        question_timeout=30,
    )


async def test_failing_and_timed_out_collections_give_a_partial_answer_in_about_the_budget(
    embedded: SearchBackend, sample_config: CollectionsConfig
) -> None:
    await _indexed(embedded, sample_config)
    faulty = FaultyBackend(embedded, failing=["security"], delays={"people": 5.0})
    service = _service(sample_config, faulty, branch_timeout=0.5)
    question = service.make_question("in:engineering,security,people,product what happens during on-call?")
    events: list[ProgressEvent] = []

    async def record(event: ProgressEvent) -> None:
        events.append(event)

    started = time.monotonic()
    answer = await service.answer(question, surface="cli", on_event=record)
    elapsed = time.monotonic() - started

    # Logical, not a timing threshold: the answer did not wait for the 5 s search to end.
    assert elapsed < 5.0, "the slow collection must not hold the answer past its budget"
    statuses = {o.name: o.status for o in answer.outcomes}
    assert statuses == {
        "engineering": "ok",
        "security": "failed",
        "people": "timeout",
        "product": statuses["product"],
    }
    assert answer.partial and answer.found
    rendered = answer_json(answer, sample_config, elapsed)["answer"]
    assert "partial" in rendered and "Security policy" in rendered and "People policies" in rendered
    assert isinstance(events[0], PlanReady) and events[0].collections == (
        "engineering",
        "security",
        "people",
        "product",
    )
    assert {e.collection for e in events if isinstance(e, BranchStarted)} == set(statuses)
    finished = [e for e in events if isinstance(e, BranchFinished)]
    assert {e.collection: e.status for e in finished} == statuses
    assert isinstance(events[-1], AnswerReady)
    # Progress arrives as branches finish, not all at the end: the failure comes before the timeout.
    assert [e.collection for e in finished].index("security") < [e.collection for e in finished].index(
        "people"
    )
    text = service.metrics.registry.get_sample_value(
        "confer_subagents_total", {"collection": "people", "outcome": "timeout"}
    )
    assert text == 1.0
    assert (
        service.metrics.registry.get_sample_value(
            "confer_questions_total", {"surface": "cli", "outcome": "partial"}
        )
        == 1.0
    )


async def test_branches_run_in_parallel(embedded: SearchBackend, sample_config: CollectionsConfig) -> None:
    await _indexed(embedded, sample_config)
    slow = FaultyBackend(embedded, default_delay=0.3)
    service = _service(sample_config, slow)
    question = service.make_question("in:engineering,security,people,product how long is a session?")
    answer = await service.answer(question, surface="cli")
    assert len(answer.outcomes) == 4
    assert slow.max_in_flight == 4  # all four sub-agents were searching at the same time
    slow.max_in_flight = 0
    await service.answer(question, surface="cli", sequential=True)
    assert slow.max_in_flight == 1


async def test_a_question_past_its_budget_stops_its_searches(
    embedded: SearchBackend, sample_config: CollectionsConfig
) -> None:
    await _indexed(embedded, sample_config)
    faulty = FaultyBackend(embedded, probe_delay=30.0)  # routing hangs
    service = ResearchService(
        config=sample_config,
        backend=faulty,
        metrics=build_metrics(),
        limits=ResearchLimits(),
        question_timeout=0.5,
    )
    with pytest.raises(QuestionTimeoutError):
        await service.answer(service.make_question("what happens during on-call?"), surface="cli")
    assert faulty.max_in_flight == 1
    assert faulty.in_flight == 0, "the question's research must stop with it, not run on unobserved"


QUESTIONS = [
    "How do the engineering and security policies differ on production access?",
    "How long is parental leave?",
    "What is the API rate limit for Enterprise accounts?",
    "Who approves production access for the payments service?",
    "How quickly must the on-call engineer acknowledge a page?",
    "How are on-call engineers paid?",
    "How long are application logs kept?",
    "What happens when a laptop is lost?",
    "When can we deploy to production?",
    "How are webhooks signed?",
    "How long does Beacon keep shipment data after a contract ends?",
    "What is the difference between security incidents and engineering incidents?",
    "Can I work from another country?",
    "What are the password rules?",
    "How fast are critical vulnerabilities fixed?",
    "How often is the status page updated during an outage?",
    "Which is stricter about customer data, the product docs or the security policy?",
    "What does the sandbox do with tracking numbers ending in -EXC?",
    "How much is the home office budget?",
    "Compare code review rules with the emergency change process",
    "How do database migrations work?",
    "What must a vendor review check?",
    "How many days of paid time off do we get?",
    "Tell me about onboarding for engineers",
    "How is a SEV1 incident handled?",
    "What is the travel policy for hotels?",
    "How long are production session recordings kept?",
    "What happens to flaky tests?",
    "in:product how are API keys rotated?",
    "in:security,people what rules apply to devices when travelling abroad?",
]


@pytest.mark.parametrize("text", QUESTIONS)
async def test_every_citation_points_to_a_passage_retrieved_in_that_run(
    embedded: SearchBackend, sample_config: CollectionsConfig, text: str
) -> None:
    await _indexed(embedded, sample_config)
    service = _service(sample_config, embedded)
    answer = await service.answer(service.make_question(text), surface="cli")
    payload = answer_json(answer, sample_config, 0.0)
    assert answer.found, f"no answer for {text!r}"
    retrieved = {p.id: p for p in answer.retrieved}
    markers = {int(n) for n in re.findall(r"\[(\d+)\]", payload["answer"])}
    numbers = [c["n"] for c in payload["citations"]]
    assert sorted(numbers) == list(range(1, len(numbers) + 1)) and markers == set(numbers)
    for citation in payload["citations"]:
        passage = retrieved[citation["passage_id"]]
        assert citation["quote"] in passage.text  # extractive: the claim is quoted from its source
    for section in answer.sections:
        assert all(sentence.citations for sentence in section.sentences)


async def test_greetings_are_answered_without_searching(
    embedded: SearchBackend, sample_config: CollectionsConfig
) -> None:
    spy = FaultyBackend(embedded)
    service = _service(sample_config, spy)
    answer = await service.answer(service.make_question("hello!"), surface="cli")
    assert answer.mode == "direct" and answer.kind == "greeting" and not answer.outcomes
    assert spy.searches == []


class _BrokenBackend(FaultyBackend):
    async def search(self, collection, query, *, limit, broad=False, meaning=None, corpus=(), audience=None):  # type: ignore[no-untyped-def]
        if collection.name == "security":
            raise KeyError("unexpected reply shape")
        return await super().search(
            collection, query, limit=limit, broad=broad, meaning=meaning, corpus=corpus, audience=audience
        )


async def test_a_crashing_branch_degrades_the_answer_instead_of_killing_it(
    embedded: SearchBackend, sample_config: CollectionsConfig
) -> None:
    await _indexed(embedded, sample_config)
    service = _service(sample_config, _BrokenBackend(embedded))
    answer = await service.answer(
        service.make_question("in:engineering,security who approves production access?"), surface="cli"
    )
    assert {o.name: (o.status, o.reason) for o in answer.outcomes}["security"] == ("failed", "internal error")
    assert answer.found and answer.partial
