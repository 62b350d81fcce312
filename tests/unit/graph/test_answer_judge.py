import json
from pathlib import Path

import numpy as np
import pytest

from graph.answer.compose import closest, concise, judgement_of, with_likeliest
from graph.answer.judge import (
    FEATURES,
    JUDGE_FILE,
    Judged,
    JudgeFileError,
    JudgeModel,
    Judges,
    judge,
    load_judges,
)
from graph.answer.meaning import Closeness
from graph.answer.relevance import Coverage, focus_of
from graph.models import Claim
from retrieval.passages import Passage
from tests.unit.graph.judges import judges_by, logistic


def _p(pid: str, text: str, *, doc: str = "", title: str = "Policy") -> Passage:
    return Passage(id=pid, collection="people", doc_id=doc or pid, source=f"{pid}.md", title=title, text=text)


def test_shipped_judge_is_fitted_for_the_signals_the_code_computes() -> None:
    judges = load_judges(JUDGE_FILE)
    for model in (judges.meaning, judges.words):
        assert len(model.sentence.weights) == len(FEATURES)
        assert len(model.question.weights) == len(FEATURES) + 2
        assert 0.0 <= model.related <= model.answers <= 1.0
        assert any(w != 0.0 for w in model.sentence.weights)
    words_only = dict(zip(FEATURES, judges.words.sentence.weights, strict=True))
    assert words_only["cosine"] == words_only["passage_meaning"] == 0.0  # fitted without meanings


def test_a_judge_file_for_other_signals_is_refused(tmp_path: Path) -> None:
    data = json.loads(JUDGE_FILE.read_text(encoding="utf-8"))
    data["features"] = [*data["features"][:-1], "something else"]
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(JudgeFileError, match="make judge"):
        load_judges(path)
    with pytest.raises(JudgeFileError, match="cannot read"):
        load_judges(tmp_path / "missing.json")


def test_the_sentence_closest_in_meaning_ranks_first_and_decides_the_outcome() -> None:
    leave = _p("leave", "Report a lost or stolen security key to the IT help desk within one hour.")
    other = _p("other", "Security keys are issued on your first day by the IT team.")
    pairs = [(other, other.text), (leave, leave.text)]
    cosines = {("leave", leave.text): 0.62, ("other", other.text): 0.31}
    closeness = Closeness(cosines, np.zeros(3, dtype=np.float32))
    focus = focus_of("I left my yubikey in a taxi", [leave, other])
    judges = judges_by({"cosine": 4.0})
    judged, model = judge(
        focus, pairs, [other, leave], closeness, evidence=Coverage(found=True), judges=judges
    )
    assert [j.passage.id for j in judged] == ["leave", "other"]
    assert judgement_of(judged, model).outcome == "answers"  # sigmoid(4 * 0.62) = 0.92
    judges = judges_by({"cosine": 4.0}, answers=0.95, related=0.5)
    judged, model = judge(
        focus, pairs, [other, leave], closeness, evidence=Coverage(found=True), judges=judges
    )
    verdict = judgement_of(judged, model)
    assert verdict.outcome == "closest"
    assert [j.passage.id for j in closest(judged, verdict)] == ["leave", "other"]
    judges = judges_by({"cosine": 4.0}, answers=0.99, related=0.98)
    judged, model = judge(
        focus, pairs, [other, leave], closeness, evidence=Coverage(found=True), judges=judges
    )
    assert closest(judged, judgement_of(judged, model)) == []  # nothing related: nothing shown


def test_without_meanings_the_words_model_judges_and_meaning_signals_are_zero() -> None:
    leave = _p("leave", "Parental leave is 16 weeks at full pay.")
    focus = focus_of("how many weeks of parental leave", [leave])
    words = logistic({"words": 3.0})
    model = JudgeModel(
        sentence=words, question=judges_by({}).meaning.question, answers=0.5, related=0.1, quotes=0.1
    )
    judged, used = judge(
        focus,
        [(leave, leave.text)],
        [leave],
        None,
        evidence=Coverage(found=True),
        judges=Judges(model, model),
    )
    assert used is model
    named = dict(zip(FEATURES, judged[0].features, strict=True))
    assert named["cosine"] == named["passage_meaning"] == 0.0
    assert named["words"] > 0.5 and named["offers"] == 1.0  # "16" is the number asked for


def _judged(pid: str, text: str, probability: float, *, doc: str = "") -> Judged:
    return Judged(text, _p(pid, f"Intro. {text}", doc=doc), (0.0,) * len(FEATURES), probability)


