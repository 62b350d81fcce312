"""Markdown read as its rendered page: no comments, link syntax, code lines or table pipes in prose."""

from pathlib import Path

from retrieval.ingest.chunker import chunk_document
from retrieval.ingest.loaders import load_file
from retrieval.text import code_blocks, split_sentences

# An excerpt of Node.js's API reference (doc/api/dns.md), as the project writes it.
NODE_DNS = """# DNS

<!--introduced_in=v0.10.0-->

> Stability: 2 - Stable

<!-- source_link=lib/dns.js -->

The `node:dns` module enables name resolution. For example, use it to look up IP
addresses of host names.

Although named for the [Domain Name System (DNS)][], it does not always use the
DNS protocol for lookups. [`dns.lookup()`][] uses the operating system
facilities to perform name resolution. See [the guide](https://nodejs.org/en/learn "Guide").

```mjs
import dns from 'node:dns';

dns.lookup('example.org', (err, address, family) => {
  console.log('address: %j family: IPv%s', address, family);
});
```

## `dns.lookup(hostname[, options], callback)`

<!-- YAML
added: v0.1.90
changes:
  - version: v18.4.0
    pr-url: https://github.com/nodejs/node/pull/43054
    description: For compatibility with `node:net`, the `options` parameter can
                 be an object.
-->

* `hostname` {string}
* `options` {integer | Object}
  * `family` {integer|string} The record family. Must be `4`, `6`, or `0`. The
    value `0` indicates that either an IPv4 or IPv6 address is returned.

[Domain Name System (DNS)]: https://en.wikipedia.org/wiki/Domain_Name_System
[`dns.lookup()`]: #dnslookuphostname-options-callback
"""


def _sentences(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    [document] = load_file(path, source=name)
    return [s for p in chunk_document(document, collection="docs") for s in split_sentences(p.text)]


def test_an_api_reference_reads_without_comments_link_syntax_or_code(tmp_path: Path) -> None:
    sentences = _sentences(tmp_path, "dns.md", NODE_DNS)
    assert sentences == [
        "Stability: 2 - Stable",
        "The node:dns module enables name resolution.",
        "For example, use it to look up IP addresses of host names.",
        "Although named for the Domain Name System (DNS), it does not always use the DNS protocol "
        "for lookups.",
        "dns.lookup() uses the operating system facilities to perform name resolution.",
        "See the guide.",
        "hostname {string}",
        "options {integer | Object}",
        "family {integer|string} The record family.",
        "Must be 4, 6, or 0.",
        "The value 0 indicates that either an IPv4 or IPv6 address is returned.",
    ]


def test_a_code_block_is_kept_whole_in_a_paragraph_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "dns.md"
    path.write_text(NODE_DNS, encoding="utf-8")
    [document] = load_file(path, source="dns.md")
    [first, _] = chunk_document(document, collection="docs")
    assert "\n\n```mjs\nimport dns from 'node:dns';\ndns.lookup(" in first.text
    assert code_blocks(first.text) == [
        "import dns from 'node:dns';\n"
        "dns.lookup('example.org', (err, address, family) => {\n"
        "  console.log('address: %j family: IPv%s', address, family);\n"
        "});"
    ]
    assert document.sections[1].headings == ("dns.lookup(hostname[, options], callback)",)


def test_a_table_is_read_row_by_row_with_its_headers(tmp_path: Path) -> None:
    text = (
        "# Rate limits\n\nLimits per plan, e.g. for the API.\n\n"
        "| Plan | Requests per minute | Burst |\n|---|---:|---|\n"
        "| Free | 60 | |\n| **Team** | 600 | 100 |\n\nAbove the limit, requests get `429`.\n"
    )
    assert _sentences(tmp_path, "limits.md", text) == [
        "Limits per plan, e.g. for the API.",
        "Plan: Free; Requests per minute: 60",
        "Plan: Team; Requests per minute: 600; Burst: 100",
        "Above the limit, requests get 429.",
    ]


def test_front_matter_images_html_and_undefined_references(tmp_path: Path) -> None:
    text = (
        '---\ntitle: "Remote work"\ntags:\n  - people\n  - policy\nurl: https://h.example/remote\n---\n'
        "![The office](office.png)\n\nWork from anywhere [within the EU][eu], up to 90 days.<br>"
        "Ask your manager <!-- TODO: name the form --> first.\n\n"
        "<table><tr><th>Country</th><th>Days</th></tr><tr><td>Spain</td><td>30</td></tr></table>\n"
    )
    path = tmp_path / "remote.md"
    path.write_text(text, encoding="utf-8")
    [document] = load_file(path, source="remote.md")
    assert (document.title, document.url) == ("Remote work", "https://h.example/remote")
    assert _sentences(tmp_path, "remote.md", text) == [
        "Work from anywhere within the EU, up to 90 days.",
        "Ask your manager first.",
        "Country: Spain; Days: 30",
    ]


def test_list_items_stay_one_a_line(tmp_path: Path) -> None:
    text = (
        "# Steps\n\nBefore you deploy:\n\n1. Run the tests\n2. Tag the release\n   with its version\n"
        "- Ask for review\n"
    )
    path = tmp_path / "steps.md"
    path.write_text(text, encoding="utf-8")
    [document] = load_file(path, source="steps.md")
    [passage] = chunk_document(document, collection="docs")
    assert (
        passage.text
        == "Before you deploy:\n\n1. Run the tests\n2. Tag the release with its version\n\n- Ask for review"
    )
    assert split_sentences(passage.text) == [
        "Before you deploy:",
        "Run the tests",
        "Tag the release with its version",
        "Ask for review",
    ]


def test_docusaurus_imports_admonitions_components_and_markdown_inside_html(tmp_path: Path) -> None:
    # As Plausible's documentation (Docusaurus) writes its pages.
    text = (
        "---\ntitle: Change your domain\n---\n\n"
        "import useBaseUrl from '@docusaurus/useBaseUrl';\n"
        "import CtaBox from '@site/src/components/CtaBox';\n\n"
        "Change it in the site settings. <img alt=\"Settings\" src={useBaseUrl('img/settings.png')} />\n\n"
        ":::tip Keep the old domain\nStats stay under the old name. [Read more](stats.md).\n:::\n\n"
        "<table>\n  <tr><th>Installation</th><th>Action</th></tr>\n"
        "  <tr><td>The snippet contains `plausible.init`, as our [GTM template](https://gtm.example) "
        "does.</td>"
        "<td>No action required</td></tr>\n</table>\n\n"
        '<CtaBox\n  headline="Not yet subscribed?"\n  link="https://plausible.io/register"\n/>\n'
    )
    assert _sentences(tmp_path, "change.md", text) == [
        "Change it in the site settings.",
        "Tip: Keep the old domain",
        "Stats stay under the old name.",
        "Read more.",
        "Installation: The snippet contains plausible.init, as our GTM template does.; "
        "Action: No action required",
    ]


def test_a_link_its_writer_left_unclosed_reads_as_its_text(tmp_path: Path) -> None:
    text = (
        "# Style guide\n\nFor more on footnotes, check out: [the citation guide](https://example.org/guides/"
        "footnotes/\n\n## Quotes\n\nAsk before you quote a customer, as [the policy](./quotes.md says.\n"
    )
    assert _sentences(tmp_path, "style.md", text) == [
        "For more on footnotes, check out: the citation guide",
        "Quotes",
        "Ask before you quote a customer, as the policy says.",
    ]
