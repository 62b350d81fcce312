from pathlib import Path

import pytest

from bot.settings import SettingsError, load_settings

PREFIX = "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__"
APP_ID = "11111111-2222-3333-4444-555555555555"
TENANT = "00000000-0000-0000-0000-0000000000aa"


def test_teams_needs_app_id_tenant_and_exactly_one_credential(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(f"{PREFIX}CLIENTID", APP_ID)
    monkeypatch.setenv(f"{PREFIX}TENANTID", TENANT)
    with pytest.raises(SettingsError, match="set them all, or none"):
        load_settings(env_file=None)
    monkeypatch.setenv(f"{PREFIX}CLIENTSECRET", "a-real-looking-secret")
    settings = load_settings(env_file=None)
    assert settings.teams_enabled and not settings.teams_local and settings.listen_host == "0.0.0.0"
    assert "a-real-looking-secret" not in repr(settings)
    certificate = tmp_path / "bot.pfx"
    certificate.write_bytes(b"pfx")
    monkeypatch.setenv(f"{PREFIX}CERTPFXFILE", str(certificate))
    with pytest.raises(SettingsError, match="set them all, or none"):  # a secret and a certificate
        load_settings(env_file=None)
    monkeypatch.delenv(f"{PREFIX}CLIENTSECRET")
    assert load_settings(env_file=None).teams_cert_pfx_file == certificate
    monkeypatch.setenv(f"{PREFIX}CERTPFXFILE", str(tmp_path / "missing.pfx"))
    with pytest.raises(SettingsError, match="CERTPFXFILE: no such file"):
        load_settings(env_file=None)


def test_teams_ids_must_be_guids_and_secrets_not_placeholders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"{PREFIX}CLIENTID", "my-bot")
    monkeypatch.setenv(f"{PREFIX}TENANTID", TENANT)
    monkeypatch.setenv(f"{PREFIX}CLIENTSECRET", "changeme")
    with pytest.raises(SettingsError) as error:
        load_settings(env_file=None)
    assert f"{PREFIX}CLIENTID: must be a GUID" in str(error.value)
    assert f"{PREFIX}CLIENTSECRET: is a placeholder" in str(error.value)
