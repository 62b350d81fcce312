"""README for a newcomer: short, in the order a person needs it, with every metric and setting the
code has (and none it lacks); the rest lives in docs/ and is linked."""

import os
import re
from pathlib import Path

from bot.metrics import build_metrics
from bot.settings import ConferSettings
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.MULTILINE | re.DOTALL)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def _exported_metrics() -> set[str]:
    names = set()
    for metric in build_metrics().registry.collect():
        names.add(f"{metric.name}_total" if metric.type == "counter" else metric.name)
    return names


def test_readme_is_short_and_has_the_sections_a_newcomer_needs() -> None:
    assert len(README.splitlines()) <= 400
    headings = re.findall(r"^## (.+)$", README, re.MULTILINE)
    for title in (
        "Quick start",
        "Your own documents",
        "Command line",
        "Slack",
        "Microsoft Teams",
        "Deploy",
        "Operate",
        "Configuration",
        "Development",
    ):
        assert title in headings, title
    assert headings.index("Quick start") < headings.index("Your own documents") < headings.index("Slack")


def test_quick_start_is_exactly_two_commands_that_the_makefile_has() -> None:
    [block] = re.findall(r"```sh\n(.*?)```", _section("Quick start"), re.DOTALL)[:1]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make run", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.MULTILINE) and re.search(r"^test:", makefile, re.MULTILINE)


def test_every_metric_in_the_readme_is_exported_and_every_exported_metric_is_in_the_readme() -> None:
    in_readme = set(re.findall(r"\bconfer_[a-z0-9_]+", README))
    exported = _exported_metrics()
    assert len(exported) >= 20
    assert in_readme - exported == set(), "named in README but not in bot/metrics.py"
    assert exported - in_readme == set(), "in bot/metrics.py but not listed in README"


def test_every_setting_is_in_the_configuration_reference() -> None:
    table = _section("Configuration")
    for field in ConferSettings.model_fields.values():
        name = str(field.validation_alias.choices[0])  # type: ignore[union-attr]
        short = "…__" + name.rsplit("__", 1)[1] if name.startswith("CONNECTIONS__") else name
        assert f"`{name}`" in table or f"`{short}`" in table, name


def test_no_issue_numbers_or_dated_runs_in_the_readme() -> None:
    assert not re.search(r"(?i)\bissue\b|#\d+\b", README)
    assert not re.search(
        r"\b20\d\d-\d\d-\d\d\b|\b\d{1,2} (January|February|March|April|May|June|July|"
        r"August|September|October|November|December) 20\d\d\b",
        README,
    )


def test_docs_are_linked_from_the_readme_and_every_link_resolves() -> None:
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", README))
    assert linked == {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    for path in (ROOT / "docs").glob("*.md"):
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+\.(?:md|png|ya?ml|json|sh))(?:#[^)]*)?\)", text):
            assert (path.parent / target).exists(), f"{path.name}: {target}"
    dependencies = (ROOT / "docs/dependencies.md").read_text(encoding="utf-8")
    assert dependencies.startswith("# Runtime dependencies and why")


def test_the_set_up_steps_come_in_the_order_a_person_meets_the_values() -> None:
    slack = _section("Slack")
    assert slack.index("https://") < slack.index("From an app manifest") < slack.index("Install to Workspace")
    # the bot token appears on the install page: no step asks for it earlier
    assert slack.index("Install to Workspace") < slack.index("`SLACK_BOT_TOKEN`")
    assert slack.index("confer serve") < slack.index("**Retry**")  # verification needs Confer running
    teams = _section("Microsoft Teams").split("**Set-up**", 1)[1]
    assert teams.index("HTTPS") < teams.index("Azure Bot") < teams.index("/api/messages")
    assert teams.index("`version`") < teams.index("package.sh") < teams.index("Upload an app")
    assert "custom apps" in teams
    assert (ROOT / "docs/teams-answer.png").is_file() and "](docs/teams-answer.png)" in README


def _repository_texts() -> dict[str, str]:
    """The repository's own code and docs (not the virtual environment or generated reports)."""
    skipped = {".venv", ".git", "eval-results", "bench-results", "node_modules", "test-artifacts"}
    suffixes = (".py", ".md", ".yaml", ".yml", ".sh", ".toml")
    texts = {}
    for folder, folders, files in os.walk(ROOT):
        folders[:] = [f for f in folders if f not in skipped and not f.startswith((".", "__"))]
        for name in files:
            if name.endswith(suffixes):
                path = Path(folder) / name
                texts[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    return texts


def test_docs_are_reference_and_cite_nothing_outside_the_repository() -> None:
    texts = _repository_texts()
    assert len(texts) > 100
    design = "DESIGN " + "§"  # spelled apart, so that `grep -rn` finds nothing here either
    assert [name for name, text in texts.items() if design in text] == []
    assert [name for name in texts if name.startswith("docs/") and "../shared" in texts[name]] == []
    how = texts["docs/how-it-works.md"]
    # how it works today, not how it was tuned: no "before → after" figures, no measurement diary
    assert not re.search(r"\d[\d.,]* ?%? ?→ ?\d", how), re.findall(r".{30}\d ?→ ?\d.{10}", how)
    assert "## The answer step" in how
    for heading in ("## Data flow", "## The nodes", "## Verification", "## Text handling", "## Layout"):
        assert heading in how, heading
    prose = re.sub(r"```.*?```", "", how, flags=re.DOTALL)  # the diagrams are not paragraphs
    longest = max(len(block.splitlines()) for block in re.split(r"\n(?=- |\n)", prose))
    assert longest <= 25, "a bullet or paragraph of more than 25 lines reads as a diary"
    evaluation = texts["docs/evaluation.md"]
    tables = re.findall(r"^\|[^\n]*\n\|[-:| ]+\|$", evaluation, re.MULTILINE)
    assert len(tables) == 1, "evaluation.md has one table: the current figures"
    assert "→" in texts["docs/changelog.md"]  # the tuning history lives there


def test_the_slack_manifest_and_readme_say_the_same_about_verification() -> None:
    slack = _section("Slack")
    header = (ROOT / "deploy/slack-app-manifest.yaml").read_text().split("\ndisplay_information")[0]
    for words in ("unverified", "expected", "Retry", "Verified"):
        assert words in header, words
        assert words in slack, words
    assert "must already answer" not in header
