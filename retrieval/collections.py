"""The collections file: which collections exist, where their sources are, and its ``channels:``
section as written (``bot.chat.access`` decides what it means for a place)."""

import difflib
import glob
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from retrieval.errors import CollectionsFileError
from retrieval.language import DEFAULT_LANGUAGE, SNOWBALL

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
ANY_CHANNEL = "*"


class WebSource(BaseModel):
    """A web site crawled from ``url`` (and its ``sitemap``): see docs/connectors.md."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(pattern=r"^https?://[^/\s]+(/\S*)?$")
    # true: the sitemap.xml at the site's root and those robots.txt names; or a sitemap's address.
    sitemap: bool | str = False
    rate: float = Field(2.0, gt=0, le=50)  # requests per second to one host, at most
    max_pages: int = Field(5000, ge=1)


class WebEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    web: WebSource


class ConfluenceSource(BaseModel):
    """The pages of one Confluence space (Cloud or Data Center): see docs/connectors.md."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Cloud: https://SITE.atlassian.net/wiki; Data Center: the base address, e.g. https://wiki.example.com
    url: str = Field(pattern=r"^https?://[^/\s]+(/\S*)?$")
    space: str = Field(min_length=1, pattern=r"^[A-Za-z0-9~_-]+$")
    rate: float = Field(5.0, gt=0, le=50)
    # Store who may read each page (space permissions, page restrictions, groups expanded) and
    # search only what the asker may read (docs/connectors.md#permissions); default: everyone.
    permissions: bool = False


class ConfluenceEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    confluence: ConfluenceSource


class SharePointSource(BaseModel):
    """A SharePoint document library (``site`` and ``drive``) or a user's OneDrive (``user``), whole
    or one ``folder`` of it, through Microsoft Graph: see docs/connectors.md."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    site: str | None = Field(
        None, pattern=r"^https://[^/\s]+(/\S*)?$"
    )  # https://contoso.sharepoint.com/sites/HR
    user: str | None = Field(None, min_length=3)  # a OneDrive's owner: user principal name or id
    drive: str = "Documents"  # the library's name, with ``site``
    folder: str = Field("/", pattern=r"^/")
    rate: float = Field(5.0, gt=0, le=50)
    permissions: bool = False  # each file's permissions, groups expanded (docs/connectors.md#permissions)

    @model_validator(mode="after")
    def _one_place(self) -> "SharePointSource":
        if (self.site is None) == (self.user is None):
            raise ValueError("give either site (a SharePoint library) or user (a OneDrive)")
        return self


class SharePointEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    sharepoint: SharePointSource


class DriveSource(BaseModel):
    """A Google Drive folder (and its subfolders), in My Drive or a shared drive: see
    docs/connectors.md."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    folder: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_-]+$")  # the id in the folder's address
    rate: float = Field(5.0, gt=0, le=50)
    permissions: bool = False  # each file's sharing (docs/connectors.md#permissions)


class DriveEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    gdrive: DriveSource


ConnectorEntry = WebEntry | ConfluenceEntry | SharePointEntry | DriveEntry


def _source_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "files"
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value)))
    if isinstance(value, ConfluenceEntry):
        return "confluence"
    if isinstance(value, SharePointEntry):
        return "sharepoint"
    if isinstance(value, DriveEntry):
        return "gdrive"
    return "web" if isinstance(value, WebEntry) else None


SourceEntry = Annotated[
    Annotated[str, Tag("files")]
    | Annotated[WebEntry, Tag("web")]
    | Annotated[ConfluenceEntry, Tag("confluence")]
    | Annotated[SharePointEntry, Tag("sharepoint")]
    | Annotated[DriveEntry, Tag("gdrive")],
    Discriminator(
        _source_kind,
        custom_error_type="source_kind",
        custom_error_message="expected a path or glob, or one of web, confluence, sharepoint, gdrive",
    ),
]


