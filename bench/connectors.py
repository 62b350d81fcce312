"""The web connector's indexing throughput against a real local web site (tests/fakes/site.py):
what fetching and extracting pages costs, what embedding their passages costs, and which of the
two bounds a sync at the connector's default rate.

The site is made of the sample documents (samples/*/*.md) as HTML pages with navigation and a
footer, copied until it has ``pages`` pages, each linked from the start page and listed in its
sitemap. Three timings, each on a fresh state:

- fetching: a crawl with no rate limit (``rate`` 1,000/s), so that what is timed is the requests,
  trafilatura's extraction and the sync state's writes, with no embedding;
- embedding: the crawled documents chunked as ``confer index`` does and embedded by the local model
  (``LocalEmbedder``, as ``bot.wiring`` builds it);
- at the default rate: the crawl as a source configured with no ``rate`` runs it, whose time is
  bounded by the rate (one request every 1/rate s to the host).
"""

import asyncio
import re
import tempfile
import time
from html import escape
from pathlib import Path
from typing import Any

from retrieval.collections import WebSource
from retrieval.connectors import PoliteClient, SyncState, stored_documents, sync_source
from retrieval.connectors.web import WebConnector
from retrieval.embeddings import LocalEmbedder, passage_text
from retrieval.ingest.chunker import chunk_document
from tests.fakes.site import Site, serve_site

ROOT = Path(__file__).resolve().parent.parent
NAV = (
    '<header><nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/careers">Careers</a> '
    "Kestrel documentation</nav></header>"
)
FOOTER = "<footer><p>Copyright 2026 Kestrel Systems. Imprint, privacy and cookies.</p></footer>"


def _html(markdown: str) -> str:
    blocks = []
    for block in re.split(r"\n\s*\n", markdown):
        text = " ".join(block.split())
        if not text or text.startswith("---"):
            continue
        heading = re.match(r"^(#{1,3})\s+(.*)$", text)
        if heading:
            level = len(heading.group(1))
            blocks.append(f"<h{level}>{escape(heading.group(2))}</h{level}>")
        else:
            blocks.append(f"<p>{escape(text.lstrip('-* '))}</p>")
    return "".join(blocks)


def build_site(site: Site, pages: int) -> list[str]:
    """The site's pages (their paths), each a sample document with navigation and a footer."""
    sources = sorted((ROOT / "samples").glob("*/*.md"))
    paths = [f"/docs/page-{n}" for n in range(pages)]
    for n, path in enumerate(paths):
        body = _html(sources[n % len(sources)].read_text(encoding="utf-8"))
        site.write(
            path,
            f"<!doctype html><html><head><title>Page {n}</title></head><body>{NAV}"
            f"<main><article>{body}</article></main>{FOOTER}</body></html>",
        )
    links = "".join(f'<li><a href="{p}">Page {n}</a></li>' for n, p in enumerate(paths))
    site.write(
        "index.html",
        f"<!doctype html><html><head><title>Docs</title></head><body>{NAV}<main><h1>Documentation</h1>"
        f"<p>Every page of the Kestrel documentation, in the order they were written.</p><ul>{links}</ul>"
        f"</main>{FOOTER}</body></html>",
    )
    site.write("robots.txt", "User-agent: *\nDisallow: /private/\n")
    return paths


async def _crawl(site: Site, folder: Path, rate: float | None) -> tuple[float, SyncState, WebConnector]:
    spec = WebSource(url=f"{site.base}/")
    if rate is not None:  # past the 50/s a collections file may ask for: fetching unthrottled
        spec = spec.model_copy(update={"rate": rate})
    connector = WebConnector(spec=spec, collection="site", client=PoliteClient(rate=spec.rate))
    state = SyncState(folder / "state.sqlite3")
    started = time.perf_counter()
    await sync_source(connector, state, collection="site")
    seconds = time.perf_counter() - started
    await connector.close()
    return seconds, state, connector


async def measure_web_connector(pages: int = 60, default_rate_pages: int = 20) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="confer-bench-") as temporary:
        folder = Path(temporary)
        with serve_site(folder / "site") as site:
            build_site(site, pages)
            (folder / "fast").mkdir()
            fetch_seconds, state, connector = await _crawl(site, folder / "fast", rate=1000)
            documents = stored_documents(state, "site", connector)
            state.close()
            passages = [p for d in documents for p in chunk_document(d, collection="site")]
            embedder = LocalEmbedder()
            embedder.warm()
            started = time.perf_counter()
            await embedder.embed_passages([passage_text(p.title, p.text) for p in passages])
            embed_seconds = time.perf_counter() - started
            await embedder.close()

        with serve_site(folder / "small-site") as site:
            build_site(site, default_rate_pages)
            (folder / "default").mkdir()
            default_seconds, state, _ = await _crawl(site, folder / "default", rate=None)
            state.close()
    fetched = pages + 1  # the start page too
    default = WebSource(url="http://x").rate
    per_page_embed = embed_seconds / len(documents)
    per_page_fetch = fetch_seconds / fetched
    return {
        "pages": fetched,
        "documents": len(documents),
        "passages": len(passages),
        "fetch_seconds": round(fetch_seconds, 2),
        "fetch_pages_per_s": round(fetched / fetch_seconds, 1),
        "embed_seconds": round(embed_seconds, 2),
        "embed_passages_per_s": round(len(passages) / embed_seconds, 1),
        "embed_pages_per_s": round(len(documents) / embed_seconds, 1),
        "default_rate": default,
        "default_rate_pages": default_rate_pages + 1,
        "default_rate_seconds": round(default_seconds, 2),
        "default_rate_pages_per_s": round((default_rate_pages + 1) / default_seconds, 2),
        # At the default rate a page takes max(1/rate, fetching) to arrive and per_page_embed to embed.
        "bottleneck_at_default_rate": "embedder"
        if per_page_embed > max(1 / default, per_page_fetch)
        else "fetching",
    }


def markdown(result: dict[str, Any]) -> list[str]:
    return [
        "## Web connector: indexing throughput",
        "",
        f"A local site of {result['pages']} pages (the sample documents as HTML with navigation and "
        f"a footer), {result['passages']} passages.",
        "",
        "| stage | seconds | pages/s | passages/s |",
        "|---|---|---|---|",
        f"| fetching + extraction (no rate limit) | {result['fetch_seconds']} "
        f"| {result['fetch_pages_per_s']} | |",
        f"| embedding (local model) | {result['embed_seconds']} | {result['embed_pages_per_s']} "
        f"| {result['embed_passages_per_s']} |",
        f"| crawl at the default rate ({result['default_rate']:g}/s), {result['default_rate_pages']} pages "
        f"| {result['default_rate_seconds']} | {result['default_rate_pages_per_s']} | |",
        "",
        f"Bottleneck at the default rate: **{result['bottleneck_at_default_rate']}**.",
        "",
    ]


if __name__ == "__main__":
    import json

    print(json.dumps(asyncio.run(measure_web_connector()), indent=2))
