"""The answer judge (``graph.answer.judge``) applied to a run's evidence: every quotable sentence of
its best passages judged, the judgement recorded with the answer, and, when the evidence does not
answer, the one or two sentences most likely to answer offered as the closest found (none when the
best is not related to the question at all); and what an answer's sentences bring with them: the
sentence that continues the first, the list or the code block a sentence introduces."""

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from graph.answer.extractive import MAX_WORDS, jaccard
from graph.answer.judge import BEST_FEW, FEATURES, Judged, JudgeModel, Judges, judge
from graph.answer.meaning import Closeness, TermAliases, candidates, quotable_sentences
from graph.answer.relevance import assess_coverage, focus_of
from graph.models import Claim, JudgedSentence, Judgement, Plan
from retrieval.passages import Passage
from retrieval.text import code_blocks, list_items, sentence_analysis, stems, words

# Sentences sharing this much of their words (Jaccard of stems) say the same thing: said once
# (an answer's near-duplicates merge, the closest sentences shown are not repeated).
DUPLICATE = 0.7
CLOSEST = 2  # sentences offered as the closest when none answers


def says_the_same(text: str, other: str) -> bool:
    """Two sentences that share so many words (``DUPLICATE``) that saying both repeats one."""
    return jaccard(stems(text), stems(other)) >= DUPLICATE


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
        quotes_at=model.quotes,
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
        if any(says_the_same(item.text, p.text) for p in picks):
            continue
        picks.append(item)
    return picks


def with_likeliest(
    claims: Sequence[tuple[Claim, str]], judged: Sequence[Judged], judgement: Judgement
) -> list[tuple[Claim, str]]:
    """The checks' claims and, after them, the sentence the judge finds likeliest to answer, when it
    is as likely as an answering sentence is (``JudgeModel.quotes``) and no claim says the same:
    what the search found and the judge reads as the answer is never left out of an answer."""
    if not judged or judged[0].probability < judgement.quotes_at:
        return list(claims)
    likeliest = as_claims(judged[:1])
    if any(says_the_same(likeliest[0][0].text, c.text) for c, _ in claims):
        return list(claims)
    return [*claims, *likeliest]


def concise(
    claims: Sequence[tuple[Claim, str]],
    judged: Sequence[Judged],
    judgement: Judgement,
    *,
    links: AbstractSet[str] = frozenset(),
) -> list[tuple[Claim, str]]:
    """The answer's sentences without padding: its first sentence; every other that is among the
    judge's best few (``BEST_FEW``: the sentences it finds most likely to answer) and as likely as
    an answering sentence is (``JudgeModel.quotes``), or that holds the kind of thing the question
    asks for (a day, a number, a name); and one sentence of context, chosen among the other picked
    sentences of the first one's passage, only where it is needed. When the first speaks of what
    its passage said before it ("This is almost always a result of bad RAM"), the sentence said
    nearest before it in that passage opens the answer, just before it; when none is said, the
    picked one nearest before it joins and opens the answer (else the nearest after it joins).
    When the first would be said alone, the picked one nearest after it joins (else the nearest
    before it). A first sentence not found as written in its passage has no context. A sentence
    the judge did not read (one from beyond the best passages) or one of a passage in ``links`` (a
    second hop's, a comparison side's) stays. The first sentence opens the answer (after the one
    it speaks of); the others follow, each passage's in their document's order, the passages in
    the order the answer first cites them."""
    if len(claims) < 2:
        return list(claims)
    read = {j.text: j for j in judged}
    passages = {j.passage.id: j.passage for j in judged}
    best = {j.text for j in judged[:BEST_FEW] if j.probability >= judgement.quotes_at}
    offers, asks = FEATURES.index("offers"), FEATURES.index("asks")
    first = claims[0]
    kept = [first]
    others = []
    for claim, collection in claims[1:]:
        item = read.get(claim.text)
        if (
            item is None
            or item.text in best
            or item.features[offers] * item.features[asks]
            or any(pid in links for pid in claim.passage_ids)
        ):
            kept.append((claim, collection))
        else:
            others.append((claim, collection))
    opening = [first]
    at = _at(first[0], passages)
    if at >= 0 and _leans_back(first[0].text):
        before = _nearest(first[0], kept[1:], passages, after=False)
        if before is None:  # nothing said is what it speaks of: one more sentence, as context
            context = _context(first[0], others, passages, after=False)
            if context is not None:
                kept.append(context)
                before = context if _at(context[0], passages) < at else None
        if before is not None:
            opening = [before, first]
    elif at >= 0 and len(kept) == 1:  # said alone: the sentence that goes on from it, as context
        context = _context(first[0], others, passages, after=True)
        if context is not None:
            kept.append(context)
    ordered = in_document_order(kept, passages)
    return [*opening, *(item for item in ordered if all(item[0] is not o[0] for o in opening))]


