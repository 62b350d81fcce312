"""The handbook the permission tests ask about, indexed with its permissions by ``confer index``: a
Confluence space (a page for the staff, a page restricted to the HR group) and a SharePoint library
(a file shared with the HR group, one with the staff), through the connectors' fakes, into the
embedded index or the fake Elasticsearch cluster (``handbook``'s two parameters)."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakes.confluence import EMAIL, TOKEN, FakeConfluence, serve_confluence
from tests.fakes.elasticsearch import FakeElasticsearch
from tests.fakes.graph import CLIENT_ID, CLIENT_SECRET, HOST, TENANT, FakeGraph, serve_graph
from tests.fakes.server import self_signed
from tests.integration.test_slack_feedback import _confer

# What only the HR group may read: the restricted page's and the group's file's own words.
PAGE_SECRETS = ("Halcyon", "88,000", "Salary bands", "Marta Quill")
FILE_SECRETS = ("Meridian", "12 percent", "bonus.md")
SALARY = "What is the salary band of a senior engineer?"
BONUS = "How much is the yearly bonus?"


@pytest.fixture
def hr_wiki() -> Iterator[FakeConfluence]:
    with serve_confluence() as fake:
        fake.group("staff", ["ana@example.com", "bo@example.com", "cy@example.com"])
        fake.group("hr", ["ana@example.com", "bo@example.com"])
        fake.space_readers = ["staff"]
        fake.put(
            "100",
            "Pay",
            "<p>Salaries are reviewed every March by Dana Brook; a salary band changes only at a review.</p>",
        )
        fake.put(
            "200",
            "Salary bands",
            "<p>A senior engineer is paid in the Halcyon band, 88,000 euros a year, "
            "as Marta Quill set it.</p>",
            parent="100",
        )
        fake.restrict("200", ["hr"])
        yield fake


@pytest.fixture
def hr_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGraph]:
    context, certificate = self_signed(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate))
    with serve_graph(context) as fake:
        for user in ("ana", "bo", "cy"):
            fake.user(f"u-{user}", f"{user}@example.com")
        fake.group("g-hr", "HR", ["u-ana", "u-bo"])
        fake.group("g-staff", "Staff", ["u-ana", "u-bo", "u-cy"])
        fake.put(
            "1", "/Policies/bonus.md", "# Bonus\n\nThe yearly Meridian bonus is 12 percent of the salary.\n"
        )
        fake.put(
            "2", "/Policies/holidays.md", "# Holidays\n\nThe yearly holidays are 27 days for everyone.\n"
        )
        fake.grant("1", {"group": "g-hr"})
        fake.grant("2", {"group": "g-staff"})
        yield fake


@pytest.fixture(params=["embedded", "elasticsearch"])
async def handbook(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    hr_wiki: FakeConfluence,
    hr_graph: FakeGraph,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Path]:
    """The handbook indexed with its permissions by ``confer index``, in either backend."""
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "collections.yaml").write_text(
        "collections:\n"
        "  - name: handbook\n    title: Handbook\n    sources:\n"
        f"      - confluence: {{url: '{hr_wiki.base}/wiki', space: ENG, rate: 50, permissions: true}}\n"
        f"      - sharepoint: {{site: 'https://{HOST}/sites/HR', folder: /Policies, permissions: true}}\n"
    )
    monkeypatch.chdir(folder)
    for name, value in (
        ("CONFER_COLLECTIONS", str(folder / "collections.yaml")),
        ("CONFER_DATA_DIR", str(folder / ".confer")),
        ("CONFLUENCE_EMAIL", EMAIL),
        ("CONFLUENCE_API_TOKEN", TOKEN),
        ("SHAREPOINT_TENANT_ID", TENANT),
        ("SHAREPOINT_CLIENT_ID", CLIENT_ID),
        ("SHAREPOINT_CLIENT_SECRET", CLIENT_SECRET),
        ("SHAREPOINT_AUTHORITY_HOST", hr_graph.entra),
        ("SHAREPOINT_GRAPH_URL", f"{hr_graph.base}/v1.0"),
    ):
        monkeypatch.setenv(name, value)
    cluster = None
    if request.param == "elasticsearch":
        cluster = await FakeElasticsearch().start()
        monkeypatch.setenv("ELASTICSEARCH_URL", cluster.url)
    assert await _confer(["index"]) == 0
    yield folder
    if cluster is not None:
        await cluster.stop()
        assert not cluster.refused, cluster.refused  # every request was one the fake checked