def _hotel_answer(first: str) -> list[str]:
    """The checks picked seven sentences, best first (``first`` the first); what ``concise`` keeps."""
    policy = _p("a", f"Hotels are booked on the portal. {first} Bookings are audited.")
    other = _p(
        "b", "Meals are paid up to 60 euros a day. The portal was built in 2019. Receipts go to finance."
    )
    number = [0.0] * len(FEATURES)
    number[FEATURES.index("offers")] = number[FEATURES.index("asks")] = 1.0
    plain = [0.0] * len(FEATURES)

    def read(passage: Passage, text: str, probability: float, features: list[float]) -> Judged:
        return Judged(text, passage, tuple(features), probability)

    judged = [
        read(policy, first, 0.9, number),
        read(other, "Meals are paid up to 60 euros a day.", 0.5, plain),
        read(_p("d", "Taxis are paid."), "Taxis are paid.", 0.4, plain),
        read(other, "Receipts go to finance.", 0.35, plain),  # likely enough, but not among the best few
        read(policy, "Hotels are booked on the portal.", 0.1, plain),
        read(other, "The portal was built in 2019.", 0.05, number),
        read(policy, "Bookings are audited.", 0.05, plain),
    ]
    judgement = judgement_of(judged, judges_by({}, related=0.3).meaning)

    def claim(passage: Passage, text: str) -> tuple[Claim, str]:
        return Claim(text=text, passage_ids=(passage.id,), coverage=0.5), "people"

    picked = [
        claim(policy, first),
        claim(other, "Receipts go to finance."),
        claim(other, "Meals are paid up to 60 euros a day."),
        claim(policy, "Bookings are audited."),
        claim(policy, "Hotels are booked on the portal."),
        claim(other, "The portal was built in 2019."),
        claim(_p("c", "Unread."), "Unread."),
    ]
    return [c.text for c, _ in concise(picked, judged, judgement)]


def test_an_answer_keeps_what_answers_and_nothing_unrelated() -> None:
    """The answer keeps the first; the one among the judge's best few (one likely enough but not
    among them is padding); the one holding the number asked for (whatever the judge made of it);
    and one the judge never read. The first is not said alone and speaks of nothing said before
    it: no other sentence of its passage joins it as context. The first opens the answer; the
    others follow, each passage's in their document's order."""
    assert _hotel_answer("A hotel costs up to 180 euros a night.") == [
        "A hotel costs up to 180 euros a night.",
        "Meals are paid up to 60 euros a day.",
        "The portal was built in 2019.",
        "Unread.",
    ]


def test_a_first_sentence_that_speaks_of_the_one_before_it_keeps_one_sentence_of_context() -> None:
    """A first sentence "This costs …" says something of what its passage said before: the one
    before it joins it and opens the answer (the one after it is padding)."""
    assert _hotel_answer("This costs up to 180 euros a night.") == [
        "Hotels are booked on the portal.",
        "This costs up to 180 euros a night.",
        "Meals are paid up to 60 euros a day.",
        "The portal was built in 2019.",
        "Unread.",
    ]


def _said(text: str, read: list[tuple[str, float]], picked: list[str]) -> list[str]:
    """What ``concise`` keeps of the ``picked`` sentences of one page whose sentences the judge
    ``read`` (each with its probability, most likely first)."""
    page = _p("a", text)
    judged = [Judged(sentence, page, (0.0,) * len(FEATURES), p) for sentence, p in read]
    judgement = judgement_of(judged, judges_by({}, related=0.3).meaning)
    claims = [(Claim(text=sentence, passage_ids=("a",), coverage=0.5), "people") for sentence in picked]
    return [c.text for c, _ in concise(claims, judged, judgement)]


def test_the_sentence_a_first_one_speaks_of_opens_the_answer_and_no_more_context_joins() -> None:
    """ "This is almost always …" speaks of the sentence before it, which the answer says anyway
    (among the judge's best few): that one opens the answer, and no other joins as context."""
    first, before, other = (
        "This is almost always bad RAM.",
        "The database is corrupt.",
        "Syncthing exits then.",
    )
    page = f"{before} {other} {first}"
    assert _said(page, [(first, 0.9), (before, 0.8), (other, 0.01)], [first, other, before]) == [
        before,
        first,
    ]


def test_a_first_sentence_not_found_as_written_in_its_passage_has_no_context() -> None:
    """Where the first sentence stands in its passage is unknown (its text wraps a line there): no
    sentence is before or after it, and none joins as context."""
    first, others = "This is wrapped here.", ["Alpha one.", "Gamma three."]
    page = "Alpha one. Beta two. This is\nwrapped here. Gamma three."
    read = [(first, 0.9), *((o, 0.01) for o in others)]
    assert _said(page, read, [first, *others]) == [first]


def test_an_answer_says_the_sentence_the_judge_finds_likeliest_when_the_checks_left_it_out() -> None:
    """The checks picked sentences about invitations; the one that says how long an invitation is
    good for, the judge's likeliest and as likely as an answering sentence is, joins them. Not when
    a picked sentence says the same, nor when the judge's best is not that likely."""
    invites = _p("a", "You can invite members in the Team Settings. All invitations expire after 48 hours.")
    picked = [
        (
            Claim(text="You can invite members in the Team Settings.", passage_ids=("a",), coverage=0.5),
            "people",
        )
    ]
    likeliest = Judged("All invitations expire after 48 hours.", invites, (0.0,) * len(FEATURES), 0.8)
    other = Judged("You can invite members in the Team Settings.", invites, (0.0,) * len(FEATURES), 0.3)
    judgement = judgement_of([likeliest, other], judges_by({}, quotes=0.5).meaning)
    said = with_likeliest(picked, [likeliest, other], judgement)
    assert [(c.text, c.passage_ids, n) for c, n in said] == [
        ("You can invite members in the Team Settings.", ("a",), "people"),
        ("All invitations expire after 48 hours.", ("a",), "people"),
    ]
    same = [
        (Claim(text="All invitations expire after 48 hours!", passage_ids=("a",), coverage=0.5), "people")
    ]
    assert with_likeliest(same, [likeliest, other], judgement) == same
    unlikely = judgement_of([likeliest, other], judges_by({}, quotes=0.9).meaning)
    assert with_likeliest(picked, [likeliest, other], unlikely) == picked