def _nearest(
    first: Claim, items: Sequence[tuple[Claim, str]], passages: dict[str, Passage], *, after: bool
) -> tuple[Claim, str] | None:
    """Of ``items``, the sentence of ``first``'s passage nearest after it (or before it), if any."""
    at = _at(first, passages)
    placed = [
        (where, item)
        for item in items
        if item[0].passage_ids[:1] == first.passage_ids[:1] and (where := _at(item[0], passages)) >= 0
    ]
    own = [(where, item) for where, item in placed if (where > at if after else where < at)]
    if not own:
        return None
    return (min if after else max)(own, key=lambda placed_item: placed_item[0])[1]


def _context(
    first: Claim, others: Sequence[tuple[Claim, str]], passages: dict[str, Passage], *, after: bool
) -> tuple[Claim, str] | None:
    """The sentence of ``others`` nearest ``first`` in its passage on the side ``after`` says, else
    on the other side."""
    return _nearest(first, others, passages, after=after) or _nearest(
        first, others, passages, after=not after
    )


def _at(claim: Claim, passages: dict[str, Passage]) -> int:
    """Where the claim's sentence stands in the passage it cites first (-1 when not found)."""
    passage = passages.get(claim.passage_ids[0]) if claim.passage_ids else None
    return passage.text.find(claim.text) if passage is not None else -1


# Words a sentence opens with when it says something of what came before it ("This is almost
# always a result of bad RAM"): such a sentence needs one of its passage's others as context.
_BACK_REFERENCES = frozenset(
    "this that these those it its they their them such he she his her then also however otherwise "
    "instead both either neither so thus therefore".split()
)


def _leans_back(sentence: str) -> bool:
    """Whether the sentence opens with a word that refers back (``_BACK_REFERENCES``)."""
    opening = words(sentence)[:1]
    return bool(opening) and opening[0] in _BACK_REFERENCES


def in_document_order(
    claims: Sequence[tuple[Claim, str]], passages: dict[str, Passage]
) -> list[tuple[Claim, str]]:
    """Claims grouped by the passage they cite first (in the order of its first claim), each
    passage's in the order its text says them."""
    groups: dict[str, list[tuple[Claim, str]]] = {}
    for claim, collection in claims:
        groups.setdefault(claim.passage_ids[0] if claim.passage_ids else "", []).append((claim, collection))

    def position(pid: str, claim: Claim) -> int:
        passage = passages.get(pid)
        if passage is None:  # a passage the judge did not read: its sentences keep their order
            return 0
        at = _at(claim, passages)
        return at if at >= 0 else len(passage.text)  # not found as written: after the others

    return [
        item for pid, group in groups.items() for item in sorted(group, key=lambda c: position(pid, c[0]))
    ]


def as_claims(picks: Sequence[Judged]) -> list[tuple[Claim, str]]:
    return [
        (Claim(text=j.text, passage_ids=(j.passage.id,), coverage=j.probability), j.passage.collection)
        for j in picks
    ]


