"""Answering by meaning: a "not found" whose best passages hold a sentence that says what was
asked is answered from that sentence.

Word coverage misses a question asked in other words than its document's ("how many vacation days
do we get a year?" against "Everyone … gets 27 days of paid time off per year"). When the words say
"not found", the sentences of the run's best passages are embedded with the question's embedder,
and the ones whose meaning is close enough to the question's (cosine ``ANSWERS_BY_MEANING`` or
more, and within ``NEAR_BEST`` of the best) answer it, best first, each cited as any extractive
sentence is. The threshold was chosen on hotpotqa500, orgdocs and the natural questions over
``samples/`` together (docs/evaluation.md): high enough that questions whose evidence is absent stay
"not found".
"""

import logging
from collections.abc import Sequence

import numpy as np

from graph.context import GraphContext
from graph.extractive import MAX_WORDS, MIN_WORDS, is_heading
from graph.models import Answer, Claim, Finding, Plan
from graph.synthesis import build_answer, merge_passages, question_of
from retrieval.errors import EmbeddingError
from retrieval.passages import Passage
from retrieval.text import sentence_analysis

logger = logging.getLogger(__name__)

ANSWERS_BY_MEANING = 0.6
NEAR_BEST = 0.05
# The run's best passages read, and the sentences embedded at most (about a tenth of a second).
PASSAGES_READ = 5
SENTENCES_READ = 48
SENTENCES_KEPT = 3


def _sentences(passages: Sequence[Passage]) -> list[tuple[str, Passage]]:
    found = []
    for passage in passages:
        for sentence, _, length in sentence_analysis(passage.text)[0]:
            if MIN_WORDS <= length <= MAX_WORDS and not is_heading(sentence, passage.title):
                found.append((sentence, passage))
    return found[:SENTENCES_READ]


async def answer_by_meaning(
    context: GraphContext, plan: Plan, findings: Sequence[Finding], answer: Answer
) -> Answer:
    """``answer``, or, when it found nothing and a sentence of the best passages says what was
    asked by meaning, the answer made of such sentences."""
    if answer.found or context.embedder is None or not findings:
        return answer
    candidates = _sentences(merge_passages(findings)[:PASSAGES_READ])
    if not candidates:
        return answer
    try:
        question = await context.embedder.embed_query(question_of(plan))
        vectors = await context.embedder.embed_passages([s for s, _ in candidates])
    except EmbeddingError:
        return answer
    similarity = vectors @ question
    best = float(np.max(similarity))
    logger.debug("closest sentence by meaning", extra={"similarity": round(best, 3)})
    if best < ANSWERS_BY_MEANING:
        return answer
    order = np.argsort(-similarity)[:SENTENCES_KEPT]
    claims = [
        (
            Claim(text=candidates[i][0], passage_ids=(candidates[i][1].id,), coverage=float(similarity[i])),
            candidates[i][1].collection,
        )
        for i in order
        if similarity[i] >= best - NEAR_BEST
    ]
    rescued, _ = build_answer(plan, findings, claims)
    if not rescued.found:
        return answer
    return rescued
