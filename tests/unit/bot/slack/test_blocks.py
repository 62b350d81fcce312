from pathlib import Path

from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.chat.progress import Row, StatusState
from bot.chat.render import AnswerFooter
from bot.slack.blocks import (
    MAX_BLOCKS,
    MAX_CONTEXT_ELEMENTS,
    MAX_SECTION_CHARS,
    answer_actions,
    answer_message,
    feedback_form,
    status_text,
    stream_footer,
)
from graph.answer.suggestions import Suggestion
from graph.models import Answer, AnswerSection, AnswerSentence, Citation, CollectionOutcome
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


def test_a_code_block_cut_between_two_sections_is_closed_and_opened_again() -> None:
    """A long section is posted in pieces; one cut inside the code an answer shows leaves no fence
    open: each piece is well-formed mrkdwn, and every line of the code is posted."""
    answer = _answer(sentences=3, citations=1, words=300)
    code = "\n".join(f"run step {i} --with <!channel>" for i in range(80))
    intro = AnswerSentence(text="Run these:", citations=(1,), code=code)
    section = answer.sections[0]
    answer = answer.model_copy(
        update={"sections": (section.model_copy(update={"sentences": (*section.sentences, intro)}),)}
    )
    blocks, _ = answer_message(answer, CONFIG)
    texts = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert len(texts) > 1 and all(len(t) <= MAX_SECTION_CHARS for t in texts)
    assert all(t.count("```") % 2 == 0 for t in texts)
    posted = "\n".join(texts)
    assert all(f"run step {i} --with &lt;!channel&gt;" in posted for i in range(80))
    assert "<!channel>" not in posted


