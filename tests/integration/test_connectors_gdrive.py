"""``confer index`` with a Google Drive folder, behind google-auth, against a fake Google token
endpoint and Drive API at the HTTP boundary (tests/fakes/gdrive.py): a full sync, the changes feed,
429, an interrupted sync, bad credentials."""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.terminal.cli import main
from retrieval.backends.embedded import DATABASE_NAME
from retrieval.collections import DriveSource
from retrieval.connectors import PoliteClient, SyncState, sync_source
from retrieval.connectors.credentials import DriveCredentials
from retrieval.connectors.gdrive import DriveConnector
from tests.fakes.clock import FakeClock
from tests.fakes.gdrive import DOC_TYPE, FOLDER_TYPE, ROOT, FakeDrive, serve_drive

LABEL = f"Google Drive folder {ROOT}"


@pytest.fixture
def drive() -> Iterator[FakeDrive]:
    with serve_drive() as fake:
        fake.put(
            "d1",
            "Travel policy",
            "Trains are booked in second class for trips under four hours.",
            mime=DOC_TYPE,
        )
        fake.put("sub", "Finance", b"", mime=FOLDER_TYPE)
        fake.put(
            "m1",
            "expenses.md",
            "# Expenses\n\nHotels are reimbursed up to 150 euros a night.\n",
            parent="sub",
        )
        fake.put("x1", "logo.png", b"\x89PNG not text")
        fake.put("o1", "other.md", "# Other\n\nNot in the folder.\n", parent="elsewhere")
        yield fake


@pytest.fixture
def kb(tmp_path: Path, drive: FakeDrive, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "standup.md").write_text("# Stand-up\n\nThe stand-up starts at 9:30.\n")
    (tmp_path / "collections.yaml").write_text(
        "collections:\n"
        "  - name: notes\n    title: Notes\n    sources: [notes/*.md]\n"
        "  - name: drive\n    title: Drive\n"
        f"    sources: [{{gdrive: {{folder: {ROOT}, rate: 50}}}}]\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONFER_DATA_DIR", str(tmp_path / ".confer"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(drive.key_file(tmp_path / "key.json")))
    monkeypatch.setenv("GDRIVE_API_URL", drive.base)
    return tmp_path


def passages(kb: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(kb / ".confer" / DATABASE_NAME) as db:
        rows = db.execute(
            "SELECT doc_id, title, text FROM passages WHERE collection = 'drive' ORDER BY doc_id, id"
        ).fetchall()
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def test_a_folder_tree_is_indexed_with_docs_exported_as_text(
    kb: Path, drive: FakeDrive, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    assert f"drive: {LABEL}: 2 new, 0 changed, 0 unchanged, 0 deleted" in capsys.readouterr().out
    assert passages(kb) == [
        (
            "https://drive.google.com/file/d/d1/view",
            "Travel policy",
            "Trains are booked in second class for trips under four hours.",
        ),
        (
            "https://drive.google.com/file/d/m1/view",
            "Expenses",
            "Hotels are reimbursed up to 150 euros a night.",
        ),
    ]
    assert sorted(drive.downloads()) == ["d1", "m1"]  # not the image, not the file elsewhere


def test_the_changes_feed_applies_an_added_a_changed_and_a_deleted_file(
    kb: Path, drive: FakeDrive, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    drive.put(
        "d1", "Travel policy", "Trains are booked in first class for trips over two hours.", mime=DOC_TYPE
    )
    drive.trash("m1")
    drive.put("m2", "remote.md", "# Remote\n\nWork remotely up to three days a week.\n", parent="sub")
    drive.put("o1", "other.md", "# Other\n\nStill not in the folder.\n", parent="elsewhere")
    drive.requests.clear()
    capsys.readouterr()
    assert main(["index"]) == 0
    assert f"drive: {LABEL}: 1 new, 1 changed, 0 unchanged, 1 deleted" in capsys.readouterr().out
    assert sorted(drive.downloads()) == ["d1", "m2"]
    texts = "\n".join(text for *_, text in passages(kb))
    assert "first class" in texts and "second class" not in texts
    assert "150 euros" not in texts and "three days a week" in texts and "Still not" not in texts


async def test_a_429_is_waited_out_for_as_long_as_retry_after_says(drive: FakeDrive, tmp_path: Path) -> None:
    drive.fail("/drive/v3/files", 429, headers={"Retry-After": "12"})
    clock = FakeClock()
    connector = DriveConnector(
        spec=DriveSource(folder=ROOT),
        collection="drive",
        client=PoliteClient(rate=50, clock=clock, sleep=clock.sleep),
        credentials=DriveCredentials(
            GOOGLE_APPLICATION_CREDENTIALS=drive.key_file(tmp_path / "key.json"), GDRIVE_API_URL=drive.base
        ),
    )
    state = SyncState(tmp_path / "state.sqlite3")
    try:
        report = await sync_source(connector, state, collection="drive")
    finally:
        await connector.close()
        state.close()
    assert report.added == 2
    assert [s for _, p, s in drive.requests if p.startswith("/drive/v3/files?")][:2] == [429, 200]
    assert 12.0 in clock.slept


def test_an_interrupted_sync_is_resumed_without_duplicates_or_losses(
    kb: Path, drive: FakeDrive, capsys: pytest.CaptureFixture[str]
) -> None:
    drive.fail("/drive/v3/files/m1", 500)
    assert main(["index"]) == 1
    assert f"gdrive {LABEL} stopped answering half-way (HTTP 500 for expenses.md)" in capsys.readouterr().err
    assert [title for _, title, _ in passages(kb)] == ["Travel policy"]
    drive.requests.clear()
    assert main(["index"]) == 0
    assert drive.downloads() == ["m1"]  # the file stored before the failure is not fetched again
    assert [title for _, title, _ in passages(kb)] == ["Travel policy", "Expenses"]


@pytest.mark.parametrize("problem", ["missing", "wrong key"])
def test_bad_credentials_are_one_line_exit_2_and_the_other_collections_are_indexed(
    kb: Path,
    drive: FakeDrive,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    problem: str,
) -> None:
    variables = "GOOGLE_APPLICATION_CREDENTIALS (a service account's JSON key file)"
    if problem == "missing":
        monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
        detail = f"set {variables}"
    else:
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        drive.key_file(kb / "key.json", key=other)
        detail = f"the token exchange answered invalid_grant: Invalid JWT Signature.: check {variables}"
    assert main(["index"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"confer: Collection 'drive': gdrive {LABEL} has no usable credentials ({detail})."
    ]
    assert "notes: 1 document" in captured.out and "drive:" not in captured.out