class Collection(BaseModel):
    """One searchable collection; ``name`` is the id people type after ``in:``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    title: str = Field(min_length=1)
    description: str = ""
    keywords: tuple[str, ...] = ()
    index: str = ""
    # Paths or globs of files, and connectors (``{web: {...}}``) that bring documents from elsewhere.
    sources: tuple[SourceEntry, ...] = Field(min_length=1)
    # The language the documents are written in (ISO 639-1): a model plans this collection's
    # queries in it, and a "not found" says when the question is in another one.
    language: str = DEFAULT_LANGUAGE

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        if value not in SNOWBALL:
            raise ValueError(f"must be one of {', '.join(sorted(SNOWBALL))}")
        return value

    @field_validator("index")
    @classmethod
    def _index_name(cls, value: str) -> str:
        if value and not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,200}", value):
            raise ValueError("must be a lowercase Elasticsearch index or alias name")
        return value

    @property
    def file_patterns(self) -> tuple[str, ...]:
        return tuple(s for s in self.sources if isinstance(s, str))

    @property
    def connectors(self) -> tuple[ConnectorEntry, ...]:
        return tuple(s for s in self.sources if not isinstance(s, str))

    @property
    def alias(self) -> str:
        """The Elasticsearch alias that names this collection's live index."""
        return self.index or f"confer-{self.name}"


