import json
from pathlib import Path

from bot.chat.progress import Row, StatusState
from bot.chat.render import AnswerFooter
from bot.teams.cards import MAX_CARD_CHARS, answer_card, status_card
from graph.answer.suggestions import Suggestion
from graph.models import Answer, AnswerSection, AnswerSentence, Citation, CollectionOutcome
from retrieval.collections import Collection, CollectionsConfig
from retrieval.passages import Passage

CONFIG = CollectionsConfig(
    collections=(
        Collection(name="eng", title="Engineering handbook", sources=("x",)),
        Collection(name="sec", title="Security policy", sources=("y",)),
    ),
    base_dir=Path(),
)


def _passage(n: int, url: str = "") -> Passage:
    return Passage(
        id=f"p{n}", collection="eng", doc_id="d", source=f"docs/{n}.md", title=f"Doc {n}", text="t", url=url
    )


def _answer(sentences: int = 1, citations: int = 1, failed: bool = False) -> Answer:
    outcomes = [CollectionOutcome(name="eng", status="ok", sources=citations, seconds=0.1)]
    if failed:
        outcomes.append(
            CollectionOutcome(
                name="sec", status="failed", sources=0, seconds=1.0, reason="search unavailable"
            )
        )
    return Answer(
        mode="extractive",
        kind="factual",
        sections=(
            AnswerSection(
                collection="eng",
                sentences=tuple(
                    AnswerSentence(text=f"Fact number {i} about deploys.", citations=(i % citations + 1,))
                    for i in range(sentences)
                ),
            ),
        ),
        citations=tuple(
            Citation(n=i + 1, passage=_passage(i + 1, f"https://docs.example/{i + 1}"), quote="q")
            for i in range(citations)
        ),
        outcomes=tuple(outcomes),
    )


def _texts(card: dict[str, object]) -> list[str]:
    return [block["text"] for block in card["body"]]  # type: ignore[attr-defined]


def test_status_card_shows_one_line_per_collection_then_the_summary() -> None:
    state = StatusState(phase="researching", rows={"eng": Row("ok", 3, 0.4), "sec": Row()})
    assert _texts(status_card(state, CONFIG)) == [
        "🔎 Researching 2 collections:",
        "✅ Engineering handbook: done, 3 sources (0.4 s)",
        "🔄 Security policy: searching…",
    ]
    state.follow_ups[("Ada <at>Lovelace</at>", "sec")] = Row()
    assert _texts(status_card(state, CONFIG))[-1] == (
        "🔄 Following up: Ada \\<at\\>Lovelace\\</at\\> in Security policy: searching…"
    )
    state.phase, state.summary = "done", "✅ Done in 1.0 s · 2 collections · 3 sources"
    assert _texts(status_card(state, CONFIG)) == [state.summary]
    queued = StatusState(phase="queued", queue_position=2)
    assert _texts(status_card(queued, CONFIG)) == ["⏳ Queued: 2 questions ahead of yours."]


def test_status_card_shows_follow_ups_with_the_entity_neutralized() -> None:
    state = StatusState(phase="researching", rows={"eng": Row("ok", 3, 0.4)})
    state.follow_ups[("Delia Fontaine", "sec")] = Row()
    state.follow_ups[("@here [x](https://evil.example)", "eng")] = Row("failed", 0, 0.2, "search unavailable")
    lines = _texts(status_card(state, CONFIG))
    assert lines[2] == "🔄 Following up: Delia Fontaine in Security policy: searching…"
    assert "Following up:" in lines[3] and "Engineering handbook: failed" in lines[3]
    assert "[x](https://evil.example)" not in lines[3]  # no injected link (Teams mentions need entities)


def test_answer_card_has_markers_sources_partial_note_and_feedback() -> None:
    card = answer_card(_answer(sentences=2, citations=2, failed=True), CONFIG)
    texts = _texts(card)
    assert texts[0] == "Engineering handbook"
    assert texts[1] == "Fact number 0 about deploys [1]. Fact number 1 about deploys [2]."
    assert "This answer is partial: Security policy (search unavailable)" in texts[2]
    assert texts[3:] == [
        "Sources",
        "[1] [Doc 1](https://docs.example/1) · Engineering handbook",
        "[2] [Doc 2](https://docs.example/2) · Engineering handbook",
    ]
    [up, down] = card["actions"]
    assert up["type"] == "Action.Submit" and up["data"]["confer_feedback"] == "up"
    assert down["type"] == "Action.ShowCard"  # 👎 opens the reason form inside the card
    [send] = down["card"]["actions"]
    assert send["data"]["confer_feedback"] == "down" and send["data"]["answer"] == up["data"]["answer"]
    [_, reason, comment] = down["card"]["body"]
    assert [c["value"] for c in reason["choices"]] == ["wrong", "incomplete", "outdated", "other"]
    assert reason["isRequired"] is True and comment["type"] == "Input.Text" and comment["isMultiline"]