def test_sources_link_titles_and_feedback_buttons_are_present() -> None:
    footer = AnswerFooter(question_id="q123", suggestions=(Suggestion(question="Tell me about Doc 1"),))
    blocks, _ = answer_message(_answer(sentences=2, citations=2), CONFIG, footer)
    sources = [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    assert "*[1]* <https://d.example/0|Doc 0> · Coll" in sources
    [feedback] = [b for b in blocks if b["type"] == "context_actions"]
    [buttons] = feedback["elements"]
    assert buttons["type"] == "feedback_buttons"
    assert buttons["positive_button"]["value"] == "up:q123"
    assert buttons["negative_button"]["value"] == "down:q123"
    [suggested] = [b for b in blocks if b["type"] == "actions"]
    assert [e["value"] for e in suggested["elements"]] == ["Tell me about Doc 1"]
    assert blocks[-2:] == [feedback, suggested]  # under the sources
    for block in blocks:  # the shapes slack_sdk's Block Kit models accept
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()
        assert parsed.to_dict()["type"] == block["type"]


def test_suggestion_buttons_are_inert_and_within_slack_limits() -> None:
    hostile = Suggestion(question="Tell me about <!channel> <https://evil.example|click> @here " + "x" * 90)
    targeted = Suggestion(question="How long is parental leave?", targets=("c",))
    footer = AnswerFooter(question_id="q1", suggestions=(hostile, targeted, hostile, hostile))
    [_, actions] = answer_actions(_answer(sentences=1, citations=1), footer, CONFIG)
    labels = [e["text"]["text"] for e in actions["elements"]]
    assert len(labels) == 3
    assert all(len(label) <= 75 and "<" not in label and ">" not in label for label in labels)
    assert "@here" not in labels[0] and "https:" not in labels[0] and labels[0].endswith("…")
    assert labels[1] == "Ask in Coll"
    assert actions["elements"][1]["value"] == "in:c How long is parental leave?"
    assert len({e["action_id"] for e in actions["elements"]}) == 3


def test_a_streamed_answer_ends_with_the_same_sources_and_actions_as_a_posted_one() -> None:
    footer = AnswerFooter(question_id="q9", suggestions=(Suggestion(question="Tell me about Doc 1"),))
    answer = _answer(sentences=2, citations=25)
    posted, _ = answer_message(answer, CONFIG, footer)
    closing = stream_footer(answer, CONFIG, footer)
    assert [b["type"] for b in closing][-2:] == ["context_actions", "actions"]
    assert closing == [b for b in posted if b["type"] != "section"]  # everything under the answer text
    assert len(closing) <= MAX_BLOCKS


def test_a_not_found_answer_has_feedback_buttons_and_may_suggest() -> None:
    # A wrong "not found" is the most useful vote; a greeting or the usage takes none.
    empty = Answer(mode="extractive", kind="factual", suggested=("c",))
    footer = AnswerFooter(question_id="q1", suggestions=(Suggestion(question="Why?", targets=("c",)),))
    assert [b["type"] for b in answer_actions(empty, footer, CONFIG)] == ["context_actions", "actions"]
    assert [b["type"] for b in stream_footer(empty, CONFIG, footer)] == ["context_actions", "actions"]
    posted, _ = answer_message(empty, CONFIG, footer)
    assert [b["type"] for b in posted][-2:] == ["context_actions", "actions"]
    assert answer_actions(empty, None, CONFIG) == []
    greeting = Answer(mode="direct", kind="greeting")
    assert answer_actions(greeting, AnswerFooter(question_id="q2"), CONFIG) == []


def test_the_feedback_form_offers_the_four_reasons_and_optional_text() -> None:
    view = feedback_form(vote_id="v1", channel="C1", thread_ts="1.2")
    View(**view).validate_json()
    [_, reason, comment] = view["blocks"]
    assert [o["value"] for o in reason["element"]["options"]] == ["wrong", "incomplete", "outdated", "other"]
    assert comment["optional"] is True and comment["element"]["type"] == "plain_text_input"


def test_status_shows_the_follow_up_round_with_the_entity_escaped() -> None:
    state = StatusState(phase="researching", rows={"c": Row("ok", 2, 0.1)})
    state.follow_ups[("Delia Fontaine", "c")] = Row()
    state.follow_ups[("<!channel> <https://evil.example|click>", "c")] = Row("ok", 1, 0.2)
    lines = status_text(state, CONFIG).splitlines()
    assert lines[2] == "• Following up: Delia Fontaine in Coll: searching…"
    assert lines[3].startswith("✅ Following up: ") and lines[3].endswith(" in Coll: done, 1 source (0.2 s)")
    assert "<!channel>" not in lines[3] and "<https://" not in lines[3]


def test_a_posted_answer_and_a_not_found_reply_show_a_command_as_an_inert_code_block() -> None:
    # The post-and-edit path: what a sentence introduces ("… by running:") follows it as mrkdwn code.
    intro = AnswerSentence(
        text="Allow the port by running:",
        citations=(1,),
        code='ufw allow 8443 && echo "<!channel> ``` <@U1>"',
    )
    after = AnswerSentence(text="Other firewalls need a rule of their own.", citations=(1,))
    code = 'ufw allow 8443 &amp;&amp; echo "&lt;!channel&gt; `\u200b`\u200b` &lt;@U1&gt;"'
    answer = _answer(sentences=1, citations=1)
    found = answer.model_copy(update={"sections": (AnswerSection(collection="c", sentences=(intro, after)),)})
    blocks, _ = answer_message(found, CONFIG)
    assert blocks[0]["text"]["text"] == (
        f"*Coll*\nAllow the port by running: [1]\n```\n{code}\n```\n"
        "Other firewalls need a rule of their own [1]."
    )
    closest = Answer(
        mode="extractive",
        kind="factual",
        outcomes=(CollectionOutcome(name="c", status="ok", sources=1, seconds=0.1),),
        retrieved=tuple(c.passage for c in answer.citations),
        citations=answer.citations,
        closest=(intro,),
        suggested=("c",),
    )
    blocks, _ = answer_message(closest, CONFIG)
    assert blocks[0]["text"]["text"] == (
        "I searched Coll but found no direct answer. The closest I found, which may not answer it: "
        f"Allow the port by running: [1]\n```\n{code}\n```\nColl may cover it: ask again with in:c."
    )
