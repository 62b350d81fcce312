from pathlib import Path

import pytest

from retrieval.collections import WebEntry, load_collections, resolve_sources
from retrieval.errors import CollectionsFileError

VALID = """
collections:
  - name: eng
    title: Engineering
    sources: [docs/*.md]
  - name: hr
    title: People
    sources: [hr.txt]
channels:
  C1: {allow: [eng], default: [eng]}
  "*": {allow: [eng, hr]}
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "collections.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_file_and_channel_policies(tmp_path: Path) -> None:
    config = load_collections(_file(tmp_path, VALID))
    assert config.names == ("eng", "hr")
    assert config.get("eng") is not None and config.get("eng").alias == "confer-eng"  # type: ignore[union-attr]
    assert config.channels["C1"].allow == ("eng",) and config.channels["C1"].default == ("eng",)
    assert config.channels["*"].allow == ("eng", "hr")


def test_sources_resolve_against_the_files_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("# A\ntext")
    (tmp_path / "hr.txt").write_text("text")
    config = load_collections(_file(tmp_path, VALID))
    monkeypatch.chdir("/")
    assert resolve_sources(config.collections[0], config) == [tmp_path / "docs/a.md"]
    (tmp_path / "hr.txt").unlink()
    with pytest.raises(CollectionsFileError, match=r"'hr\.txt' does not exist"):
        resolve_sources(config.collections[1], config)


def test_glob_matching_nothing_is_an_error(tmp_path: Path) -> None:
    config = load_collections(_file(tmp_path, VALID))
    with pytest.raises(CollectionsFileError, match="matches no files"):
        resolve_sources(config.collections[0], config)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "collections:\n  - name: a\n    title: A\n    sources: [x]\n    colour: red\n",
            "collections.0.colour: unknown key",
        ),
        (
            "collections:\n  - {name: a, title: A, sources: [x]}\n  - {name: a, title: B, sources: [y]}\n",
            "more than once",
        ),
        ("collections:\n  - {name: Bad Name, title: A, sources: [x]}\n", "collections.0.name"),
        (
            "collections:\n  - {name: a, title: A, sources: [x], language: german}\n",
            "collections.0.language: must be one of da, de, en",
        ),
        ("collections:\n  - {name: a, title: A, sources: ['docs/**.md']}\n", "not a valid glob"),
        (
            "collections:\n  - {name: a, title: A, sources: [x]}\nchannels:\n  C1: {allow: [b]}\n",
            "unknown collection 'b'",
        ),
        (
            "collections:\n  - {name: a, title: A, sources: [x]}\n  - {name: b, title: B, sources: [y]}\n"
            "channels:\n  C1: {allow: [a], default: [b]}\n",
            "default 'b' is not in allow",
        ),
        ("collections: [\n", "not valid YAML at line"),
        ("- just a list\n", "expected a mapping"),
        ("collections: []\n", "collections"),
    ],
)
def test_invalid_files_name_every_problem(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(CollectionsFileError) as caught:
        load_collections(_file(tmp_path, text))
    assert any(expected in problem for problem in caught.value.problems), caught.value.problems


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CollectionsFileError, match="file not found"):
        load_collections(tmp_path / "nope.yaml")


def test_several_problems_are_reported_together(tmp_path: Path) -> None:
    text = "collections:\n  - {name: a, title: A, sources: [x], extra: 1}\n  - {name: b, sources: [y]}\n"
    with pytest.raises(CollectionsFileError) as caught:
        load_collections(_file(tmp_path, text))
    assert len(caught.value.problems) == 2


def test_a_collection_declares_its_documents_language_english_by_default(tmp_path: Path) -> None:
    text = (
        "collections:\n  - {name: a, title: A, sources: [x]}\n"
        "  - {name: b, title: B, sources: [y], language: de}\n"
    )
    (tmp_path / "x").write_text("x")
    (tmp_path / "y").write_text("y")
    config = load_collections(_file(tmp_path, text))
    assert [c.language for c in config.collections] == ["en", "de"]


def test_connector_sources_sit_beside_file_globs(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("# A\ntext")
    config = load_collections(
        _file(
            tmp_path,
            "collections:\n  - name: eng\n    title: Engineering\n"
            "    sources: [docs/*.md, {web: {url: 'https://docs.example.com', sitemap: true}}]\n",
        )
    )
    eng = config.collections[0]
    assert eng.file_patterns == ("docs/*.md",)
    assert [(c.web.url, c.web.sitemap, c.web.rate) for c in eng.connectors if isinstance(c, WebEntry)] == [
        ("https://docs.example.com", True, 2.0)
    ]
    assert resolve_sources(eng, config) == [tmp_path / "docs/a.md"]


def test_a_misconfigured_connector_source_is_named_with_what_to_fix(tmp_path: Path) -> None:
    text = (
        "collections:\n  - name: eng\n    title: Engineering\n"
        "    sources: [{web: {url: 'ftp://x', rate: 0}}, {wiki: {url: 'https://x'}}, {web: {site: x}}]\n"
    )
    with pytest.raises(CollectionsFileError) as caught:
        load_collections(_file(tmp_path, text))
    problems = caught.value.problems
    assert (
        "collections.0.sources.0.web.url: must be an address starting with https:// (or http:// where the "
        "source allows it)" in problems
    )
    assert "collections.0.sources.0.web.rate: must be greater than 0" in problems
    expected = "expected a path or glob, or one of web, confluence, sharepoint, gdrive"
    assert f"collections.0.sources.1: {expected}" in problems
    assert "collections.0.sources.2.web.site: unknown key (did you mean 'sitemap'?)" in problems


def test_a_partial_read_leaves_out_only_the_collections_whose_source_entries_are_wrong(
    tmp_path: Path,
) -> None:
    text = (
        "collections:\n"
        "  - name: eng\n    title: Engineering\n    sources: [docs/*.md]\n"
        "  - name: wiki\n    title: Wiki\n"
        "    sources: [docs/*.md, {confluence: {url: 'https://x', space: 'A B'}}]\n"
        "  - name: hr\n    title: HR\n    sources: [{sharepoint: {site: 'https://x', user: a@b.c}}]\n"
        "channels:\n  C1: {allow: [eng, wiki]}\n"
    )
    path = _file(tmp_path, text)
    config = load_collections(path, partial=True)
    assert config.names == ("eng",)
    assert [(c.name, c.problems) for c in config.unusable] == [
        ("wiki", ("sources.1.confluence.space: String should match pattern '^[A-Za-z0-9~_-]+$'",)),
        ("hr", ("sources.0.sharepoint: give either site (a SharePoint library) or user (a OneDrive)",)),
    ]
    # Read whole (every other command), the same file is refused with every problem.
    with pytest.raises(CollectionsFileError):
        load_collections(path)
    # A problem outside a source entry still refuses the file, read partially or not.
    with pytest.raises(CollectionsFileError):
        load_collections(_file(tmp_path, text.replace("title: HR", "titel: HR")), partial=True)