def test_answer_card_votes_carry_the_question_id_and_suggestions_their_question() -> None:
    hostile = Suggestion(question="Tell me about <at>Ada</at> " + "x" * 100)
    targeted = Suggestion(question="How long is leave?", targets=("sec",))
    footer = AnswerFooter(question_id="q42", suggestions=(hostile, targeted))
    card = answer_card(_answer(), CONFIG, footer)
    [up, down, first, second] = card["actions"]
    assert up["data"] == {"confer_feedback": "up", "answer": "q42"}
    assert down["card"]["actions"][0]["data"] == {"confer_feedback": "down", "answer": "q42"}
    assert len(first["title"]) <= 75 and "<" not in first["title"] and first["title"].endswith("…")
    assert first["data"] == {"confer_ask": hostile.question}
    assert (second["title"], second["data"]) == (
        "Ask in Security policy",
        {"confer_ask": "in:sec How long is leave?"},
    )


def test_a_huge_answer_is_cut_to_fit_teams_message_size() -> None:
    card = answer_card(_answer(sentences=2000, citations=60), CONFIG)
    assert len(json.dumps(card, ensure_ascii=False)) <= MAX_CARD_CHARS
    texts = _texts(card)
    assert texts[0] == "Engineering handbook"
    assert texts[1].startswith("Fact number 0 about deploys [1].") and texts[1].endswith(" …")
    assert texts[-2].startswith("[20] ") and texts[-1] == "…and 40 more sources."
    assert "actions" in card


def test_a_finished_follow_ups_card_keeps_how_it_was_read() -> None:
    state = StatusState(
        phase="researching", rows={"eng": Row("ok", 3, 0.4)}, searching="can it be <at>split</at>?"
    )
    assert _texts(status_card(state, CONFIG))[:2] == [
        "Searching: can it be \\<at\\>split\\</at\\>?",
        "🔎 Researching 1 collection:",
    ]
    state.phase, state.summary = "done", "✅ Done in 1.0 s · 1 collection · 3 sources"
    assert _texts(status_card(state, CONFIG)) == [
        state.summary,
        "Searching: can it be \\<at\\>split\\</at\\>?",
    ]


def test_a_list_an_answer_quotes_is_shown_item_by_item_and_stays_inert() -> None:
    intro = AnswerSentence(text="Open the following ports:", citations=(1,))
    items = [
        AnswerSentence(text="Port 22000/TCP: sync", citations=(1,), item=True),
        AnswerSentence(
            text="**Port** 21027/UDP: see [this](https://evil.example)", citations=(1,), item=True
        ),
    ]
    after = AnswerSentence(text="Adapt the rules to a custom port.", citations=(1,))
    answer = _answer().model_copy(
        update={"sections": (AnswerSection(collection="eng", sentences=(intro, *items, after)),)}
    )
    text = _texts(answer_card(answer, CONFIG))[1]
    assert text.startswith("Open the following ports: [1]\n\n• Port 22000/TCP: sync [1]\n\n• ")
    assert text.endswith("\n\nAdapt the rules to a custom port [1].")
    assert "**Port**" not in text and "[this](" not in text  # each item neutralized as any sentence


def test_a_not_found_reply_shows_the_list_its_closest_sentence_introduces_item_by_item() -> None:
    """As in an answer: each item on a line of its own, each inert, Confer's own words escaped."""
    intro = AnswerSentence(text="Open the following ports:", citations=(1,))
    items = (
        AnswerSentence(text="Port 22000/TCP: sync", citations=(1,), item=True),
        AnswerSentence(
            text="**Port** 21027/UDP: see [this](https://evil.example)", citations=(1,), item=True
        ),
    )
    answer = _answer().model_copy(
        update={"sections": (), "closest": (intro, *items), "retrieved": (_passage(1),)}
    )
    text = _texts(answer_card(answer, CONFIG))[0]
    assert text.startswith(
        "I searched Engineering handbook but found no direct answer. The closest I found, which may not "
        "answer it: Open the following ports: [1]\n\n• Port 22000/TCP: sync [1]\n\n• "
    )
    assert "**Port**" not in text and "[this](" not in text


def test_a_not_found_reply_shows_the_code_its_closest_sentence_introduces_in_monospace_lines() -> None:
    intro = AnswerSentence(
        text="Allow the port by running:", citations=(1,), code="if ready:\n\tufw allow 8443  # <at>x</at>"
    )
    answer = _answer().model_copy(
        update={"sections": (), "closest": (intro,), "retrieved": (_passage(1),), "suggested": ("sec",)}
    )
    body = answer_card(answer, CONFIG)["body"]
    assert [b["text"] for b in body[:4]] == [
        "I searched Engineering handbook but found no direct answer. The closest I found, which may not "
        "answer it: Allow the port by running: [1]",
        "if ready:",
        "\u00a0" * 4 + "ufw allow 8443 # \\<at\\>x\\</at\\>",  # its indentation kept, its text inert
        "Security policy may cover it: ask again with in:sec.",
    ]
    assert [b.get("fontType") for b in body[:4]] == [None, "Monospace", "Monospace", None]
