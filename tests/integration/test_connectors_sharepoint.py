"""``confer index`` with a SharePoint library, against fake Entra ID and Microsoft Graph at the HTTP
boundary (tests/fakes/graph.py), behind MSAL: full and delta syncs, 429, an interrupted sync, bad
credentials."""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import docx
import pytest

from bot.terminal.cli import main
from retrieval.backends.embedded import DATABASE_NAME
from retrieval.collections import SharePointSource
from retrieval.connectors import PoliteClient, SyncState, sync_source
from retrieval.connectors.credentials import SharePointCredentials
from retrieval.connectors.sharepoint import SharePointConnector
from tests.fakes.clock import FakeClock
from tests.fakes.graph import CLIENT_ID, CLIENT_SECRET, HOST, TENANT, FakeGraph, serve_graph
from tests.fakes.server import self_signed


def word(tmp_path: Path, *paragraphs: str) -> bytes:
    document = docx.Document()
    document.add_heading("Leave", level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    document.save(str(tmp_path / "made.docx"))
    return (tmp_path / "made.docx").read_bytes()


@pytest.fixture
def graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGraph]:
    context, certificate = self_signed(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate))  # MSAL's requests trusts the fake
    with serve_graph(context) as fake:
        fake.put("1", "/Policies/leave.docx", word(tmp_path, "Parental leave is twenty weeks, paid in full."))
        fake.put(
            "2", "/Policies/expenses.md", "# Expenses\n\nHotels are reimbursed up to 150 euros a night.\n"
        )
        fake.put("3", "/Drafts/ideas.md", "# Ideas\n\nA four-day week, maybe.\n")
        yield fake


@pytest.fixture
def kb(tmp_path: Path, graph: FakeGraph, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "kb"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "standup.md").write_text("# Stand-up\n\nThe stand-up starts at 9:30.\n")
    (folder / "collections.yaml").write_text(
        "collections:\n"
        "  - name: notes\n    title: Notes\n    sources: [notes/*.md]\n"
        "  - name: policies\n    title: Policies\n"
        f"    sources: [{{sharepoint: {{site: 'https://{HOST}/sites/HR', folder: /Policies, rate: 50}}}}]\n"
    )
    monkeypatch.chdir(folder)
    monkeypatch.setenv("CONFER_DATA_DIR", str(folder / ".confer"))
    for name, value in (
        ("SHAREPOINT_TENANT_ID", TENANT),
        ("SHAREPOINT_CLIENT_ID", CLIENT_ID),
        ("SHAREPOINT_CLIENT_SECRET", CLIENT_SECRET),
        ("SHAREPOINT_AUTHORITY_HOST", graph.entra),
        ("SHAREPOINT_GRAPH_URL", f"{graph.base}/v1.0"),
    ):
        monkeypatch.setenv(name, value)
    return folder


LABEL = f"https://{HOST}/sites/HR Documents/Policies"


