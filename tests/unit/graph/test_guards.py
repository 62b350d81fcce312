"""Guards against sentences that keep a passage's words and change its meaning."""

from pathlib import Path

import pytest

from bot.evaluation.faithfulness import KINDS, build_suite, grade, mutate
from graph.verify.citations import is_supported
from graph.verify.guards import Value, check, is_quoted, values

PASSAGE = (
    "Jane Smith was an American reporter who covered the war for 18 months. She wrote three books. "
    "Her brother Tom Smith was a British painter. The museum is the largest in the city and opened "
    "in 1990, after the flood. It did not admit children. Nobody is on call more than one week in four."
)


@pytest.mark.parametrize(
    "sentence",
    [
        "Jane Smith was an American reporter who covered the war for 18 months.",
        "Jane Smith was an American reporter who covered the war for eighteen months.",
        "She wrote 3 books.",
        "It did not admit children.",
        "The museum opened in 1990, after the flood.",
        "Tom Smith was a British painter.",
    ],
)
def test_true_sentences_pass(sentence: str) -> None:
    assert check(sentence, [PASSAGE]) is None


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("Jane Smith was not an American reporter who covered the war for 18 months.", "negation"),
        ("It admitted children.", "negation"),
        ("It did admit children.", "negation"),
        ("Nobody is not on call more than one week in four.", "negation"),
        ("Jane Smith was an American reporter who covered the war for 18 weeks.", "number"),
        ("She wrote five books.", "number"),
        ("She wrote 5 books.", "number"),
        ("The museum is the largest in the city and opened in 1991, after the flood.", "number"),
        ("Jane Smith was a British reporter who covered the war for 18 months.", "name"),
        ("Tom Smith was an American reporter who covered the war for 18 months.", "name"),
        ("Jane Smith was a French reporter who covered the war for 18 months.", "name"),
        ("Jane Smith was the only American reporter who covered the war for 18 months.", "quantifier"),
        ("She always wrote three books.", "quantifier"),
        ("The museum is the smallest in the city and opened in 1990, after the flood.", "quantifier"),
        ("The museum is the largest in the city and opened in 1990, before the flood.", "comparative"),
        ("Tom Smith was a British painter older than Jane Smith.", "comparative"),
        ("The weather in the city was pleasant.", "unsupported"),
    ],
)
def test_changed_sentences_fail_with_their_reason(sentence: str, reason: str) -> None:
    assert check(sentence, [PASSAGE]) == reason
    assert not is_supported(sentence, [PASSAGE])


def test_values_are_normalised_with_units() -> None:
    assert values("18 months, eighteen months, 40%, 40 percent, the 3rd and third, $5, 2 million") == [
        Value(18, False, "month"),
        Value(18, False, "month"),
        Value(40, False, "percent"),
        Value(40, False, "percent"),
        Value(3, True, None),
        Value(3, True, None),
        Value(5, False, "dollar"),
        Value(2_000_000, False, None),
    ]


def test_a_value_the_passage_states_elsewhere_cannot_replace_the_anchors_value() -> None:
    passage = "The plan costs 10 dollars a month. Support answers within 24 hours."
    assert check("The plan costs 24 dollars a month.", [passage]) == "number"


def test_a_name_can_replace_a_pronoun() -> None:
    passage = "Jane Smith grew up in Ohio. She became a reporter in 1990."
    assert check("Jane Smith became a reporter in 1990.", [passage]) is None


def test_mutations_change_one_thing() -> None:
    assert mutate("She was a reporter.", "negation") == "She was not a reporter."
    assert mutate("She was not a reporter.", "negation") == "She was a reporter."
    assert mutate("He served 18 months.", "number") == "He served 18 years."
    assert mutate("They had three sons.", "number") == "They had five sons."
    assert mutate("He was an American actor.", "name") == "He was an British actor."
    assert mutate("He was an actor.", "quantifier") == "He was the only actor."
    assert mutate("She is older than him.", "comparative") == "She is younger than him."
    assert mutate("She said that Tom hired Anna.", "roles") == "She said that Anna hired Tom."
    assert mutate("She met Tom and Anna.", "roles") is None  # one list: the same role either way
    assert mutate("The fans of Rugby watched the Rugby World Cup.", "roles") is None  # one inside another
    assert mutate("Plain words here.", "negation") is None


def _sample_passages() -> list[str]:
    root = Path(__file__).resolve().parents[3] / "samples"
    texts = [f.read_text() for f in sorted(root.rglob("*")) if f.suffix in (".md", ".txt", ".rst")]
    return [p for t in texts for p in t.split("\n\n") if len(p.split()) > 8]


def test_no_changed_sentence_of_the_guarded_kinds_passes_on_the_samples() -> None:
    cases = build_suite(_sample_passages())
    report = grade(cases, lambda sentence, passage: is_supported(sentence, [passage]))
    for kind in KINDS:
        if kind != "roles":  # a swap that only reorders a list is still true (test_roles.py)
            assert report[kind]["total"] >= 10, kind
            assert report[kind]["slipped"] == 0, (kind, report[kind])
    assert report["true"]["rate"] >= 0.95


def test_a_whole_sentence_of_a_cited_passage_is_a_quote_and_a_part_or_a_change_is_not() -> None:
    assert is_quoted("Her brother  Tom Smith was a British painter", [PASSAGE])
    assert is_quoted("It did not admit children!", ["Unrelated text.", PASSAGE])
    assert not is_quoted("It did not admit children.", ["Unrelated text."])
    assert not is_quoted("Tom Smith was a British painter.", [PASSAGE])  # a part: guards decide
    assert not is_quoted("It did admit children.", [PASSAGE])
    assert check("It did admit children.", [PASSAGE]) == "negation"  # a change still meets the guards
    assert not is_quoted("", [PASSAGE])