def with_introduced(
    claims: Sequence[tuple[Claim, str]], passages: Sequence[Passage], most: int
) -> list[tuple[Claim, str]]:
    """Each sentence that introduces what follows it in its passage ("… open the following ports:",
    "… you can allow the ports by running:") said with it, since that is what such a sentence says:
    a list's items right after it, in their order, when the list is short enough to say whole
    (``most`` items at most), an item the answer said elsewhere moving to its list; a code block on
    the sentence itself (``Claim.code``), when it is as short as such a list (``most`` lines at
    most) and holds no more words than a quotable sentence may (``MAX_WORDS``)."""
    by_id = {p.id: p for p in passages}
    lists: dict[int, tuple[str, list[str]]] = {}
    code: dict[int, str] = {}
    for n, (claim, _) in enumerate(claims):
        passage = by_id.get(claim.passage_ids[0]) if claim.passage_ids else None
        if passage is None or not claim.text.endswith(":"):
            continue
        following = _following(claim.text, passage)
        # every item whole (one of two sentences stays one item), however short ("Port 21027/UDP:
        # discovery"): the sentence before says what it is
        items = list_items(following)
        if 0 < len(items) <= most:
            lists[n] = (passage.id, items)
        for block in code_blocks(following)[:1]:  # ``following`` is one paragraph: a block, or none
            if len(block.splitlines()) <= most and len(block.split()) <= MAX_WORDS:
                code[n] = block
    listed = {item for _, items in lists.values() for item in items}
    out: list[tuple[Claim, str]] = []
    said: set[str] = set()
    for n, (claim, collection) in enumerate(claims):
        in_list = any(claim.text in item for item in listed)  # an item, or a sentence of one
        if claim.text in said or (in_list and not claim.text.endswith(":")):
            continue
        out.append((claim.model_copy(update={"code": code[n]}) if n in code else claim, collection))
        said.add(claim.text)
        passage_id, items = lists.get(n, ("", []))
        for item in items:
            if item not in said:
                said.add(item)
                out.append((Claim(text=item, passage_ids=(passage_id,), coverage=0.0, item=True), collection))
    return out


def _following(sentence: str, passage: Passage) -> str:
    """The paragraph right after ``sentence`` in its passage (at most one blank line between), or
    ``""`` when the sentence is not found as written."""
    at = passage.text.find(sentence)
    if at < 0:
        return ""
    rest = passage.text[at + len(sentence) :]
    return rest.lstrip(" \t").removeprefix("\n").removeprefix("\n").split("\n\n", 1)[0]


def with_continuation(
    kept: list[tuple[Claim, str]], merged: Sequence[Passage], most: int
) -> list[tuple[Claim, str]]:
    """The answer with the sentence that continues its first one, right after it: the very next
    sentence of the same passage and paragraph (no heading, question or blank line between), when
    it speaks of what the first one does (shares a content word with it: "Report a lost security
    key … IT revokes the key and issues a temporary one that expires after seven days"), can be
    quoted, and repeats no sentence of the answer."""
    if not kept or len(kept) >= most:
        return kept
    first, collection = kept[0]
    passage = next((p for p in merged if p.id == first.passage_ids[0]), None)
    if passage is None:
        return kept
    sentences = [sentence for sentence, _, _ in sentence_analysis(passage.text)[0]]
    if first.text not in sentences:
        return kept
    at = sentences.index(first.text)
    if at + 1 >= len(sentences):
        return kept
    following = sentences[at + 1]
    found_at = passage.text.find(first.text)
    start = found_at + len(first.text)
    end = passage.text.find(following, start)
    own = stems(following)
    if (
        found_at < 0  # either not found as written in the text: no paragraph to read
        or end < 0
        or "\n\n" in passage.text[start:end]
        or following not in quotable_sentences(passage)
        or not (own & stems(first.text))
        or any(says_the_same(following, c.text) for c, _ in kept)
    ):
        return kept
    continuation = Claim(text=following, passage_ids=(passage.id,), coverage=0.0)
    return [kept[0], (continuation, collection), *kept[1:]]
