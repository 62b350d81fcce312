"""Settings from the environment and ``.env``, validated once at start-up: one ``SettingsError``
names every bad variable (a mistyped name in ``.env`` with the setting it was probably meant to
be), never a secret's value."""

import difflib
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from retrieval.errors import ConferError

_PLACEHOLDERS = frozenset(
    {"changeme", "change-me", "secret", "xxx", "todo", "your-secret-here", "placeholder"}
)


class SettingsError(ConferError):
    """Invalid configuration: every problem in one error, no secret values."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


_TEAMS = "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


class ConferSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=False)

    collections_path: Path = Field(Path("collections.yaml"), validation_alias=_env("CONFER_COLLECTIONS"))
    data_dir: Path = Field(Path(".confer"), validation_alias=_env("CONFER_DATA_DIR"))
    max_fanout: int = Field(8, ge=1, le=64, validation_alias=_env("CONFER_MAX_FANOUT"))
    max_rounds: int = Field(2, ge=1, le=5, validation_alias=_env("CONFER_MAX_ROUNDS"))
    top_k: int = Field(8, ge=1, le=100, validation_alias=_env("CONFER_TOP_K"))
    branch_timeout: float = Field(20.0, gt=0, le=600, validation_alias=_env("CONFER_BRANCH_TIMEOUT_SECONDS"))
    question_timeout: float = Field(
        60.0, gt=0, le=1800, validation_alias=_env("CONFER_QUESTION_TIMEOUT_SECONDS")
    )
    # Seconds after the question's time-out that a chat may still retry to show its answer or say it
    # failed (a platform answering 429 or 5xx): no retry waits beyond that (bot/chat/deadline.py).
    delivery_timeout: float = Field(30.0, gt=0, le=600, validation_alias=_env("CONFER_DELIVERY_SECONDS"))
    routing_ratio: float = Field(0.5, gt=0, le=1, validation_alias=_env("CONFER_ROUTING_RATIO"))
    log_level: str = Field("INFO", validation_alias=_env("CONFER_LOG_LEVEL"))
    log_format: Literal["plain", "json"] = Field("plain", validation_alias=_env("CONFER_LOG_FORMAT"))

    elasticsearch_url: str | None = Field(None, validation_alias=_env("ELASTICSEARCH_URL"))
    elasticsearch_api_key: SecretStr | None = Field(None, validation_alias=_env("ELASTICSEARCH_API_KEY"))

    # Search and answers by meaning: the local model (default), an OpenAI-compatible endpoint, or off.
    embeddings: Literal["local", "endpoint", "off"] = Field(
        "local", validation_alias=_env("CONFER_EMBEDDINGS")
    )
    embeddings_base_url: str | None = Field(None, validation_alias=_env("EMBEDDINGS_BASE_URL"))
    embeddings_api_key: SecretStr | None = Field(None, validation_alias=_env("EMBEDDINGS_API_KEY"))
    embeddings_model: str | None = Field(None, validation_alias=_env("EMBEDDINGS_MODEL"))
    embeddings_dimensions: int | None = Field(
        None, ge=1, le=16384, validation_alias=_env("EMBEDDINGS_DIMENSIONS")
    )
    embeddings_batch_size: int = Field(64, ge=1, le=2048, validation_alias=_env("EMBEDDINGS_BATCH_SIZE"))
    embeddings_cache: Path | None = Field(None, validation_alias=_env("CONFER_EMBEDDINGS_CACHE"))

    llm_base_url: str | None = Field(None, validation_alias=_env("LLM_BASE_URL"))
    llm_api_key: SecretStr | None = Field(None, validation_alias=_env("LLM_API_KEY"))
    llm_model: str | None = Field(None, validation_alias=_env("LLM_MODEL"))
    llm_deadline: float = Field(8.0, gt=0, le=600, validation_alias=_env("CONFER_LLM_DEADLINE_SECONDS"))
    llm_stall: float = Field(5.0, gt=0, le=120, validation_alias=_env("CONFER_LLM_STALL_SECONDS"))
    llm_cooldown: float = Field(30.0, gt=0, le=3600, validation_alias=_env("CONFER_LLM_COOLDOWN_SECONDS"))

    slack_bot_token: SecretStr | None = Field(None, validation_alias=_env("SLACK_BOT_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(None, validation_alias=_env("SLACK_SIGNING_SECRET"))
    slack_app_token: SecretStr | None = Field(None, validation_alias=_env("SLACK_APP_TOKEN"))
    slack_api_url: str | None = Field(None, validation_alias=_env("SLACK_API_URL"))
    # Seconds one Web API call may take before it counts as lost (the SDK's default).
    slack_timeout: int = Field(30, ge=1, le=300, validation_alias=_env("CONFER_SLACK_TIMEOUT_SECONDS"))
    slack_progress: Literal["stream", "edit"] = Field(
        "stream", validation_alias=_env("CONFER_SLACK_PROGRESS")
    )
    # Bots and apps whose @-mentions Confer answers (bot ids B…, app ids A…); any other bot is ignored.
    slack_allowed_bots: Annotated[frozenset[str], NoDecode] = Field(
        frozenset(), validation_alias=_env("CONFER_SLACK_ALLOWED_BOTS")
    )
    port: int = Field(3000, ge=1, le=65535, validation_alias=_env("PORT"))
    host: str | None = Field(None, validation_alias=_env("CONFER_HOST"))
    max_concurrent_questions: int = Field(
        8, ge=1, le=256, validation_alias=_env("CONFER_MAX_CONCURRENT_QUESTIONS")
    )
    shutdown_grace: float = Field(30.0, ge=0, le=600, validation_alias=_env("CONFER_SHUTDOWN_GRACE_SECONDS"))
    dedupe_ttl: int = Field(3600, ge=60, le=7 * 86400, validation_alias=_env("CONFER_DEDUPE_TTL_SECONDS"))

    # Teams: the Microsoft 365 Agents SDK's own variable names for its service connection.
    teams_app_id: str | None = Field(None, validation_alias=_env(f"{_TEAMS}CLIENTID"))
    teams_app_secret: SecretStr | None = Field(None, validation_alias=_env(f"{_TEAMS}CLIENTSECRET"))
    teams_tenant_id: str | None = Field(None, validation_alias=_env(f"{_TEAMS}TENANTID"))
    teams_cert_pfx_file: Path | None = Field(None, validation_alias=_env(f"{_TEAMS}CERTPFXFILE"))
    teams_local: bool = Field(False, validation_alias=_env("CONFER_TEAMS_LOCAL"))
    teams_timeout: float = Field(30.0, gt=0, le=300, validation_alias=_env("CONFER_TEAMS_TIMEOUT_SECONDS"))

    redis_url: SecretStr | None = Field(None, validation_alias=_env("REDIS_URL"))
    database_url: SecretStr | None = Field(None, validation_alias=_env("DATABASE_URL"))
    thread_ttl_days: float = Field(30.0, gt=0, le=3650, validation_alias=_env("CONFER_THREAD_TTL_DAYS"))
    thread_followups: bool = Field(True, validation_alias=_env("CONFER_THREAD_FOLLOWUPS"))
    # The answer cache: off, in process, or Redis (the default when REDIS_URL is set), and how long
    # an answer is kept (a changed collection invalidates its answers at once, whatever the TTL).
    cache: Literal["off", "memory", "redis"] | None = Field(None, validation_alias=_env("CONFER_CACHE"))
    cache_ttl: int = Field(86400, ge=1, le=30 * 86400, validation_alias=_env("CONFER_CACHE_TTL_SECONDS"))
    # How long an answer's trace ("How I found this", ``confer trace``) is kept with it.
    trace_retention_days: float = Field(
        30.0, gt=0, le=3650, validation_alias=_env("CONFER_TRACE_RETENTION_DAYS")
    )

    @field_validator("elasticsearch_url", "llm_base_url", "slack_api_url", "embeddings_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    @field_validator("embeddings", mode="before")
    @classmethod
    def _embeddings_word(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _endpoint_complete(self) -> "ConferSettings":
        if self.embeddings == "endpoint" and not self.embeddings_model:
            raise ValueError(
                "CONFER_EMBEDDINGS=endpoint needs EMBEDDINGS_MODEL "
                "(and EMBEDDINGS_BASE_URL unless it is OpenAI's)"
            )
        return self

    @property
    def vector_cache_path(self) -> Path:
        """Where passage vectors are kept by model and content (reused by re-indexing and evaluations)."""
        return self.embeddings_cache or self.data_dir / "embeddings.sqlite3"

    @field_validator("slack_allowed_bots", mode="before")
    @classmethod
    def _slack_ids(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        ids = frozenset(part.strip() for part in value.split(",") if part.strip())
        bad = sorted(i for i in ids if not re.fullmatch(r"[AB][A-Z0-9]{2,40}", i))
        if bad:
            raise ValueError(
                f"must be Slack bot ids (B…) or app ids (A…), comma-separated; not {', '.join(bad)}"
            )
        return ids

    @field_validator("llm_model", "embeddings_model")
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("teams_app_id", "teams_tenant_id")
    @classmethod
    def _teams_id(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not re.fullmatch(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", value):
            raise ValueError("must be a GUID (the Entra app or tenant id)")
        return value

    @model_validator(mode="after")
    def _teams_complete(self) -> "ConferSettings":
        credential = [c for c in (self.teams_app_secret, self.teams_cert_pfx_file) if c is not None]
        given = [self.teams_app_id, self.teams_tenant_id, *credential]
        if any(given) and not (self.teams_app_id and self.teams_tenant_id and len(credential) == 1):
            raise ValueError(
                f"{_TEAMS}CLIENTID, {_TEAMS}TENANTID and one of {_TEAMS}CLIENTSECRET or "
                f"{_TEAMS}CERTPFXFILE: set them all, or none"
            )
        if self.teams_cert_pfx_file is not None and not self.teams_cert_pfx_file.is_file():
            raise ValueError(f"{_TEAMS}CERTPFXFILE: no such file")
        if self.teams_local and any(given):
            raise ValueError("CONFER_TEAMS_LOCAL: local mode takes no Teams credentials; unset them")
        if self.teams_local and self.host not in (None, *LOOPBACK_HOSTS):
            raise ValueError(
                "CONFER_HOST: local mode accepts unauthenticated activities, so it listens on 127.0.0.1 only"
            )
        return self

    @property
    def listen_host(self) -> str:
        """Every interface in a container; only this machine in Teams local mode."""
        if self.host:
            return self.host
        return "127.0.0.1" if self.teams_local else "0.0.0.0"  # noqa: S104

    @property
    def slack_enabled(self) -> bool:
        return self.slack_bot_token is not None

    @property
    def teams_enabled(self) -> bool:
        return self.teams_local or self.teams_app_id is not None

    @field_validator("thread_followups", mode="before")
    @classmethod
    def _on_off(cls, value: object) -> object:
        if isinstance(value, str):
            word = value.strip().lower()
            if word in ("on", "off"):
                return word == "on"
            if word not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError("must be on or off")
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ValueError("must be DEBUG, INFO, WARNING or ERROR")
        return level

    @field_validator(
        "slack_signing_secret",
        "slack_bot_token",
        "slack_app_token",
        "llm_api_key",
        "embeddings_api_key",
        "elasticsearch_api_key",
        "teams_app_secret",
    )
    @classmethod
    def _no_placeholder(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        if value.get_secret_value().strip().lower() in _PLACEHOLDERS:
            raise ValueError("is a placeholder; set the real value")
        return value


_FIELD_TO_ENV = {
    name: str(field.validation_alias.choices[0])
    for name, field in ConferSettings.model_fields.items()
    if isinstance(field.validation_alias, AliasChoices)
}


_ENV_NAME = re.compile(r"^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*=", re.MULTILINE)


def unknown_names(env_file: Path) -> list[str]:
    """Names in ``env_file`` that look meant for Confer but are none of its settings: every
    ``CONFER_…`` name, and any name close to a setting's (``SLACK_BOT_TOKN``), each with a
    "did you mean" where one is close. Other names (for Docker Compose, say) are left alone."""
    known = sorted(_FIELD_TO_ENV.values())
    problems = []
    try:
        text = env_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []  # reading it is pydantic-settings' part, and its error
    for name in dict.fromkeys(_ENV_NAME.findall(text)):
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        if close:
            problems.append(f"{name} (in {env_file}): not a setting; did you mean {close[0]}?")
        elif name.startswith("CONFER_"):
            problems.append(f"{name} (in {env_file}): not a setting (README, Configuration, lists them)")
    return problems


def load_settings(env_file: str | None = ".env") -> ConferSettings:
    """Read and validate settings, raising ``SettingsError`` that names each bad variable."""
    problems = unknown_names(Path(env_file)) if env_file and Path(env_file).is_file() else []
    try:
        settings = ConferSettings(_env_file=env_file)
    except ValidationError as exc:
        for error in exc.errors(include_input=False, include_url=False):
            message = error["msg"].removeprefix("Value error, ").replace("Input should be", "must be")
            if error["type"] in ("int_parsing", "float_parsing", "bool_parsing"):
                message = {"int": "must be a whole number", "float": "must be a number"}.get(
                    error["type"].split("_")[0], "must be true or false"
                )
            if not error["loc"]:  # a check across variables names them itself
                problems.append(message)
                continue
            field = str(error["loc"][0])
            name = _FIELD_TO_ENV.get(field, field)
            problems.append(f"{name}: {message}")
        raise SettingsError(problems) from None
    if problems:
        raise SettingsError(problems)
    return settings
