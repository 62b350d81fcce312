"""The web connector: a site crawled from its start address and sitemap, politely.

- Same site only: links to another host (or scheme, or port) are not followed.
- robots.txt is honoured (RFC 9309): a disallowed path is never requested, a ``Crawl-delay``
  slows the rate down, its ``Sitemap:`` lines are read when the source asks for sitemaps.
- At most ``rate`` requests a second to the host; 429 and 503 with ``Retry-After`` are waited out
  (``retrieval.connectors.http``).
- Each page is asked for conditionally (``If-None-Match`` with its ETag, ``If-Modified-Since``
  with its Last-Modified; RFC 9110 §13.1): a 304 costs no download and keeps what was stored, its
  links included, so the crawl goes on through it.
- A page is stored under its canonical address (``<link rel="canonical">`` on the same site), so
  the same page reached by two addresses is one document.
- Pages give their main text (trafilatura); PDFs and the other file types the loaders read are
  followed like pages.
- A page that answers 404 or 410, or that the crawl no longer reaches, is deleted; a crawl cut
  short (``max_pages``, or an error) deletes nothing.
"""

import json
import logging
import warnings
from collections import deque
from collections.abc import AsyncIterator, Mapping
from pathlib import PurePosixPath
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning
from bs4.element import Tag

from retrieval.collections import WebSource
from retrieval.connectors.base import Change, FetchResult, KnownDocument, Readers
from retrieval.connectors.convert import HTML_TYPES, convert, suffix_for
from retrieval.connectors.http import PoliteClient, Response, get_or_fail
from retrieval.errors import DocumentLoadError, SourceError, SourceProblem

logger = logging.getLogger(__name__)

ROBOTS_AGENT = "ConferBot"
# Links to these are not documents: not requested at all.
_SKIPPED_SUFFIXES = frozenset(
    ".png .jpg .jpeg .gif .svg .webp .ico .bmp .css .js .mjs .json .xml .zip .gz .tgz .tar .7z .rar "
    ".mp3 .mp4 .m4a .mov .avi .webm .woff .woff2 .ttf .otf .eot .exe .dmg .iso .apk".split()
)


def normalise(url: str) -> str:
    """One spelling per address: no fragment, lower-case scheme and host, no default port, ``/``
    for an empty path."""
    url, _ = urldefrag(url)
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


