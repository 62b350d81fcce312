"""``confer index`` with a web source, against a real local web site (tests/fakes/site.py): what is
fetched, what becomes passages, and what a second, third sync asks and changes."""

import random
import socket
import sqlite3
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.terminal.cli import main
from retrieval.backends.embedded import DATABASE_NAME
from retrieval.collections import WebSource
from retrieval.connectors import PoliteClient, SyncState, sync_source
from retrieval.connectors.web import WebConnector
from retrieval.errors import SourceError
from tests.fakes.clock import FakeClock
from tests.fakes.pdf import pdf_bytes
from tests.fakes.site import Site, serve_site

NAV = (
    '<header><nav><a href="/">Home</a> <a href="/policies/expenses?from=nav">Expenses</a> '
    '<a href="/policies/travel">Travel</a> <a href="/private/salaries">Salaries</a> '
    '<a href="/handbook.pdf">Handbook (PDF)</a> <a href="https://elsewhere.example/">Partner site</a> '
    "Kestrel navigation menu</nav></header>"
)
FOOTER = "<footer><p>Copyright 2026 Kestrel Systems footer. Imprint and contact details.</p></footer>"
BOILERPLATE = ("navigation menu", "Copyright", "Imprint", "Partner site", "Salaries")


def page(title: str, *paragraphs: str, canonical: str = "") -> str:
    link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!doctype html><html><head><title>{title} | Kestrel</title>{link}</head><body>{NAV}"
        f"<main><article><h1>{title}</h1>{body}</article></main>{FOOTER}</body></html>"
    )


def build_site(site: Site) -> None:
    site.write(
        "index.html",
        page(
            "Kestrel handbook",
            "This handbook collects the policies every Kestrel employee follows, from expenses and "
            "travel to remote work. Each policy has an owner who answers questions about it.",
        ),
    )
    site.write(
        "policies/expenses",
        page(
            "Expenses",
            "Hotel stays are reimbursed up to 150 euros per night in most cities, and receipts must "
            "be kept for seven years after the trip.",
            "Meals while travelling are covered up to 40 euros a day, alcohol excluded, unless a "
            "client is present at the dinner.",
            canonical="/policies/expenses",
        ),
    )
    site.write(
        "policies/travel",
        page(
            "Travel",
            "Trains are booked in second class for trips under four hours; longer trips may be "
            "flown in economy class with the approval of a manager.",
        ),
    )
    site.write(
        "policies/remote",
        page(
            "Remote work",
            "Employees may work remotely up to three days a week, from any country of the European "
            "Union, after telling their team lead in advance.",
        ),
    )
    site.write(
        "private/salaries",
        page("Salaries", "The salary bands of every level are secret and kept out of every index."),
    )
    site.write(
        "handbook.pdf",
        pdf_bytes(
            "Employee handbook",
            ["The probation period lasts three months for every new employee, with a review at its end."],
        ),
    )
    site.write("robots.txt", f"User-agent: *\nDisallow: /private/\nSitemap: {site.base}/sitemap.xml\n")
    site.write(
        "sitemap.xml",
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.base}/</loc></url><url><loc>{site.base}/policies/expenses</loc></url>"
        f"<url><loc>{site.base}/policies/remote</loc></url></urlset>",
    )


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with serve_site(tmp_path / "site") as served:
        build_site(served)
        yield served


@pytest.fixture
def kb(tmp_path: Path, site: Site, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "kb"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "standup.md").write_text(
        "# Stand-up\n\nThe daily stand-up starts at 9:30 and lasts fifteen minutes.\n"
    )
    write_collections(folder, site.base)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("CONFER_DATA_DIR", str(folder / ".confer"))
    return folder


def write_collections(folder: Path, url: str) -> None:
    (folder / "collections.yaml").write_text(
        "collections:\n"
        "  - name: notes\n    title: Notes\n    sources: [notes/*.md]\n"
        "  - name: site\n    title: Company site\n"
        f"    sources: [{{web: {{url: '{url}/', sitemap: true, rate: 50}}}}]\n"
    )


