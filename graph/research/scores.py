"""One scale for a round's passages, whichever collection they came from.

A hybrid search scores each collection's candidates against one another (``retrieval.scoring``):
its scores rank the collection's passages, not the corpus's. Once a round's branches are back,
their passages are fused again together, as one search over every searched collection would have
ranked them (orgdocs, the fan-out over all collections: R@5 79.5 fused together against 56.6 by
the branches' own scores, and 77.4 for one hybrid index). Searches by words alone keep their
scores: the engine's BM25, as before embeddings.
"""

from collections.abc import Sequence

from graph.models import Finding, QueryHits
from retrieval.passages import Passage
from retrieval.scoring import fuse, is_hybrid


def comparable_findings(findings: Sequence[Finding]) -> list[Finding]:
    """The findings with every passage (and every query's ranking) scored on its round's scale."""
    if not any(is_hybrid(f.passages) for f in findings):
        return list(findings)
    scales: dict[int, dict[str, float]] = {}
    for number in {f.round for f in findings}:
        pool: dict[tuple[str, str], Passage] = {}
        for finding in findings:
            if finding.round == number:
                for passage in finding.passages:
                    key = (passage.collection, passage.id)
                    if key not in pool or passage.score > pool[key].score:
                        pool[key] = passage
        scales[number] = {p.id: p.score for p in fuse(list(pool.values()))}
    rescored = []
    for finding in findings:
        scale = scales[finding.round]
        if not finding.passages:
            rescored.append(finding)
            continue
        passages = tuple(
            sorted(
                (p.model_copy(update={"score": scale.get(p.id, p.score)}) for p in finding.passages),
                key=lambda p: -p.score,
            )
        )
        rankings = tuple(
            QueryHits(
                slot=r.slot,
                hits=tuple(sorted(((pid, scale.get(pid, s)) for pid, s in r.hits), key=lambda h: -h[1])),
            )
            for r in finding.rankings
        )
        rescored.append(finding.model_copy(update={"passages": passages, "rankings": rankings}))
    return rescored
