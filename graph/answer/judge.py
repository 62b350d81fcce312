"""The answer judge: how likely each sentence the research found is to answer the question.

One learned, calibrated model ranks every quotable sentence of the run's best passages. Its
signals are those a reader weighs: how close the sentence is in meaning to the question (and how
far below the closest one), how much of the question's key terms it carries (weighted by rarity,
its title counting half), whether it names what the question names, whether it holds the kind of
thing asked for (a date, a number, a name), how well its passage ranked and how close that passage
is, where it stands in its passage, and how much of the question no retrieved passage writes.

Its weights and its two thresholds are fitted by ``make judge`` (``bot/evaluation/judge.py``) on
labelled questions of several domains and read from ``judge.json`` beside this module. The
probability decides between three outcomes: the sentence answers (at least ``answers``), the
evidence holds no direct answer but something related to show as the closest (at least
``related``), or nothing related was found. Without sentence meanings (``CONFER_EMBEDDINGS=off``)
the words-only model, fitted the same way without the meaning signals, judges."""

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from graph.answer.meaning import Closeness
from graph.answer.relevance import Coverage, QuestionFocus, entity_share, offers_answer, term_coverage
from retrieval.passages import Passage

JUDGE_FILE = Path(__file__).with_name("judge.json")

# The signals, in the order of the model's weights (``judge.json`` names them, and is refused when
# they differ). Each is in [0, 1] or [-1, 0], so no weight depends on a unit.
FEATURES: tuple[str, ...] = (
    "cosine",  # the sentence's closeness in meaning to the question
    "cosine_gap",  # how far below the question's closest sentence (0 for the closest)
    "passage_cosine",  # the closest sentence of its passage
    "margin",  # how far the closest sentence stands above the next one (the question's)
    "words",  # share of the question's key-term weight it carries (its title counting half)
    "entities",  # share of the question's named entities it (or its title) names
    "offers",  # it holds the kind of thing the question asks for, beyond what the question says
    "asks",  # the question asks for a kind of thing (a date, a number, a name)
    "passage_meaning",  # the search's closeness in meaning of its passage to the question
    "passage_words",  # share of the question's key-term weight its passage carries
    "rank",  # 1 / (1 + its passage's rank among the run's passages)
    "opening",  # it is its passage's first quotable sentence
    "missing",  # share of the question's key-term weight that no retrieved passage writes
    "unnamed",  # share of the question's named entities that no retrieved passage names
    "subjects",  # share of the entities' weight held by entities a retrieved passage is about
    "length",  # its length, up to 60 words
)
MEANING_FEATURES = frozenset({"cosine", "cosine_gap", "passage_cosine", "margin", "passage_meaning"})
# An answer's sentences are the judge's best few: the fit counts a run as answered when one of
# them answers, and a concise answer keeps, of its sentences, those among them.
BEST_FEW = 3

Outcome = Literal["answers", "closest", "nothing"]


