"""``confer index`` with a Confluence space, against a fake Confluence Cloud at the HTTP boundary
(tests/fakes/confluence.py): full and incremental syncs, 429, an interrupted sync, bad credentials."""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.terminal.cli import main
from retrieval.backends.embedded import DATABASE_NAME
from retrieval.collections import ConfluenceSource
from retrieval.connectors import PoliteClient, SyncState, sync_source
from retrieval.connectors.confluence import ConfluenceConnector
from retrieval.connectors.credentials import ConfluenceCredentials
from tests.fakes.clock import FakeClock
from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence, serve_confluence
from tests.fakes.pdf import pdf_bytes


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    with serve_confluence() as fake:
        fake.put("100", "Handbook", "<p>Everything a Kestrel employee needs to know, page by page.</p>")
        fake.put(
            "101",
            "Travel",
            "<h2>Trains</h2><p>Trains are booked in second class for trips under four hours.</p>",
            parent="100",
        )
        fake.put(
            "102",
            "Expenses",
            "<p>Hotel stays are reimbursed up to 150 euros per night; receipts are kept seven years.</p>",
            parent="100",
        )
        yield fake


@pytest.fixture
def kb(tmp_path: Path, wiki: FakeConfluence, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "standup.md").write_text("# Stand-up\n\nThe stand-up starts at 9:30.\n")
    (tmp_path / "collections.yaml").write_text(
        "collections:\n"
        "  - name: notes\n    title: Notes\n    sources: [notes/*.md]\n"
        "  - name: handbook\n    title: Handbook\n"
        f"    sources: [{{confluence: {{url: '{wiki.base}/wiki', space: ENG, rate: 50}}}}]\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONFER_DATA_DIR", str(tmp_path / ".confer"))
    monkeypatch.setenv("CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", TOKEN)
    return tmp_path


def passages(kb: Path, collection: str = "handbook") -> list[tuple[str, str, str, str]]:
    """(doc_id, title, url, text) of every passage the index holds for ``collection``."""
    with sqlite3.connect(kb / ".confer" / DATABASE_NAME) as db:
        rows = db.execute(
            "SELECT doc_id, title, url, text FROM passages WHERE collection = ? ORDER BY doc_id, id",
            (collection,),
        ).fetchall()
    return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]