class ChannelPolicy(BaseModel):
    """One entry of ``channels:``: what may be searched there, and what is searched when nobody says."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    allow: tuple[str, ...]
    default: tuple[str, ...] = ()


class UnusableCollection(BaseModel):
    """A collection left out because one of its source entries is misconfigured (``confer index``
    indexes the others): its name, and each problem as ``describe_validation_errors`` words it."""

    model_config = ConfigDict(frozen=True)

    name: str
    problems: tuple[str, ...]


class CollectionsConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    collections: tuple[Collection, ...] = Field(min_length=1)
    channels: dict[str, ChannelPolicy] = Field(default_factory=dict)
    base_dir: Path = Path()
    path: Path = Path("collections.yaml")
    # Read with ``partial``: the collections left out for a misconfigured source entry.
    unusable: tuple[UnusableCollection, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.collections)

    def get(self, name: str) -> Collection | None:
        return next((c for c in self.collections if c.name == name), None)


def load_collections(path: Path, *, partial: bool = False) -> CollectionsConfig:
    """Read and validate a collections file; every problem is reported in one error.

    ``partial`` (``confer index``): a collection whose source entries are the only things wrong
    (a connector's mistyped key, a bad address) is left out, named in ``unusable`` with its
    problems, and the others are read; anything else wrong still refuses the whole file."""
    try:
        raw_text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CollectionsFileError(path=path, problems=["file not found"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CollectionsFileError(path=path, problems=[f"cannot read ({type(exc).__name__})"]) from exc
    try:
        raw: Any = yaml.safe_load(raw_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise CollectionsFileError(path=path, problems=[f"not valid YAML{where}"]) from exc
    if not isinstance(raw, dict):
        raise CollectionsFileError(path=path, problems=["expected a mapping with 'collections'"])
    located = {"base_dir": path.parent.resolve(), "path": path}
    try:
        config = CollectionsConfig.model_validate({**raw, **located})
    except ValidationError as exc:
        unusable = _unusable_collections(raw, exc) if partial else None
        if not unusable:
            raise CollectionsFileError(path=path, problems=describe_validation_errors(exc)) from None
        kept = [c for i, c in enumerate(raw["collections"]) if i not in unusable]
        try:
            config = CollectionsConfig.model_validate({**raw, **located, "collections": kept})
        except ValidationError:  # nothing left, or a problem the first reading did not show
            raise CollectionsFileError(path=path, problems=describe_validation_errors(exc)) from None
        config = config.model_copy(update={"unusable": tuple(unusable.values())})
    problems = _consistency_problems(config)
    if problems:
        raise CollectionsFileError(path=path, problems=problems)
    return config


def _unusable_collections(raw: dict[str, Any], exc: ValidationError) -> dict[int, UnusableCollection] | None:
    """The collections to leave out when every error is in one of their source entries (a mapping:
    a connector, not a path), by position; ``None`` when any error is elsewhere."""
    entries = raw.get("collections")
    if not isinstance(entries, list):
        return None
    found: dict[int, UnusableCollection] = {}
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        if len(loc) == 3 and error["type"] == "too_short" and loc[2] == "sources":
            continue  # "at least one source" only because its entries failed: said by them
        if len(loc) < 4 or loc[0] != "collections" or not isinstance(loc[1], int) or loc[2] != "sources":
            return None
        entry = entries[loc[1]] if loc[1] < len(entries) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        sources = entry.get("sources") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name) or not isinstance(sources, list):
            return None
        if not isinstance(loc[3], int) or loc[3] >= len(sources) or not isinstance(sources[loc[3]], dict):
            return None
        found[loc[1]] = UnusableCollection(name=name, problems=())
    prefix = {i: f"collections.{i}." for i in found}
    lines = describe_validation_errors(exc)
    return {
        i: entry.model_copy(
            update={
                "problems": tuple(
                    line.removeprefix(prefix[i]) for line in lines if line.startswith(prefix[i])
                )
            }
        )
        for i, entry in found.items()
    }


def describe_validation_errors(exc: ValidationError) -> list[str]:
    """Field path and message for each error in Confer's words; an input is shown only where it is
    a name to correct (a collection name, an unknown key)."""
    problems = []
    errors = exc.errors(include_url=False)
    suggested = {
        (*error["loc"][:-1], hint)
        for error in errors
        if error["type"] == "extra_forbidden"
        for hint in difflib.get_close_matches(str(error["loc"][-1]), _known_keys(error["loc"]), 1, 0.6)
    }
    for error in errors:
        if error["type"] == "missing" and error["loc"] in suggested:
            continue  # said by the mistyped key's "did you mean"
        nested = [
            e
            for e in errors
            if len(e["loc"]) > len(error["loc"]) and e["loc"][: len(error["loc"])] == error["loc"]
        ]
        if error["type"] == "too_short" and nested:
            continue  # "at least one item" only because the items themselves failed
        # A connector entry's union tag repeats its key ("sources.0.web.web.url"): said once.
        parts = [str(part) for i, part in enumerate(error["loc"]) if i == 0 or part != error["loc"][i - 1]]
        location = ".".join(parts) or "file"
        problems.append(f"{location}: {_problem(error['type'], error['loc'], error['msg'], error['input'])}")
    return problems


def _problem(kind: str, loc: tuple[int | str, ...], message: str, value: object) -> str:
    if kind == "extra_forbidden":
        return "unknown key" + did_you_mean(str(loc[-1]), _known_keys(loc))
    if kind == "missing":
        return "missing (it is required)"
    if kind == "string_pattern_mismatch" and loc[-1] == "name":
        slug = re.sub(r"[^a-z0-9_-]+", "-", str(value).strip().lower()).strip("-_")[:63]
        example = f" (for example '{slug}')" if re.fullmatch(NAME_PATTERN, slug) else ""
        return (
            f"'{value}' is not a collection name: lowercase letters, digits, '-' and '_', starting "
            f"with a letter or digit, at most 63 characters{example}"
        )
    if kind == "string_pattern_mismatch" and loc[-1] in ("url", "site"):
        return "must be an address starting with https:// (or http:// where the source allows it)"
    if kind == "too_short" and loc[-1] == "sources":
        return "needs at least one file, folder or glob"
    if kind == "too_short" and loc[-1] == "collections":
        return "needs at least one collection"
    if kind == "string_too_short":
        return "must not be empty"
    return message.removeprefix("Value error, ").replace("Input should be", "must be")


def _known_keys(loc: tuple[int | str, ...]) -> list[str]:
    """The keys allowed where an unknown key ``loc`` was found."""
    if len(loc) == 1:
        return ["collections", "channels"]
    sources: dict[str, type[BaseModel]] = {
        "web": WebSource,
        "confluence": ConfluenceSource,
        "sharepoint": SharePointSource,
        "gdrive": DriveSource,
    }
    inside = next((sources[str(part)] for part in reversed(loc[:-1]) if str(part) in sources), None)
    model: type[BaseModel] = inside or (Collection if loc[0] == "collections" else ChannelPolicy)
    return list(model.model_fields)


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """`` (did you mean 'title'?)`` for the closest of ``known``, or nothing when none is close."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _consistency_problems(config: CollectionsConfig) -> list[str]:
    problems: list[str] = []
    seen: set[str] = {c.name for c in config.unusable}  # left out, but named where they may be searched
    for collection in config.collections:
        if collection.name in seen:
            problems.append(f"collection '{collection.name}' is defined more than once")
        seen.add(collection.name)
        for pattern in collection.file_patterns:
            problem = _pattern_problem(pattern)
            if problem:
                problems.append(f"collection '{collection.name}': source '{pattern}' {problem}")
    for channel, policy in config.channels.items():
        for name in policy.allow + policy.default:
            if name not in seen:
                hint = did_you_mean(name, sorted(seen))
                problems.append(f"channels.{channel}: unknown collection '{name}'{hint}")
        for name in policy.default:
            if name in seen and name not in policy.allow:
                problems.append(f"channels.{channel}: default '{name}' is not in allow")
    return problems


def _pattern_problem(pattern: str) -> str | None:
    if not pattern.strip():
        return "is empty"
    if any("**" in part and part != "**" for part in pattern.split("/")):
        return "is not a valid glob ('**' must be a whole path segment)"
    if pattern.count("[") != pattern.count("]"):
        return "is not a valid glob (unbalanced brackets)"
    return None


def resolve_sources(collection: Collection, config: CollectionsConfig) -> list[Path]:
    """The files a collection ingests, sorted; relative patterns resolve against the file's folder.

    Raises ``CollectionsFileError`` when a literal path does not exist or a glob matches nothing,
    so a typo cannot silently empty a collection.
    """
    files: set[Path] = set()
    problems: list[str] = []
    for pattern in collection.file_patterns:
        full = pattern if Path(pattern).is_absolute() else str(config.base_dir / pattern)
        if glob.has_magic(pattern):
            found = glob.glob(full, recursive=True)  # noqa: PTH207 (absolute or relative patterns)
            matches = [Path(p) for p in found if Path(p).is_file()]
            if not matches:
                problems.append(f"collection '{collection.name}': '{pattern}' matches no files")
            files.update(matches)
        elif Path(full).is_file():
            files.add(Path(full))
        elif Path(full).is_dir():
            files.update(p for p in Path(full).rglob("*") if p.is_file())
        else:
            problems.append(f"collection '{collection.name}': source '{pattern}' does not exist")
    if problems:
        raise CollectionsFileError(path=config.path, problems=problems)
    return sorted(files)


def skipped_sources(collection: Collection, config: CollectionsConfig) -> list[tuple[Path, str]]:
    """What a collection's sources name or match but ``resolve_sources`` cannot index, with why:
    dangling symbolic links, and folders named like documents (``notes.md/``). Sorted by path."""
    from retrieval.ingest.loaders import SUPPORTED_SUFFIXES

    found: dict[Path, str] = {}

    def consider(path: Path) -> None:
        if path.is_symlink() and not path.exists():
            found[path] = "a symbolic link to nothing"
        elif path.is_dir() and path.suffix.lower() in SUPPORTED_SUFFIXES:
            found[path] = "a folder named like a document, not a file"

    for pattern in collection.file_patterns:
        full = pattern if Path(pattern).is_absolute() else str(config.base_dir / pattern)
        if glob.has_magic(pattern):
            for match in glob.glob(full, recursive=True):  # noqa: PTH207 (absolute or relative patterns)
                consider(Path(match))
        elif Path(full).is_dir():
            for path in Path(full).rglob("*"):
                consider(path)
        else:
            consider(Path(full))
    return sorted(found.items())
