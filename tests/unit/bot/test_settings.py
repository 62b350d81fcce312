from pathlib import Path

import pytest

from bot.settings import SettingsError, load_settings


def test_defaults_follow_the_design_contract(tmp_path: Path) -> None:
    settings = load_settings(env_file=None)
    assert settings.collections_path == Path("collections.yaml")
    assert settings.data_dir == Path(".confer")
    assert settings.max_fanout == 8
    assert settings.max_rounds == 2
    assert settings.port == 3000
    assert settings.elasticsearch_url is None and settings.llm_model is None


def test_environment_and_dotenv_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = tmp_path / ".env"
    env.write_text("CONFER_MAX_FANOUT=3\nELASTICSEARCH_URL=http://es:9200/\n")
    monkeypatch.setenv("PORT", "8080")
    settings = load_settings(env_file=str(env))
    assert (settings.max_fanout, settings.elasticsearch_url, settings.port) == (3, "http://es:9200", 8080)


def test_every_problem_is_named_once_and_no_secret_is_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFER_MAX_FANOUT", "zero")
    monkeypatch.setenv("PORT", "70000")
    monkeypatch.setenv("ELASTICSEARCH_URL", "es:9200")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "changeme")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-very-secret-token")
    monkeypatch.setenv("CONFER_LOG_LEVEL", "loud")
    with pytest.raises(SettingsError) as caught:
        load_settings(env_file=None)
    names = sorted(p.split(":")[0] for p in caught.value.problems)
    assert names == [
        "CONFER_LOG_LEVEL",
        "CONFER_MAX_FANOUT",
        "ELASTICSEARCH_URL",
        "PORT",
        "SLACK_SIGNING_SECRET",
    ]
    assert "changeme" not in str(caught.value) and "xoxb" not in str(caught.value)


def test_secrets_are_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_API_KEY", "sk-abc123")
    settings = load_settings(env_file=None)
    assert "sk-abc123" not in repr(settings) and "sk-abc123" not in str(settings.model_dump())
    assert settings.llm_api_key is not None and settings.llm_api_key.get_secret_value() == "sk-abc123"


def test_conversation_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(env_file=None)
    assert (settings.thread_followups, settings.thread_ttl_days, settings.database_url) == (True, 30, None)
    monkeypatch.setenv("CONFER_THREAD_FOLLOWUPS", "off")
    monkeypatch.setenv("CONFER_THREAD_TTL_DAYS", "7")
    settings = load_settings(env_file=None)
    assert (settings.thread_followups, settings.thread_ttl_days) == (False, 7)
    monkeypatch.setenv("CONFER_THREAD_FOLLOWUPS", "sometimes")
    monkeypatch.setenv("CONFER_THREAD_TTL_DAYS", "0")
    with pytest.raises(SettingsError) as caught:
        load_settings(env_file=None)
    assert sorted(p.split(":")[0] for p in caught.value.problems) == [
        "CONFER_THREAD_FOLLOWUPS",
        "CONFER_THREAD_TTL_DAYS",
    ]
