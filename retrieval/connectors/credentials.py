"""Connectors' credentials: from the environment (or ``.env``), never from the collections file;
one documented set of variables per kind of source (docs/connectors.md)."""

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class ConfluenceCredentials(BaseSettings):
    """Cloud: an Atlassian account's email and an API token (HTTP basic authentication). Data
    Center: a personal access token (``Authorization: Bearer``)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=False)

    email: str | None = Field(None, validation_alias="CONFLUENCE_EMAIL")
    api_token: SecretStr | None = Field(None, validation_alias="CONFLUENCE_API_TOKEN")
    token: SecretStr | None = Field(None, validation_alias="CONFLUENCE_TOKEN")

    def authorization(self) -> str | None:
        """The ``Authorization`` header's value, or ``None`` when the variables are not set."""
        import base64

        if self.token is not None:
            return f"Bearer {self.token.get_secret_value()}"
        if self.email and self.api_token is not None:
            pair = f"{self.email}:{self.api_token.get_secret_value()}".encode()
            return f"Basic {base64.b64encode(pair).decode()}"
        return None


CONFLUENCE_VARIABLES = "CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN (Cloud) or CONFLUENCE_TOKEN (Data Center)"


class SharePointCredentials(BaseSettings):
    """A Microsoft Entra app registration's client credentials (MSAL, client-credentials flow), and
    the cloud's addresses: the defaults are Microsoft's global cloud; a national cloud has its own
    (``https://login.chinacloudapi.cn``, ``https://microsoftgraph.chinacloudapi.cn/v1.0``)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=False)

    tenant_id: str | None = Field(None, validation_alias="SHAREPOINT_TENANT_ID")
    client_id: str | None = Field(None, validation_alias="SHAREPOINT_CLIENT_ID")
    client_secret: SecretStr | None = Field(None, validation_alias="SHAREPOINT_CLIENT_SECRET")
    authority_host: str = Field(
        "https://login.microsoftonline.com", validation_alias="SHAREPOINT_AUTHORITY_HOST"
    )
    graph_url: str = Field("https://graph.microsoft.com/v1.0", validation_alias="SHAREPOINT_GRAPH_URL")


SHAREPOINT_VARIABLES = "SHAREPOINT_TENANT_ID, SHAREPOINT_CLIENT_ID and SHAREPOINT_CLIENT_SECRET"


class DriveCredentials(BaseSettings):
    """A Google Cloud service account's JSON key file (the standard variable); the folders it reads
    are shared with its email address. ``GDRIVE_API_URL`` is Drive's address (default Google's)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=False)

    key_file: Path | None = Field(None, validation_alias="GOOGLE_APPLICATION_CREDENTIALS")
    api_url: str = Field("https://www.googleapis.com", validation_alias="GDRIVE_API_URL")


DRIVE_VARIABLES = "GOOGLE_APPLICATION_CREDENTIALS (a service account's JSON key file)"
