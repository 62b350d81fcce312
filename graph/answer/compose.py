"""The answer judge (``graph.answer.judge``) applied to a run's evidence: every quotable sentence of
its best passages judged, the judgement recorded with the answer, and, when the evidence does not
answer, the one or two sentences most likely to answer offered as the closest found (none when the
best is not related to the question at all)."""

from collections.abc import Sequence

from graph.answer.extractive import jaccard
from graph.answer.judge import Judged, JudgeModel, Judges, judge
from graph.answer.meaning import Closeness, TermAliases, candidates
from graph.answer.relevance import assess_coverage, focus_of
from graph.models import Claim, JudgedSentence, Judgement, Plan
from retrieval.passages import Passage
from retrieval.text import stems

# Sentences sharing this much of their words (Jaccard of stems) say the same thing: said once
# (an answer's near-duplicates merge, the closest sentences shown are not repeated).
DUPLICATE = 0.7
CLOSEST = 2  # sentences offered as the closest when none answers


def judge_evidence(
    plan: Plan,
    question: str,
    merged: Sequence[Passage],
    closeness: Closeness | None,
    *,
    aliases: TermAliases | None = None,
    judges: Judges | None = None,
) -> tuple[list[Judged], JudgeModel]:
    """Every quotable sentence of the run's best passages judged, most likely to answer first."""
    focus = focus_of(question, merged, extra=[t.collection for t in plan.tasks], aliases=aliases)
    pairs = candidates(merged)
    evidence = assess_coverage(focus, [(s, p) for p, s in pairs[:1]], merged)
    return judge(focus, pairs, merged, closeness, evidence=evidence, judges=judges)


def judgement_of(judged: Sequence[Judged], model: JudgeModel) -> Judgement:
    answerability = model.answerability([(j.features, j.probability) for j in judged[:2]])
    return Judgement(
        outcome=model.outcome(answerability, judged[0].probability if judged else 0.0),
        probability=round(answerability, 4),
        answers_at=model.answers,
        related_at=model.related,
        sentences=tuple(
            JudgedSentence(
                text=j.text,
                passage_id=j.passage.id,
                collection=j.passage.collection,
                probability=round(j.probability, 4),
                features=tuple(round(x, 4) for x in j.features),
            )
            for j in judged
        ),
    )


def closest(judged: Sequence[Judged], judgement: Judgement) -> list[Judged]:
    """The sentences offered when none answers: the one or two most likely to answer, when the
    best is related to the question at all (``JudgeModel.related``)."""
    if not judged or judged[0].probability < judgement.related_at:
        return []
    picks: list[Judged] = []
    for item in judged:
        if len(picks) >= CLOSEST:
            break
        if any(jaccard(stems(item.text), stems(p.text)) >= DUPLICATE for p in picks):
            continue
        picks.append(item)
    return picks


def as_claims(picks: Sequence[Judged]) -> list[tuple[Claim, str]]:
    return [
        (Claim(text=j.text, passage_ids=(j.passage.id,), coverage=j.probability), j.passage.collection)
        for j in picks
    ]