def test_a_space_is_indexed_with_its_hierarchy_as_titles(
    kb: Path, wiki: FakeConfluence, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    label = f"{wiki.base}/wiki space ENG"
    assert f"handbook: {label}: 3 new, 0 changed, 0 unchanged, 0 deleted" in out
    assert "handbook: 3 documents" in out
    stored = passages(kb)
    assert [(doc_id, title, url) for doc_id, title, url, _ in stored] == [
        ("100", "Handbook", f"{wiki.base}/wiki/spaces/ENG/pages/100"),
        ("101", "Handbook › Travel › Trains", f"{wiki.base}/wiki/spaces/ENG/pages/101"),
        ("102", "Handbook › Expenses", f"{wiki.base}/wiki/spaces/ENG/pages/102"),
    ]
    assert stored[1][3] == "Trains are booked in second class for trips under four hours."


def test_an_added_a_changed_and_a_deleted_page_are_synced_fetching_only_those(
    kb: Path, wiki: FakeConfluence, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    wiki.put(
        "101",
        "Travel",
        "<h2>Trains</h2><p>Trains are booked in first class for trips over two hours.</p>",
        parent="100",
    )
    wiki.delete("102")
    wiki.put("103", "Security", "<p>Laptops lock after five minutes without use.</p>", parent="100")
    wiki.requests.clear()
    capsys.readouterr()
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert f"handbook: {wiki.base}/wiki space ENG: 1 new, 1 changed, 0 unchanged, 1 deleted" in out
    assert sorted(wiki.fetched_pages()) == ["101", "103"]  # unchanged versions are not fetched
    texts = "\n".join(text for *_, text in passages(kb))
    assert "first class for trips over two hours" in texts and "second class" not in texts
    assert "150 euros" not in texts and "Laptops lock" in texts


async def test_a_429_is_waited_out_for_as_long_as_retry_after_says(
    wiki: FakeConfluence, tmp_path: Path
) -> None:
    wiki.fail("/wiki/rest/api/content/search", 429, headers={"Retry-After": "20"})
    clock = FakeClock()
    connector = ConfluenceConnector(
        spec=ConfluenceSource(url=f"{wiki.base}/wiki", space="ENG", rate=50),
        collection="handbook",
        client=PoliteClient(rate=50, clock=clock, sleep=clock.sleep),
        credentials=ConfluenceCredentials(CONFLUENCE_EMAIL=EMAIL, CONFLUENCE_API_TOKEN=TOKEN),
    )
    state = SyncState(tmp_path / "state.sqlite3")
    try:
        report = await sync_source(connector, state, collection="handbook")
    finally:
        await connector.close()
    assert report.added == 3
    assert [status for path, status in wiki.requests if "/content/search" in path][:2] == [429, 200]
    assert 20.0 in clock.slept


def test_an_interrupted_sync_is_resumed_without_duplicates_or_losses(
    kb: Path, wiki: FakeConfluence, capsys: pytest.CaptureFixture[str]
) -> None:
    wiki.fail("/wiki/rest/api/content/102", 500)
    assert main(["index"]) == 1
    captured = capsys.readouterr()
    assert "space ENG stopped answering half-way (HTTP 500)" in captured.err
    assert {doc_id for doc_id, *_ in passages(kb)} == {"100", "101"}
    wiki.requests.clear()
    assert main(["index"]) == 0
    assert wiki.fetched_pages() == ["102"]  # the pages stored before the failure are not fetched again
    stored = passages(kb)
    assert {doc_id for doc_id, *_ in stored} == {"100", "101", "102"}
    assert len(stored) == len({text for *_, text in stored})


@pytest.mark.parametrize("token", [None, "wrong"])
def test_bad_credentials_are_one_line_exit_2_and_the_other_collections_are_indexed(
    kb: Path,
    wiki: FakeConfluence,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    token: str | None,
) -> None:
    if token is None:
        monkeypatch.delenv("CONFLUENCE_API_TOKEN")
    else:
        monkeypatch.setenv("CONFLUENCE_API_TOKEN", token)
    assert main(["index"]) == 2
    captured = capsys.readouterr()
    variables = "CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN (Cloud) or CONFLUENCE_TOKEN (Data Center)"
    detail = f"set {variables}" if token is None else f"HTTP 401: check {variables}"
    assert captured.err.strip().splitlines() == [
        f"confer: Collection 'handbook': confluence {wiki.base}/wiki space ENG has no usable credentials "
        f"({detail})."
    ]
    assert "notes: 1 document" in captured.out and "handbook:" not in captured.out
    assert TOKEN not in captured.err and "wrong" not in captured.err


def test_a_misconfigured_source_entry_leaves_out_its_collection_only_in_one_line_and_exit_2(
    kb: Path, wiki: FakeConfluence, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped key or a bad address in one collection's connector entry: that collection is
    named with what to fix before anything is written, and every other collection is indexed."""
    with (kb / "collections.yaml").open("a") as file:
        file.write(
            "  - name: wiki\n    title: Wiki\n"
            "    sources: [{confluence: {url: 'ftp://wiki.example.com', space: ENG, permisions: true}}]\n"
        )
    assert main(["index"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        "confer: Collection 'wiki' was not indexed: sources.0.confluence.url: must be an address starting "
        "with https:// (or http:// where the source allows it); sources.0.confluence.permisions: unknown "
        "key (did you mean 'permissions'?). Fix it in collections.yaml; the other collections are indexed."
    ]
    assert "notes: 1 document" in captured.out and "handbook: 3 documents" in captured.out
    assert "wiki:" not in captured.out
    # Other commands still refuse the file as a whole, naming the same problem.
    assert main(["collections"]) == 2
    assert "collections.2.sources.0.confluence.url" in capsys.readouterr().err


def test_an_attachment_confer_reads_is_indexed_under_its_page_and_follows_its_versions(
    kb: Path, wiki: FakeConfluence, capsys: pytest.CaptureFixture[str]
) -> None:
    wiki.attach(
        "900",
        "101",
        "rail-card.pdf",
        pdf_bytes("Rail card", ["A rail card is bought for anyone travelling twice a month."]),
    )
    wiki.attach("901", "101", "map.png", b"\x89PNG not a document")
    assert main(["index"]) == 0
    assert f"handbook: {wiki.base}/wiki space ENG: 4 new," in capsys.readouterr().out
    [(title, text)] = [(t, x) for doc_id, t, _, x in passages(kb) if doc_id == "900"]
    assert title == "Travel › Rail card › Page 1"
    assert text == "A rail card is bought for anyone travelling twice a month."
    wiki.attach("900", "101", "rail-card.pdf", pdf_bytes("Rail card", ["Rail cards are no longer bought."]))
    assert main(["index"]) == 0
    assert (
        f"handbook: {wiki.base}/wiki space ENG: 0 new, 1 changed, 0 unchanged, 0 deleted"
        in capsys.readouterr().out
    )
    assert [x for doc_id, *_, x in passages(kb) if doc_id == "900"] == ["Rail cards are no longer bought."]
