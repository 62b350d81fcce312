"""Questions in another language than the corpus: the model answers in the question's language,
and the answer keeps its citations only where the language-free checks (the judge's verbatim
quote, numbers, names) confirm each sentence. A translation that changes a number or a name is
dropped even when the judge says yes; without a judge nothing in another language is passed."""

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.chat.render import plain_answer
from bot.chat.service import ResearchService
from bot.metrics import build_metrics
from graph.context import ResearchLimits
from graph.llm.openai_client import build_chat_model
from graph.models import Answer
from retrieval.backends import SearchBackend
from retrieval.collections import CollectionsConfig, load_collections
from retrieval.ingest.pipeline import index_collection
from tests.fakes.llm_api import FakeLLM, Reply, stage_of

PLAN = {
    "kind": "factual",
    "collections": [
        {
            "name": "people",
            "query": "parental leave weeks",  # a model plans the search in the corpus' language
            "subquestion": "How many weeks of paid parental leave does a parent get?",
        }
    ],
}
QUESTIONS = {
    "es": "¿Cuántas semanas de permiso parental pagado recibe cada progenitor?",
    "de": "Wie viele Wochen bezahlte Elternzeit bekommt jeder Elternteil?",
}
TRANSLATIONS = {  # what an honest model writes for the claims it drafts (keyed by their words)
    "es": {
        "20 weeks": "Todo progenitor en Kestrel Systems, sea cual sea su género y como sea que llegue "
        "a serlo, recibe 20 semanas de permiso parental totalmente pagado.",
        "additional 4": "Las personas que dan a luz reciben, si lo desean, 4 semanas adicionales "
        "de permiso pagado antes de la fecha prevista del parto.",
        "three blocks": "El permiso parental puede tomarse en hasta tres bloques durante los primeros "
        "18 meses después de la llegada del niño.",
    },
    "de": {
        "20 weeks": "Jeder Elternteil bei Kestrel Systems erhält, unabhängig vom Geschlecht und davon, "
        "wie er Elternteil wird, 20 Wochen voll bezahlte Elternzeit.",
        "additional 4": "Gebärende Eltern erhalten auf Wunsch zusätzlich 4 Wochen bezahlten "
        "Urlaub vor dem errechneten Geburtstermin.",
        "three blocks": "Die Elternzeit kann in bis zu drei Blöcken in den ersten 18 Monaten nach der "
        "Ankunft des Kindes genommen werden.",
    },
}
CHANGES: dict[str, Callable[[str], str]] = {
    "number": lambda s: s.replace("20", "24").replace(" 4 ", " 6 ").replace("18", "28"),
    "name": lambda s: (
        s.replace("Kestrel Systems", "Osprey Labs")
        .replace("Las personas", "Las personas de Osprey Labs")
        .replace("Gebärende Eltern", "Gebärende Eltern bei Osprey Labs")
        .replace("El permiso parental puede", "En Osprey Labs el permiso parental puede")
        .replace("Die Elternzeit kann", "Bei Osprey Labs kann die Elternzeit")
    ),
}


def _translator(language: str, change: Callable[[str], str] = lambda s: s) -> Callable[[str], str]:
    def translate(sentence: str) -> str:
        for key, translated in TRANSLATIONS[language].items():
            if key in sentence:
                return change(translated)
        raise AssertionError(f"the fake drafted a claim this test does not translate: {sentence}")

    return translate


@pytest.fixture
async def indexed(sample_dir: object) -> AsyncIterator[SearchBackend]:
    from tests.integration.conftest import index_samples

    backend = await index_samples(sample_dir)  # type: ignore[arg-type]
    yield backend
    await backend.close()


async def _ask(config: CollectionsConfig, backend: SearchBackend, fake: FakeLLM, language: str) -> Answer:
    fake.script("plan", Reply(content=json.dumps(PLAN)))
    await fake.start()
    model = build_chat_model(base_url=fake.url, api_key="sk-test", model="fake-model")
    model._backoff = 0.05  # keep retries quick in tests
    service = ResearchService(
        config=config,
        backend=backend,
        metrics=build_metrics(),
        limits=ResearchLimits(max_rounds=1),  # the fake translates the first round's claims only
        llm=model,
        question_timeout=30,
    )
    try:
        return await service.answer(service.make_question(QUESTIONS[language]), surface="cli")
    finally:
        await model.close()
        await fake.stop()


def _texts(answer: Answer) -> list[str]:
    return [s.text for section in answer.sections for s in section.sentences]


@pytest.mark.parametrize("language", ["es", "de"])
async def test_a_question_in_another_language_gets_a_cited_model_written_answer_in_it(
    sample_config: CollectionsConfig, indexed: SearchBackend, language: str
) -> None:
    fake = FakeLLM(translate=_translator(language))
    answer = await _ask(sample_config, indexed, fake, language)
    assert answer.mode == "llm"
    # The claims drafted (which of the parental-leave sentences) depend on which searches finish
    # first, the rules' or the model's plan: every sentence said is one of the honest translations.
    assert len(_texts(answer)) >= 2 and set(_texts(answer)) <= set(TRANSLATIONS[language].values())
    assert all(s.citations for section in answer.sections for s in section.sentences)
    assert answer.citations
    assert all(c.passage.title.startswith("Parental leave policy") for c in answer.citations)
    assert "judge" in fake.stages()


