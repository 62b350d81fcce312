from pathlib import Path

from bot.chat.render import answer_json, cite, plain_answer
from graph.models import Answer, AnswerSection, AnswerSentence, Citation, CollectionOutcome, ResearchRound
from retrieval.collections import Collection, CollectionsConfig
from retrieval.passages import Passage

CONFIG = CollectionsConfig(
    collections=(
        Collection(name="eng", title="Engineering handbook", sources=("x",)),
        Collection(name="sec", title="Security policy", sources=("y",)),
    ),
    base_dir=Path(),
)
PASSAGE = Passage(
    id="p1", collection="eng", doc_id="d", source="docs/deploys.md", title="Deploys", text="Deploys roll out."
)


def test_markers_go_before_the_closing_punctuation() -> None:
    assert cite(AnswerSentence(text="Deploys roll out.", citations=(1, 2))) == "Deploys roll out [1][2]."
    assert cite(AnswerSentence(text="A list item", citations=(3,))) == "A list item [3]"
    assert cite(AnswerSentence(text='He said "go."', citations=(1,))) == 'He said "go [1]."'


def test_json_matches_the_command_line_contract() -> None:
    answer = Answer(
        mode="extractive",
        kind="factual",
        sections=(
            AnswerSection(
                collection="eng", sentences=(AnswerSentence(text="Deploys roll out.", citations=(1,)),)
            ),
        ),
        citations=(Citation(n=1, passage=PASSAGE, quote="Deploys roll out."),),
        outcomes=(
            CollectionOutcome(name="eng", status="ok", sources=1, seconds=0.1),
            CollectionOutcome(
                name="sec", status="timeout", sources=0, seconds=2.0, reason="time budget exceeded"
            ),
        ),
        rounds=(
            ResearchRound(collections=("eng", "sec"), queries=("deploys", "deploys")),
            ResearchRound(collections=("eng",), queries=("Blue Green",), entities=("Blue Green",)),
        ),
    )
    payload = answer_json(answer, CONFIG, 1.23456)
    assert set(payload) == {
        "answer",
        "mode",
        "found",
        "citations",
        "collections",
        "rounds",
        "seconds",
        "trace",
    }
    assert (
        payload["found"] is True and payload["trace"] is None
    )  # the graph sets it (an answer built here has none)
    assert payload["rounds"] == [
        {"collections": ["eng", "sec"], "queries": ["deploys", "deploys"]},
        {"collections": ["eng"], "queries": ["Blue Green"]},
    ]
    assert payload["mode"] == "extractive" and payload["seconds"] == 1.2346
    assert payload["citations"] == [
        {
            "n": 1,
            "title": "Deploys",
            "url": "docs/deploys.md",
            "collection": "eng",
            "passage_id": "p1",
            "quote": "Deploys roll out.",
        }
    ]
    assert payload["collections"][1] == {"name": "sec", "status": "timeout", "sources": 0, "seconds": 2.0}
    assert payload["answer"].startswith("Engineering handbook: Deploys roll out [1].")
    assert "partial" in payload["answer"] and "Security policy (timed out)" in payload["answer"]


def test_no_findings_say_where_it_looked() -> None:
    answer = Answer(
        mode="extractive",
        kind="factual",
        outcomes=(CollectionOutcome(name="eng", status="empty", sources=0, seconds=0.1),),
    )
    assert "Engineering handbook" in plain_answer(answer, CONFIG)
    everything_failed = Answer(
        mode="extractive",
        kind="factual",
        outcomes=(
            CollectionOutcome(name="eng", status="failed", sources=0, seconds=0.1, reason="not indexed"),
        ),
    )
    text = plain_answer(everything_failed, CONFIG)
    assert "No collection could be searched" in text and "not indexed yet" in text


def test_model_written_answers_have_no_collection_heading() -> None:
    from bot.slack.blocks import answer_message

    answer = Answer(
        mode="llm",
        kind="comparative",
        sections=(
            AnswerSection(
                collection="", sentences=(AnswerSentence(text="Deploys roll out.", citations=(1,)),)
            ),
        ),
        citations=(Citation(n=1, passage=PASSAGE, quote="Deploys roll out."),),
    )
    assert plain_answer(answer, CONFIG) == "Deploys roll out [1]."
    assert answer_json(answer, CONFIG, 0.5)["mode"] == "llm"
    blocks, text = answer_message(answer, CONFIG)
    assert blocks[0]["text"]["text"] == "Deploys roll out [1]." and text == "Deploys roll out [1]."
