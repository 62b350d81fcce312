"""The streamed plan's chunks, the answer's markdown pieces, and the edit-only memory."""

from bot.chat.progress import Row, StatusState
from bot.slack.mrkdwn import neutralize_markdown
from bot.slack.stream import (
    MAX_MARKDOWN_CHARS,
    EditOnlyWorkspaces,
    answer_markdown,
    plan_chunks,
    split_markdown,
)
from graph.models import Answer, AnswerSection, AnswerSentence
from retrieval.collections import CollectionsConfig


def _config() -> CollectionsConfig:
    return CollectionsConfig.model_validate(
        {
            "collections": [
                {"name": "eng", "title": "Eng <!here>", "description": "d", "sources": ["x"]},
                {"name": "sec", "title": "Security", "description": "d", "sources": ["x"]},
                {"name": "ppl", "title": "People", "description": "d", "sources": ["x"]},
            ]
        }
    )


def test_plan_chunks_map_each_row_to_a_task_state_with_safe_fields() -> None:
    state = StatusState(phase="researching")
    state.rows = {
        "eng": Row(),
        "sec": Row(started=True),
        "ppl": Row(
            status="ok",
            sources=2,
            seconds=0.4,
            started=True,
            links=(
                ("https://docs.example/a", "A @here"),
                ("javascript:alert(1)", "bad"),
                ("ftp://x/y", "ftp"),
            ),
        ),
    }
    state.follow_ups = {("Ada <@U1>", "sec"): Row(status="failed", reason="search unavailable", started=True)}
    chunks = plan_chunks(state, _config())
    assert chunks["plan"] == {"type": "plan_update", "title": "🔎 Researching 3 collections"}
    assert chunks["search-eng"]["status"] == "pending"
    assert "<!here>" not in chunks["search-eng"]["title"] and "&lt;!here&gt;" in chunks["search-eng"]["title"]
    assert chunks["search-sec"]["status"] == "in_progress"
    done = chunks["search-ppl"]
    assert done["status"] == "complete" and done["output"] == "2 sources" and done["details"] == "0.4 s"
    assert [s["url"] for s in done["sources"]] == ["https://docs.example/a"]
    assert "@here" not in done["sources"][0]["text"]
    follow = chunks["followup-1"]
    assert follow["status"] == "error" and follow["output"] == "Failed: search unavailable"
    assert "<@U1>" not in follow["title"]
    # Running tasks first, in planned order; finished ones after, in order of finishing.
    assert list(chunks) == ["plan", "search-eng", "search-sec", "search-ppl", "followup-1"]


def test_markdown_pieces_respect_the_limit_and_concatenate_back() -> None:
    text = neutralize_markdown("A *claim* about [links](https://x.example) and `code` [1]. " * 400).strip()
    assert "\\*claim\\*" in text and "\\[links\\]" in text and "https://" not in text
    pieces = split_markdown(text)
    assert len(pieces) > 1 and "".join(pieces) == text
    assert all(len(p) <= MAX_MARKDOWN_CHARS for p in pieces)
    unbroken = "x" * (MAX_MARKDOWN_CHARS - 1) + "\\[" + "y" * 10
    assert all(not p.endswith("\\") for p in split_markdown(unbroken))
    assert "".join(split_markdown(unbroken)) == unbroken


def test_a_refusing_workspace_is_edit_only_until_its_ttl_passes() -> None:
    now = [100.0]
    workspaces = EditOnlyWorkspaces(ttl=60, clock=lambda: now[0])
    assert not workspaces.edit_only("T1")
    assert workspaces.remember("T1") is True  # logged once
    assert workspaces.remember("T1") is False
    assert workspaces.edit_only("T1") and not workspaces.edit_only("T2")
    now[0] += 61
    assert not workspaces.edit_only("T1")


def test_a_list_an_answer_quotes_is_shown_item_by_item_and_stays_inert() -> None:
    sentences = (
        AnswerSentence(text="Open the following ports:", citations=(1,)),
        AnswerSentence(text="Port 22000/TCP: sync", citations=(1,), item=True),
        AnswerSentence(text="Port 21027/UDP <!channel> *now*", citations=(1,), item=True),
        AnswerSentence(text="Adapt the rules to a custom port.", citations=(1,)),
    )
    answer = Answer(
        mode="extractive", kind="factual", sections=(AnswerSection(collection="sec", sentences=sentences),)
    )
    lines = answer_markdown(answer, _config()).splitlines()
    assert lines[:3] == [
        "**Security**",
        "Open the following ports: \\[1\\]",
        "• Port 22000/TCP: sync \\[1\\]",
    ]
    assert (
        lines[3].startswith("• Port 21027/UDP") and "<!channel>" not in lines[3] and "*now*" not in lines[3]
    )
    assert lines[4:] == ["Adapt the rules to a custom port \\[1\\]."]