@dataclass(frozen=True)
class Logistic:
    """A logistic model over signals standardised with ``means`` and ``scales``."""

    weights: tuple[float, ...]
    bias: float
    means: tuple[float, ...]
    scales: tuple[float, ...]

    def probability(self, features: Sequence[float]) -> float:
        z = self.bias + math.fsum(
            w * (x - m) / s
            for w, x, m, s in zip(self.weights, features, self.means, self.scales, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def question_signals(best: Sequence[float], p1: float, p2: float) -> tuple[float, ...]:
    """What the answerability decision reads: the best sentence's probability (as a logit), how
    far it stands above the next one's, and the best sentence's own signals."""
    return (logit(p1), logit(p1) - logit(p2), *best)


@dataclass(frozen=True)
class JudgeModel:
    """Two logistic stages: ``sentence`` ranks the sentences (the probability that one answers),
    ``question`` decides from the best of them whether the evidence answers at all (calibrated on
    whole questions); ``answers`` is the threshold on the latter; ``quotes``, the one an answer's
    sentence other than its first reaches to be said; ``related`` the one the best
    sentence's own probability must reach to be shown as the closest found."""

    sentence: Logistic
    question: Logistic
    answers: float
    related: float
    quotes: float

    def answerability(self, ranked: Sequence[tuple[Sequence[float], float]]) -> float:
        """The probability that the evidence answers, from the sentences ranked best first (each
        with its signals and probability)."""
        if not ranked:
            return 0.0
        p2 = ranked[1][1] if len(ranked) > 1 else 1e-6
        return self.question.probability(question_signals(ranked[0][0], ranked[0][1], p2))

    def outcome(self, answerability: float, best: float) -> Outcome:
        if answerability >= self.answers:
            return "answers"
        return "closest" if best >= self.related else "nothing"


@dataclass(frozen=True)
class Judges:
    """The model that reads meaning and words, and the one for searches without meanings."""

    meaning: JudgeModel
    words: JudgeModel


class JudgeFileError(ValueError):
    """``judge.json`` is missing, unreadable or fitted for other signals: run ``make judge``."""


@lru_cache(maxsize=4)
def load_judges(path: Path = JUDGE_FILE) -> Judges:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise JudgeFileError(f"cannot read the answer judge {path}: {exc}") from exc
    if tuple(data.get("features", ())) != FEATURES:
        raise JudgeFileError(f"{path} was fitted for other signals: run `make judge`")
    return Judges(meaning=_model(data["meaning"]), words=_model(data["words"]))


def _logistic(data: dict[str, Any]) -> Logistic:
    return Logistic(
        weights=tuple(float(v) for v in data["weights"]),
        bias=float(data["bias"]),
        means=tuple(float(v) for v in data["means"]),
        scales=tuple(float(v) for v in data["scales"]),
    )


def _model(data: dict[str, Any]) -> JudgeModel:
    return JudgeModel(
        sentence=_logistic(data["sentence"]),
        question=_logistic(data["question"]),
        answers=float(data["answers"]),
        related=float(data["related"]),
        quotes=float(data["quotes"]),
    )


@dataclass(frozen=True)
class Judged:
    """A candidate sentence with its passage, its signals and the judge's probability."""

    text: str
    passage: Passage
    features: tuple[float, ...]
    probability: float


def judge(
    focus: QuestionFocus,
    pairs: Sequence[tuple[Passage, str]],
    ranked: Sequence[Passage],
    closeness: Closeness | None,
    *,
    evidence: Coverage,
    judges: Judges | None = None,
) -> tuple[list[Judged], JudgeModel]:
    """Every candidate sentence judged, most likely to answer first (ties in reading order), and
    the model that judged them: the meaning model when every sentence's meaning was read.
    ``evidence``: what the retrieved passages as a whole cover of the question
    (``graph.answer.relevance.assess_coverage``)."""
    judges = judges or load_judges()
    cosines = [closeness.of(p.id, s) if closeness is not None else None for p, s in pairs]
    with_meaning = bool(pairs) and all(c is not None for c in cosines)
    model = judges.meaning if with_meaning else judges.words
    read = [c if c is not None else 0.0 for c in cosines]
    top = sorted(read, reverse=True)
    best = top[0] if top else 0.0
    margin = top[0] - top[1] if len(top) > 1 else (top[0] if top else 0.0)
    by_passage: dict[str, float] = {}
    for (passage, _), cosine in zip(pairs, read, strict=True):
        by_passage[passage.id] = max(by_passage.get(passage.id, -1.0), cosine)
    rank = {p.id: i for i, p in enumerate(ranked)}
    first: dict[str, str] = {}
    for passage, sentence in pairs:
        first.setdefault(passage.id, sentence)
    asks = float(focus.asks != "any")
    passage_words = {p.id: term_coverage(focus, p.text, p.title) for p, _ in pairs}
    judged = []
    for (passage, sentence), cosine in zip(pairs, read, strict=True):
        features: tuple[float, ...] = (
            cosine,
            cosine - best,
            by_passage[passage.id],
            margin,
            term_coverage(focus, sentence, passage.title),
            entity_share(focus, sentence, passage.title),
            float(offers_answer(focus, sentence)),
            asks,
            passage.semantic if passage.semantic is not None else 0.0,
            passage_words[passage.id],
            1.0 / (1.0 + rank.get(passage.id, len(ranked))),
            float(first[passage.id] == sentence),
            evidence.missing_share,
            len(evidence.unnamed_entities) / len(focus.entities) if focus.entities else 0.0,
            evidence.subject_share,
            min(len(sentence.split()), 60) / 60,
        )
        if not with_meaning:
            features = tuple(
                0.0 if n in MEANING_FEATURES else x for n, x in zip(FEATURES, features, strict=True)
            )
        judged.append(Judged(sentence, passage, features, model.sentence.probability(features)))
    order = sorted(range(len(judged)), key=lambda i: -judged[i].probability)
    return [judged[i] for i in order], model