def passages(kb: Path, collection: str = "site") -> list[tuple[str, str, str]]:
    """(doc_id, title, text) of every passage the index holds for ``collection``."""
    with sqlite3.connect(kb / ".confer" / DATABASE_NAME) as db:
        rows = db.execute(
            "SELECT doc_id, title, text FROM passages WHERE collection = ? ORDER BY doc_id, id", (collection,)
        ).fetchall()
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def test_web_source_indexes_main_text_of_allowed_pages_and_pdfs(
    kb: Path, site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    # The expenses page is reached at two addresses, and stored once under its canonical one.
    assert f"site: {site.base}/: 5 new, 0 changed, 1 unchanged, 0 deleted" in out
    assert "notes: 1 document" in out
    assert not [p for p in site.fetched() if p.startswith("/private")]  # robots.txt disallows it
    stored = passages(kb)
    assert {doc_id for doc_id, _, _ in stored} == {
        f"{site.base}/",
        f"{site.base}/policies/expenses",  # reached as ?from=nav too: one document, its canonical
        f"{site.base}/policies/travel",
        f"{site.base}/policies/remote",
        f"{site.base}/handbook.pdf",
    }
    texts = "\n".join(text for _, _, text in stored)
    assert "150 euros per night" in texts and "probation period lasts three months" in texts
    assert texts.count("150 euros per night") == 1
    for words in BOILERPLATE:
        assert words not in texts
        assert all(words not in title for _, title, _ in stored)


def test_a_second_sync_of_an_unchanged_site_asks_conditionally_and_writes_nothing(
    kb: Path, site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    before = passages(kb)
    site.clear()
    capsys.readouterr()
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert f"site: {site.base}/: 0 new, 0 changed, 6 unchanged, 0 deleted" in out
    assert "site: 5 documents" in out and "(+0 −0," in out
    pages = [a for a in site.answers() if a[0] not in ("/robots.txt", "/sitemap.xml")]
    assert pages and all(status == 304 and conditional for _, status, conditional in pages), pages
    assert passages(kb) == before


def test_an_added_a_changed_and_a_deleted_page_are_synced(
    kb: Path, site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index"]) == 0
    site.write(
        "policies/travel",
        page(
            "Travel",
            "Trains are booked in first class for trips over two hours; flights need the approval of "
            "a director and are booked in economy class.",
        ),
    )
    site.remove("policies/remote")
    site.write(
        "policies/security",
        page(
            "Security",
            "Laptops are encrypted and locked after five minutes; a lost laptop is reported to the "
            "security team within the hour.",
        ),
    )
    site.write(
        "index.html",
        page(
            "Kestrel handbook",
            "This handbook collects the policies every Kestrel employee follows, from expenses and "
            'travel to <a href="/policies/security">security</a>. Each policy has an owner.',
        ),
    )
    capsys.readouterr()
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert f"site: {site.base}/: 1 new, 2 changed, 3 unchanged, 1 deleted" in out
    texts = "\n".join(text for _, _, text in passages(kb))
    assert "first class for trips over two hours" in texts
    assert "second class" not in texts  # never in both forms
    assert "three days a week" not in texts
    assert "lost laptop is reported" in texts


def test_an_interrupted_sync_is_resumed_without_duplicates_or_losses(
    kb: Path, site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    site.fail("/policies/travel", 500)
    assert main(["index"]) == 1
    captured = capsys.readouterr()
    line = (
        f"Collection 'site': web {site.base}/ stopped answering half-way "
        f"(HTTP 500 at {site.base}/policies/travel)"
    )
    assert line in captured.err
    first = {doc_id for doc_id, _, _ in passages(kb)}
    assert f"{site.base}/policies/expenses" in first and f"{site.base}/policies/travel" not in first
    assert "notes: 1 document" in captured.out
    site.clear()
    assert main(["index"]) == 0
    stored = passages(kb)
    assert len({doc_id for doc_id, _, _ in stored}) == 5
    assert len(stored) == len({text for _, _, text in stored})
    again = dict((path, status) for path, status, _ in site.answers())
    assert again["/policies/expenses"] == 304 and again["/policies/travel"] == 200


def test_an_unreachable_site_is_one_line_exit_2_and_the_other_collections_are_indexed(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    write_collections(kb, f"http://127.0.0.1:{port}")
    assert main(["index"]) == 2
    captured = capsys.readouterr()
    errors = captured.err.strip().splitlines()
    assert errors == [
        f"confer: Collection 'site': web http://127.0.0.1:{port}/ cannot be reached "
        "(ClientConnectorError): check its address and the network."
    ]
    assert "notes: 1 document" in captured.out and "site:" not in captured.out
    assert passages(kb, "notes")


def web_connector(site: Site, clock: FakeClock, **spec: object) -> WebConnector:
    source = WebSource.model_validate({"url": f"{site.base}/", "sitemap": True, "rate": 50, **spec})
    client = PoliteClient(rate=source.rate, clock=clock, sleep=clock.sleep)
    return WebConnector(spec=source, collection="site", client=client)


async def test_a_429_is_waited_out_for_as_long_as_retry_after_says(site: Site, tmp_path: Path) -> None:
    site.fail("/policies/travel", 429, headers={"Retry-After": "30"})
    clock = FakeClock()
    connector = web_connector(site, clock)
    state = SyncState(tmp_path / "state.sqlite3")
    try:
        report = await sync_source(connector, state, collection="site")
    finally:
        await connector.close()
    assert report.added == 5
    assert [a[1] for a in site.answers() if a[0] == "/policies/travel"] == [429, 200]
    assert 30.0 in clock.slept  # waited, in the clock's time: the test spends none of it
    assert any(
        "Trains are booked" in s.text for d in state.documents("site/" + connector.key) for s in d.sections
    )


async def test_a_retry_after_too_long_stops_the_sync_with_nothing_deleted(site: Site, tmp_path: Path) -> None:
    clock = FakeClock()
    state = SyncState(tmp_path / "state.sqlite3")
    first = web_connector(site, clock)
    await sync_source(first, state, collection="site")
    await first.close()
    sitemap = (site.root / "sitemap.xml").read_text()
    site.write("sitemap.xml", sitemap.replace(f"<url><loc>{site.base}/policies/remote</loc></url>", ""))
    site.fail("/policies/travel", 429, headers={"Retry-After": "3600"})
    again = web_connector(site, clock)
    with pytest.raises(SourceError) as caught:
        await sync_source(again, state, collection="site")
    await again.close()
    assert caught.value.problem == "rate_limited"
    # The crawl did not finish: the page no longer reached is deleted by the next complete one.
    remote = f"{site.base}/policies/remote"
    assert remote in state.known("site/" + again.key)
    last = web_connector(site, clock)
    assert (await sync_source(last, state, collection="site")).deleted == 1
    await last.close()
    assert remote not in state.known("site/" + last.key)


async def test_the_request_rate_to_a_host_is_kept(site: Site, tmp_path: Path) -> None:
    clock = FakeClock()
    connector = web_connector(site, clock, rate=2)
    state = SyncState(tmp_path / "state.sqlite3")
    await sync_source(connector, state, collection="site")
    await connector.close()
    requests = len(site.answers())
    # robots.txt goes first, then one request every half second.
    assert clock.now == pytest.approx((requests - 1) * 0.5)


def test_an_office_document_linked_from_a_page_is_indexed(
    kb: Path, site: Site, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docx

    form = docx.Document()
    form.add_heading("Leave request", level=1)
    form.add_paragraph("Send the leave request to your manager two weeks before the first day off.")
    form.save(str(tmp_path / "leave.docx"))
    # Two megabytes in the file besides its text (as an embedded image would be): more than the
    # client buffers at once, so the body always arrives in pieces, and every one must be read (a
    # file cut short is no Word file).
    with zipfile.ZipFile(tmp_path / "leave.docx", "a") as package:
        package.writestr("word/media/scan.bin", random.Random(0).randbytes(2_000_000), zipfile.ZIP_STORED)
    site.write("forms/leave.docx", (tmp_path / "leave.docx").read_bytes())
    index = (site.root / "index.html").read_text()
    site.write(
        "index.html", index.replace("</article>", '<a href="/forms/leave.docx">Leave form</a></article>')
    )
    monkeypatch.setenv("CONFER_LOG_LEVEL", "INFO")  # a document dropped says why ("no text: …")
    assert main(["index"]) == 0
    found = [(t, x) for doc_id, t, x in passages(kb) if doc_id.endswith("/forms/leave.docx")]
    assert len(found) == 1, (
        f"leave.docx gave {len(found)} passages; confer index logged:\n{capsys.readouterr().err}"
    )
    [(title, text)] = found
    assert text == "Send the leave request to your manager two weeks before the first day off."
    assert title == "Leave › Leave request"


def test_index_every_indexes_then_waits_for_the_next_round(
    kb: Path, site: Site, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float, *args: object) -> None:
        if seconds >= 10:  # the wait between rounds: the second one ends the run, as Ctrl-C would
            waits.append(seconds)
            if len(waits) == 2:
                raise KeyboardInterrupt
            return
        await real_sleep(seconds)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    assert main(["index", "--every", "15m"]) == 130
    captured = capsys.readouterr()
    assert waits == [900, 900]
    assert captured.err.count("next index in 15m (Ctrl-C stops)") == 2
    assert f"site: {site.base}/: 5 new," in captured.out
    assert f"site: {site.base}/: 0 new, 0 changed, 6 unchanged, 0 deleted" in captured.out  # round two
