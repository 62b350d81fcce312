"""``permissions: true``: who may read each document, read from Confluence, SharePoint and Google
Drive through their documented APIs (the fakes in tests/fakes answer as those document, and 400 to
any other request), stored with the document, and read again at each sync when they change without
the document changing."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval.audience import DOMAIN_PREFIX, EVERYONE
from retrieval.collections import ConfluenceSource, DriveSource, SharePointSource
from retrieval.connectors import PoliteClient, SyncState, sync_source
from retrieval.connectors.base import Connector
from retrieval.connectors.confluence import ConfluenceConnector
from retrieval.connectors.credentials import ConfluenceCredentials, DriveCredentials, SharePointCredentials
from retrieval.connectors.gdrive import DriveConnector
from retrieval.connectors.sharepoint import SharePointConnector
from retrieval.connectors.sync import state_key
from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence, serve_confluence
from tests.fakes.gdrive import DOC_TYPE, ROOT, FakeDrive, serve_drive
from tests.fakes.graph import CLIENT_ID, CLIENT_SECRET, HOST, TENANT, FakeGraph, serve_graph
from tests.fakes.server import self_signed

HR = ("ana@example.com", "bo@example.com")


async def _sync(connector: Connector, state: SyncState, collection: str) -> dict[str, tuple[str, ...] | None]:
    """Sync once; each stored document's readers, by its title."""
    await sync_source(connector, state, collection=collection)
    return {d.title: d.readers for d in state.documents(state_key(collection, connector))}


# Confluence ----------------------------------------------------------------------------------------


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    with serve_confluence() as fake:
        fake.group("staff", ["ana@example.com", "bo@example.com", "cy@example.com", "hidden@example.com"])
        fake.group("hr", list(HR))
        fake.hidden_emails.add("hidden@example.com")  # Confluence shows no email for this person
        fake.space_readers = ["staff", "admin@example.com"]
        fake.put("100", "Handbook", "<p>Everything a Kestrel employee needs to know.</p>")
        fake.put("200", "Pay", "<p>How pay works at Kestrel.</p>", parent="100")
        fake.put(
            "201", "Salary bands", "<p>Engineers earn between 60 and 90 thousand euros.</p>", parent="200"
        )
        fake.attach("300", "200", "grid.md", b"# Grid\n\nThe salary grid has five levels.\n")
        fake.restrict("200", ["hr"])  # a restriction on a page holds for its children and attachments
        yield fake


def _confluence(wiki: FakeConfluence, *, permissions: bool = True) -> ConfluenceConnector:
    return ConfluenceConnector(
        spec=ConfluenceSource(url=f"{wiki.base}/wiki", space="ENG", rate=50, permissions=permissions),
        collection="handbook",
        client=PoliteClient(rate=50),
        credentials=ConfluenceCredentials(CONFLUENCE_EMAIL=EMAIL, CONFLUENCE_API_TOKEN=TOKEN),
    )


async def test_confluence_pages_carry_the_space_permission_narrowed_by_their_restrictions(
    wiki: FakeConfluence, tmp_path: Path
) -> None:
    state = SyncState(tmp_path / "state.sqlite3")
    connector = _confluence(wiki)
    try:
        readers = await _sync(connector, state, "handbook")
    finally:
        await connector.close()
        state.close()
    staff = ("admin@example.com", "ana@example.com", "bo@example.com", "cy@example.com")
    assert readers["Handbook"] == staff  # the space's group, expanded; the hidden email left out
    assert readers["Handbook › Pay"] == HR  # restricted to a group, within the space's readers
    assert readers["Handbook › Pay › Salary bands"] == HR  # inherited from its parent
    assert readers["Pay › Grid"] == HR  # an attachment: its page's
    assert all(status != 400 for _, status in wiki.requests)


async def test_a_confluence_restriction_changed_without_a_new_version_is_read_at_the_next_sync(
    wiki: FakeConfluence, tmp_path: Path
) -> None:
    state = SyncState(tmp_path / "state.sqlite3")
    try:
        connector = _confluence(wiki)
        await _sync(connector, state, "handbook")
        await connector.close()
        wiki.restrict("200", None)
        wiki.restrict("100", ["bo@example.com"])
        connector = _confluence(wiki)
        report = await sync_source(connector, state, collection="handbook")
        readers = {d.title: d.readers for d in state.documents(state_key("handbook", connector))}
        await connector.close()
        assert (report.added, report.changed, report.deleted) == (0, 4, 0)
        assert set(readers.values()) == {("bo@example.com",)}
        # Turned off, every document is everyone's again.
        connector = _confluence(wiki, permissions=False)
        await _sync(connector, state, "handbook")
        await connector.close()
        assert {d.readers for d in state.documents(state_key("handbook", connector))} == {None}
    finally:
        state.close()