class WebConnector:
    def __init__(self, *, spec: WebSource, collection: str, client: PoliteClient) -> None:
        self.spec = spec
        self.collection = collection
        self.client = client
        self.start = normalise(spec.url)
        parts = urlsplit(self.start)
        self._site = (parts.scheme, parts.netloc)
        self._robots: RobotFileParser | None = None
        self._by_url: dict[str, KnownDocument] = {}
        self._found: dict[str, tuple[str, ...]] = {}
        self._reached: set[str] = set()
        self._complete = False

    @property
    def key(self) -> str:
        return f"web:{self.start}"

    @property
    def label(self) -> str:
        return self.start

    @property
    def permissions(self) -> bool:
        return False  # a web site: what anyone reaching it may read

    async def readers(self, doc_id: str) -> Readers:
        return None

    def _error(self, problem: SourceProblem, detail: str = "") -> SourceError:
        return SourceError(
            collection=self.collection, source=f"web {self.start}", problem=problem, detail=detail
        )

    async def _get(self, url: str, headers: Mapping[str, str] | None = None) -> Response:
        return await get_or_fail(self.client, url, headers=headers, fail=self._error)

    async def check(self) -> None:
        """Reads robots.txt: the site answers, and says what may be fetched."""
        robots_url = urlunsplit((*self._site, "/robots.txt", "", ""))
        response = await self._get(robots_url)
        robots = RobotFileParser(robots_url)
        if response.status >= 500:
            # RFC 9309 §2.3.1.4: an unreachable robots.txt means nothing may be crawled.
            raise self._error("refused", f"robots.txt answered HTTP {response.status}")
        if response.status == 200:
            robots.parse(response.body.decode("utf-8", errors="replace").splitlines())
        else:
            robots.parse([])  # RFC 9309 §2.3.1.3: no robots.txt, no restriction
        delay = robots.crawl_delay(ROBOTS_AGENT)
        if delay:
            self.client.slow_down(self._site[1], float(delay))
        self._robots = robots
        if not robots.can_fetch(ROBOTS_AGENT, self.start):
            raise self._error("refused", "robots.txt disallows the start address")

    def _allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != self._site:
            return False
        if PurePosixPath(parts.path).suffix.lower() in _SKIPPED_SUFFIXES:
            return False
        return self._robots is not None and self._robots.can_fetch(ROBOTS_AGENT, url)

    async def changes(self, cursor: str | None, known: Mapping[str, KnownDocument]) -> AsyncIterator[Change]:
        """Every page the crawl reaches: a site has no change list, so each page is asked for
        conditionally instead. ``cursor`` is unused."""
        if self._robots is None:
            await self.check()
        self._by_url = {k.fetched_from or k.doc_id: k for k in known.values()}
        self._reached.clear()
        self._complete = False
        queued = {self.start}
        frontier = deque([self.start])
        for url in await self._sitemap_pages():
            if url not in queued and self._allowed(url):
                queued.add(url)
                frontier.append(url)
        count = 0
        while frontier:
            if count >= self.spec.max_pages:
                logger.warning("stopped at max_pages=%d", count, extra={"source": self.start})
                return
            url = frontier.popleft()
            count += 1
            yield Change(doc_id=url, ref=url)
            for link in self._found.pop(url, ()):
                if link not in queued and self._allowed(link):
                    queued.add(link)
                    frontier.append(link)
        self._complete = True

    async def _sitemap_pages(self) -> list[str]:
        if self.spec.sitemap is False:
            return []
        if isinstance(self.spec.sitemap, str):
            sitemaps = [urljoin(self.start, self.spec.sitemap)]
        else:
            named = self._robots.site_maps() if self._robots is not None else None
            sitemaps = list(named or [urlunsplit((*self._site, "/sitemap.xml", "", ""))])
        pages: list[str] = []
        seen: set[str] = set()
        while sitemaps and len(seen) < 100:  # a sitemap index may name other sitemaps
            address = normalise(sitemaps.pop(0))
            if address in seen or urlsplit(address)[:2] != self._site:
                continue
            seen.add(address)
            response = await self._get(address)
            if response.status != 200:
                logger.warning("sitemap answered HTTP %d", response.status, extra={"source": address})
                continue
            # html.parser reads no entities nor DTDs: nothing in a sitemap can make it fetch anything.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
                soup = BeautifulSoup(response.body.decode("utf-8", errors="replace"), "html.parser")
            for entry in soup.find_all(["sitemap", "url"]):
                loc = entry.find("loc") if isinstance(entry, Tag) else None
                if loc is None:
                    continue
                target = normalise(urljoin(address, loc.get_text(strip=True)))
                (sitemaps if entry.name == "sitemap" else pages).append(target)
        return pages

    async def fetch(self, change: Change, known: KnownDocument | None) -> FetchResult:
        url = change.ref or change.doc_id
        prior = known or self._by_url.get(url)
        headers: dict[str, str] = {}
        if prior is not None:
            etag, modified = json.loads(prior.version or "[null, null]")
            if etag:
                headers["If-None-Match"] = etag
            if modified:
                headers["If-Modified-Since"] = modified
        response = await self._get(url, headers)
        final = normalise(response.url)
        if response.status == 304 and prior is not None:
            self._found[url] = prior.related
            self._reached.add(prior.doc_id)
            return FetchResult("unchanged", prior.doc_id, prior.version, related=prior.related)
        gone_id = prior.doc_id if prior is not None else url
        if response.status in (404, 410):
            if url == self.start:
                raise self._error("not_found", f"HTTP {response.status}")
            return FetchResult("gone", gone_id, detail=f"HTTP {response.status}")
        if response.status >= 500 or response.status == 429:
            # Stop here, deleting nothing: the next sync resumes (what was stored is asked for
            # conditionally) once the site answers again.
            raise self._error("interrupted", f"HTTP {response.status} at {url}")
        if response.status != 200 or urlsplit(final)[:2] != self._site:
            return FetchResult("gone", gone_id, detail=f"HTTP {response.status}")
        suffix = suffix_for(response.media_type, final)
        if suffix is None:
            return FetchResult("gone", gone_id, detail=f"not a document ({response.media_type})")
        canonical, links = final, tuple[str, ...]()
        if response.media_type in HTML_TYPES:
            canonical, links = self._page_links(response, final)
        version = json.dumps([response.headers.get("ETag"), response.headers.get("Last-Modified")])
        try:
            documents = convert(response.body, suffix=suffix, source=canonical, url=canonical)
        except DocumentLoadError as exc:
            logger.info("no text: %s", exc.reason, extra={"source": canonical})
            documents = ()  # kept (with its links and validators), so the crawl passes through it
        self._found[url] = links
        self._reached.add(canonical)
        return FetchResult("fetched", canonical, version, documents, fetched_from=url, related=links)

    def _page_links(self, response: Response, final: str) -> tuple[str, tuple[str, ...]]:
        soup = BeautifulSoup(response.body.decode("utf-8", errors="replace"), "html.parser")
        base = soup.find("base", href=True)
        base_url = urljoin(final, str(base["href"])) if isinstance(base, Tag) else final
        canonical = final
        tag = soup.find("link", rel="canonical", href=True)
        if isinstance(tag, Tag):
            candidate = normalise(urljoin(base_url, str(tag["href"])))
            if urlsplit(candidate)[:2] == self._site:
                canonical = candidate
        links: dict[str, None] = {}
        for anchor in soup.find_all("a", href=True):
            if not isinstance(anchor, Tag) or "nofollow" in (anchor.get("rel") or []):
                continue
            href = str(anchor["href"]).strip()
            if href.startswith(("mailto:", "tel:", "javascript:", "#")):
                continue
            links[normalise(urljoin(base_url, href))] = None
        return canonical, tuple(links)

    async def existing(self) -> set[str] | None:
        return set(self._reached) if self._complete else None

    async def close(self) -> None:
        await self.client.close()
