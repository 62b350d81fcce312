from pathlib import Path

from bot.progress import Row, StatusState
from bot.slack.blocks import (
    MAX_BLOCKS,
    MAX_CONTEXT_ELEMENTS,
    MAX_SECTION_CHARS,
    answer_message,
    status_text,
)
from graph.models import Answer, AnswerSection, AnswerSentence, Citation
from retrieval.collections import Collection, CollectionsConfig
from retrieval.passages import Passage

CONFIG = CollectionsConfig(collections=(Collection(name="c", title="Coll", sources=("x",)),), base_dir=Path())


def _answer(sentences: int, citations: int, words: int = 30) -> Answer:
    passages = [
        Passage(
            id=f"p{i}",
            collection="c",
            doc_id="d",
            source="s.md",
            title=f"Doc {i}",
            url=f"https://d.example/{i}",
            text="x",
        )
        for i in range(citations)
    ]
    sentence = " ".join(["word"] * words) + "."
    return Answer(
        mode="extractive",
        kind="factual",
        sections=(
            AnswerSection(
                collection="c",
                sentences=tuple(
                    AnswerSentence(text=sentence, citations=(i % citations + 1,)) for i in range(sentences)
                ),
            ),
        ),
        citations=tuple(Citation(n=i + 1, passage=p, quote="x") for i, p in enumerate(passages)),
    )


def test_long_answers_are_split_and_stay_within_slack_limits() -> None:
    blocks, text = answer_message(_answer(sentences=60, citations=25), CONFIG)
    assert len(blocks) <= MAX_BLOCKS
    sections = [b for b in blocks if b["type"] == "section"]
    assert len(sections) > 1 and all(len(b["text"]["text"]) <= MAX_SECTION_CHARS for b in sections)
    assert all(len(b["elements"]) <= MAX_CONTEXT_ELEMENTS for b in blocks if b["type"] == "context")
    assert len(text) <= 4000
    total = sum(len(b["text"]["text"]) for b in sections)
    assert total <= 11_000


def test_sources_link_titles_and_feedback_buttons_are_present() -> None:
    blocks, _ = answer_message(_answer(sentences=2, citations=2), CONFIG)
    sources = [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    assert "*[1]* <https://d.example/0|Doc 0> · Coll" in sources
    [actions] = [b for b in blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in actions["elements"]] == ["feedback_up", "feedback_down"]


def test_status_shows_the_follow_up_round_with_the_entity_escaped() -> None:
    state = StatusState(phase="researching", rows={"c": Row("ok", 2, 0.1)})
    state.follow_ups[("Adriana Trigiani", "c")] = Row()
    state.follow_ups[("<!channel> <https://evil.example|click>", "c")] = Row("ok", 1, 0.2)
    lines = status_text(state, CONFIG).splitlines()
    assert lines[2] == "• Following up: Adriana Trigiani in Coll: searching…"
    assert lines[3].startswith("✅ Following up: ") and lines[3].endswith(" in Coll: done, 1 source (0.2 s)")
    assert "<!channel>" not in lines[3] and "<https://" not in lines[3]