async def test_a_confluence_space_open_to_anonymous_users_is_everyones(
    wiki: FakeConfluence, tmp_path: Path
) -> None:
    wiki.anonymous = True
    state = SyncState(tmp_path / "state.sqlite3")
    connector = _confluence(wiki)
    try:
        readers = await _sync(connector, state, "handbook")
    finally:
        await connector.close()
        state.close()
    assert readers["Handbook"] == (EVERYONE,)
    assert readers["Handbook › Pay"] == HR  # a restriction still narrows it


# SharePoint ----------------------------------------------------------------------------------------


@pytest.fixture
def graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGraph]:
    context, certificate = self_signed(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate))  # MSAL's requests trusts the fake
    with serve_graph(context) as fake:
        fake.user("u-ana", "ana@example.com")
        fake.user("u-bo", "bo.b@example.onmicrosoft.com", mail="bo@example.com")
        fake.user("u-cy", "cy@example.com")
        fake.group("g-payroll", "Payroll", ["u-bo"])
        fake.group("g-hr", "HR", ["u-ana", "g-payroll"])  # a nested group's members count too
        fake.put(
            "1", "/Policies/salaries.md", "# Salaries\n\nEngineers earn between 60 and 90 thousand euros.\n"
        )
        fake.put("2", "/Policies/travel.md", "# Travel\n\nTrains are booked in second class.\n")
        fake.put("3", "/Policies/review.md", "# Review\n\nReviews happen in March.\n")
        fake.grant("1", {"group": "g-hr"})
        fake.grant("2", {"site_group": "HR Visitors"}, {"link": "organization"})
        fake.grant("3", {"user": "u-cy"}, {"link": "users", "users": ["u-ana"]})
        yield fake


async def test_sharepoint_files_carry_their_permissions_with_entra_groups_expanded(
    graph: FakeGraph, tmp_path: Path
) -> None:
    connector = SharePointConnector(
        spec=SharePointSource(site=f"https://{HOST}/sites/HR", folder="/Policies", permissions=True),
        collection="policies",
        client=PoliteClient(rate=50),
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
        readers = await _sync(connector, state, "policies")
    finally:
        await connector.close()
        state.close()
    owners = "hr owners"  # the site's owners group, kept by its name (Graph does not list its members)
    assert readers["Salaries"] == tuple(
        sorted({owners, "ana@example.com", "bo.b@example.onmicrosoft.com", "bo@example.com"})
    )
    # A link anyone in the organisation may open makes nobody a reader who was not one already.
    assert readers["Travel"] == ("hr owners", "hr visitors")
    # A person, and the people a sharing link was given to.
    assert readers["Review"] == ("ana@example.com", "cy@example.com", owners)
    assert all(status != 400 for _, _, status in graph.requests)


# Google Drive --------------------------------------------------------------------------------------


@pytest.fixture
def drive() -> Iterator[FakeDrive]:
    with serve_drive() as fake:
        fake.put("d1", "Salaries", "Engineers earn between 60 and 90 thousand euros.", mime=DOC_TYPE)
        fake.put("d2", "Holidays", "Everyone has 27 days of paid time off.", mime=DOC_TYPE)
        fake.put("d3", "Office", "The office opens at eight.", mime=DOC_TYPE)
        fake.put("d4", "Board", "The board meets in June.", mime=DOC_TYPE)
        fake.share("d1", {"type": "user", "emailAddress": "Ana@Example.com", "role": "writer"})
        fake.share("d2", {"type": "anyone", "allowFileDiscovery": True})
        fake.share("d3", {"type": "domain", "domain": "example.com", "allowFileDiscovery": True})
        fake.share(
            "d4",
            {"type": "group", "emailAddress": "board@example.com"},
            {"type": "anyone", "allowFileDiscovery": False},  # anyone with the link: not everyone
            {"type": "domain", "domain": "example.com", "allowFileDiscovery": False},
        )
        yield fake


async def test_drive_files_carry_their_sharing(drive: FakeDrive, tmp_path: Path) -> None:
    connector = DriveConnector(
        spec=DriveSource(folder=ROOT, permissions=True),
        collection="drive",
        client=PoliteClient(rate=50),
        credentials=DriveCredentials(
            GOOGLE_APPLICATION_CREDENTIALS=drive.key_file(tmp_path / "key.json"), GDRIVE_API_URL=drive.base
        ),
    )
    state = SyncState(tmp_path / "state.sqlite3")
    try:
        readers = await _sync(connector, state, "drive")
    finally:
        await connector.close()
        state.close()
    assert readers == {
        "Salaries": ("ana@example.com",),
        "Holidays": (EVERYONE,),
        "Office": (DOMAIN_PREFIX + "example.com",),
        "Board": ("board@example.com",),
    }
    assert all(status != 400 for _, _, status in drive.requests)