def passages(kb: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(kb / ".confer" / DATABASE_NAME) as db:
        rows = db.execute(
            "SELECT doc_id, title, text FROM passages WHERE collection = 'policies' ORDER BY doc_id, id"
        ).fetchall()
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def test_a_library_folder_is_indexed_through_msal_and_graph(
    kb: Path, graph: FakeGraph, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert f"policies: {LABEL}: 2 new, 0 changed, 0 unchanged, 0 deleted" in out
    library = f"https://{HOST}/sites/HR/Shared%20Documents/Policies"
    assert passages(kb) == [
        (f"{library}/expenses.md", "Expenses", "Hotels are reimbursed up to 150 euros a night."),
        (f"{library}/leave.docx", "Leave › Leave", "Parental leave is twenty weeks, paid in full."),
    ]
    assert sorted(graph.downloads()) == ["1", "2"]  # the file outside the folder is not fetched


def test_a_delta_sync_applies_an_added_a_changed_and_a_deleted_file(
    kb: Path, graph: FakeGraph, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    graph.put("2", "/Policies/expenses.md", "# Expenses\n\nHotels are reimbursed up to 180 euros a night.\n")
    graph.delete("1")
    graph.put("4", "/Policies/remote.txt", "Remote work\n\nWork remotely up to three days a week.\n")
    graph.requests.clear()
    capsys.readouterr()
    assert main(["index"]) == 0
    assert f"policies: {LABEL}: 1 new, 1 changed, 0 unchanged, 1 deleted" in capsys.readouterr().out
    assert sorted(graph.downloads()) == ["2", "4"]
    texts = "\n".join(text for *_, text in passages(kb))
    assert "180 euros" in texts and "150 euros" not in texts
    assert "twenty weeks" not in texts and "three days a week" in texts


async def test_a_429_is_waited_out_for_as_long_as_retry_after_says(graph: FakeGraph, tmp_path: Path) -> None:
    graph.fail("/v1.0/drives/b!documents/root/delta", 429, headers={"Retry-After": "7"})
    clock = FakeClock()
    connector = SharePointConnector(
        spec=SharePointSource(site=f"https://{HOST}/sites/HR", folder="/Policies"),
        collection="policies",
        client=PoliteClient(rate=50, clock=clock, sleep=clock.sleep),
        credentials=SharePointCredentials(
            SHAREPOINT_TENANT_ID=TENANT,
            SHAREPOINT_CLIENT_ID=CLIENT_ID,
            SHAREPOINT_CLIENT_SECRET=CLIENT_SECRET,
            SHAREPOINT_AUTHORITY_HOST=graph.entra,
            SHAREPOINT_GRAPH_URL=f"{graph.base}/v1.0",
        ),
    )
    state = SyncState(tmp_path / "state.sqlite3")
    try:
        report = await sync_source(connector, state, collection="policies")
    finally:
        await connector.close()
        state.close()
    assert report.added == 2
    assert [status for _, path, status in graph.requests if path.endswith("/root/delta")] == [429, 200]
    assert 7.0 in clock.slept


def test_an_interrupted_sync_is_resumed_without_duplicates_or_losses(
    kb: Path, graph: FakeGraph, capsys: pytest.CaptureFixture[str]
) -> None:
    graph.fail("/v1.0/drives/b!documents/items/2/content", 500)
    assert main(["index"]) == 1
    assert (
        f"sharepoint {LABEL} stopped answering half-way (HTTP 500 for expenses.md)" in capsys.readouterr().err
    )
    assert [title for _, title, _ in passages(kb)] == ["Leave › Leave"]
    graph.requests.clear()
    assert main(["index"]) == 0
    assert graph.downloads() == ["2"]  # the file stored before the failure is not fetched again
    assert [title for _, title, _ in passages(kb)] == ["Expenses", "Leave › Leave"]


@pytest.mark.parametrize("secret", [None, "wrong"])
def test_bad_credentials_are_one_line_exit_2_and_the_other_collections_are_indexed(
    kb: Path,
    graph: FakeGraph,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    secret: str | None,
) -> None:
    if secret is None:
        monkeypatch.delenv("SHAREPOINT_CLIENT_SECRET")
    else:
        monkeypatch.setenv("SHAREPOINT_CLIENT_SECRET", secret)
    assert main(["index"]) == 2
    captured = capsys.readouterr()
    variables = "SHAREPOINT_TENANT_ID, SHAREPOINT_CLIENT_ID and SHAREPOINT_CLIENT_SECRET"
    detail = f"set {variables}" if secret is None else f"Entra ID answered invalid_client: check {variables}"
    assert captured.err.strip().splitlines() == [
        f"confer: Collection 'policies': sharepoint {LABEL} has no usable credentials ({detail})."
    ]
    assert "notes: 1 document" in captured.out and "policies:" not in captured.out
    assert CLIENT_SECRET not in captured.err