@pytest.mark.parametrize("language", ["es", "de"])
@pytest.mark.parametrize("kind", sorted(CHANGES))
async def test_a_translation_that_changes_a_number_or_a_name_is_dropped_even_if_the_judge_lies(
    sample_config: CollectionsConfig, indexed: SearchBackend, language: str, kind: str
) -> None:
    change = CHANGES[kind]
    fake = FakeLLM(translate=_translator(language, change), lying_judge=True)
    answer = await _ask(sample_config, indexed, fake, language)
    changed = [change(t) for t in TRANSLATIONS[language].values()]
    assert set(changed).isdisjoint(TRANSLATIONS[language].values()), "every translation is changed"
    assert "judge" in fake.stages()
    assert not set(changed) & set(_texts(answer))
    # Nothing the model wrote survived: Confer falls back to its extractive answer, which for a
    # question in another language than the documents may plainly say it found nothing.
    assert answer.mode == "extractive"


async def test_when_the_judge_fails_another_language_is_not_passed_unverified(
    sample_config: CollectionsConfig, indexed: SearchBackend
) -> None:
    fake = FakeLLM(translate=_translator("es"))
    fake.script("judge", Reply(status=500), times=10)
    answer = await _ask(sample_config, indexed, fake, "es")
    assert not set(TRANSLATIONS["es"].values()) & set(_texts(answer))
    assert answer.mode == "extractive"  # the guards cannot read Spanish: nothing model-written passes


GERMAN_HANDBOOK = """# Urlaub

Jede Mitarbeiterin und jeder Mitarbeiter erhält 30 Urlaubstage im Jahr.
Nicht genommene Urlaubstage verfallen am 31. März des Folgejahres.
"""
QUERIES = {"German": "Urlaubstage im Jahr"}  # what a model writes for "vacation days per year"


async def _german_handbook(tmp_path: Path, backend: SearchBackend, *, declared: bool) -> CollectionsConfig:
    (tmp_path / "urlaub.md").write_text(GERMAN_HANDBOOK, encoding="utf-8")
    language = ", language: de" if declared else ""
    (tmp_path / "collections.yaml").write_text(
        f"collections:\n  - {{name: personal, title: Personalhandbuch, sources: [urlaub.md]{language}}}\n",
        encoding="utf-8",
    )
    config = load_collections(tmp_path / "collections.yaml")
    for collection in config.collections:
        await index_collection(backend, collection, config)
    return config


async def _ask_english(config: CollectionsConfig, backend: SearchBackend, fake: FakeLLM | None) -> Answer:
    model = None
    if fake is not None:
        await fake.start()
        model = build_chat_model(base_url=fake.url, api_key="sk-test", model="fake-model")
    service = ResearchService(
        config=config,
        backend=backend,
        metrics=build_metrics(),
        limits=ResearchLimits(),
        llm=model,
        question_timeout=30,
    )
    try:
        question = "How many vacation days does each employee get per year?"
        return await service.answer(service.make_question(question), surface="cli")
    finally:
        if model is not None and fake is not None:
            await model.close()
            await fake.stop()


@pytest.mark.parametrize("declared", [True, False])
async def test_the_planner_writes_a_collections_queries_in_the_language_it_declares(
    embedded: SearchBackend, tmp_path: Path, declared: bool
) -> None:
    fake = FakeLLM(plan_query=lambda question, language: QUERIES.get(language, question))
    if declared:
        # The fake drafts by shared words, which an English question and a German passage have
        # none of; a model reads the German rule as the answer, as scripted here.
        rule = GERMAN_HANDBOOK.splitlines()[2]
        claim = {"claims": [{"passage": 1, "start": 0, "end": len(rule)}]}
        fake.script("draft", Reply(content=json.dumps(claim), when=lambda user: rule in user))
    config = await _german_handbook(tmp_path, embedded, declared=declared)
    answer = await _ask_english(config, embedded, fake)
    [plan_request] = [r for r in fake.requests if stage_of(r["messages"][0]["content"]) == "plan"]
    told = plan_request["messages"][1]["content"]
    if declared:
        # Told the documents are German, the model searched in German and found the rule.
        assert "Documents in: German." in told
        assert answer.found
        assert any("30 Urlaubstage im Jahr" in c.quote for c in answer.citations)
    else:
        # Undeclared, the collection counts as English: the English question finds nothing.
        assert "Documents in: English." in told
        assert not answer.found


async def test_without_a_model_an_english_question_on_declared_german_documents_says_so(
    embedded: SearchBackend, tmp_path: Path
) -> None:
    config = await _german_handbook(tmp_path, embedded, declared=True)
    answer = await _ask_english(config, embedded, None)
    assert not answer.found
    assert answer.other_language == "en"
    text = plain_answer(answer, config)
    assert "Your question looks like English, and the documents may be in another language" in text
