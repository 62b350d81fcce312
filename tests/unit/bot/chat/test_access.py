"""The channel policy: closed by default once a ``channels:`` section exists."""

from pathlib import Path

import pytest

from bot.chat.access import PlaceDeniedError, effective_policy, policy_for, require_policy
from retrieval.collections import CollectionsConfig, load_collections

COLLECTIONS = """
collections:
  - name: eng
    title: Engineering
    sources: [docs/*.md]
  - name: hr
    title: People
    sources: [hr.txt]
"""


def _config(tmp_path: Path, channels: str = "") -> CollectionsConfig:
    path = tmp_path / "collections.yaml"
    path.write_text(COLLECTIONS + channels, encoding="utf-8")
    return load_collections(path)


def test_without_a_channels_section_every_place_searches_everything(tmp_path: Path) -> None:
    config = _config(tmp_path)
    for place in ("C1", "D1", None):
        assert require_policy(config, place).allow == ("eng", "hr")
    [rule] = effective_policy(config)
    assert (rule.place, rule.allow) == ("*", ("eng", "hr"))


def test_a_star_entry_covers_every_unlisted_place(tmp_path: Path) -> None:
    config = _config(tmp_path, 'channels:\n  C1: {allow: [eng], default: [eng]}\n  "*": {allow: [hr]}\n')
    assert require_policy(config, "C1").allow == ("eng",)
    assert require_policy(config, "C9").allow == ("hr",)
    assert require_policy(config, "D0DIRECT").allow == ("hr",)


def test_without_a_star_entry_unlisted_channels_and_direct_messages_are_denied(tmp_path: Path) -> None:
    config = _config(tmp_path, "channels:\n  C1: {allow: [hr]}\n  C2: {allow: [eng, hr], default: [eng]}\n")
    assert require_policy(config, "C1").allow == ("hr",)
    for place in ("C9", "G0PRIVATE", "D0DIRECT", "", "*"):
        assert policy_for(config, place) is None
        with pytest.raises(PlaceDeniedError) as denied:
            require_policy(config, place)
        assert denied.value.places == ("C1", "C2")
    rules = {rule.place: (rule.allow, rule.default) for rule in effective_policy(config)}
    assert rules == {"C1": (("hr",), ()), "C2": (("eng", "hr"), ("eng",)), "*": ((), ())}


def test_the_terminal_is_the_operator_and_searches_everything(tmp_path: Path) -> None:
    config = _config(tmp_path, "channels:\n  C1: {allow: [hr]}\n")
    assert require_policy(config, None).allow == ("eng", "hr")
