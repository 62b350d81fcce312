"""Choosing collections and writing one research task per collection."""

from collections.abc import Mapping, Sequence

from graph.context import ResearchLimits
from graph.llm.prompts import quote_untrusted
from graph.llm.schemas import PlanOutput
from graph.models import Plan, Question, QuestionKind, ResearchTask, Routing
from graph.research.question import comparison_sides
from retrieval.collections import Collection
from retrieval.errors import ConferError
from retrieval.language import language_name
from retrieval.spelling import spelled_apart
from retrieval.text import stem, stems, terms, unique

# Words too generic to count as naming a collection ("the security policy" names security).
_GENERIC_STEMS = frozenset(
    stem(w)
    for w in "handbook policy policies documentation docs doc guide guides other topics works and".split()
)


class CollectionAccessError(ConferError):
    """``in:`` named collections that do not exist or that this place may not search."""

    def __init__(
        self, *, unknown: tuple[str, ...], forbidden: tuple[str, ...], allowed: tuple[str, ...]
    ) -> None:
        self.unknown = unknown
        self.forbidden = forbidden
        self.allowed = allowed
        super().__init__(f"unknown={unknown} forbidden={forbidden}")


def allowed_names(question: Question, collections: Mapping[str, Collection]) -> tuple[str, ...]:
    return tuple(name for name in question.allowed if name in collections)


def check_requested(question: Question, collections: Mapping[str, Collection]) -> None:
    """Raise ``CollectionAccessError`` unless every requested collection exists and is allowed."""
    unknown = tuple(n for n in question.requested if n not in collections)
    forbidden = tuple(n for n in question.requested if n in collections and n not in question.allowed)
    if unknown or forbidden:
        raise CollectionAccessError(
            unknown=unknown, forbidden=forbidden, allowed=allowed_names(question, collections)
        )


def collection_stems(collection: Collection) -> set[str]:
    words = [*collection.name.replace("-", " ").replace("_", " ").split(), *terms(collection.title)]
    return {stem(w) for w in words} - _GENERIC_STEMS


def mentioned_collections(text: str, collections: Sequence[Collection]) -> list[str]:
    """Collections the text names by name or title words ("the engineering handbook")."""
    text_stems = stems(text)
    return [c.name for c in collections if collection_stems(c) & text_stems]


def route_collections(
    question: Question,
    collections: Mapping[str, Collection],
    scores: Mapping[str, float],
    limits: ResearchLimits,
    sides: tuple[str, ...] = (),
) -> tuple[tuple[str, ...], Routing]:
    """Pick collections: explicit ``in:``, else channel defaults, else the routing probe.

    Collections the question names ("the security policy") are always kept; when each side of a
    comparison names a collection, those collections are the whole plan.
    """
    allowed = allowed_names(question, collections)
    if question.requested:
        return question.requested[: limits.max_fanout], "explicit"
    defaults = tuple(n for n in question.defaults if n in allowed)
    if defaults:
        return defaults[: limits.max_fanout], "channel_default"
    allowed_collections = [collections[n] for n in allowed]
    mentioned = mentioned_collections(question.text, allowed_collections)
    side_names = [mentioned_collections(side, allowed_collections) for side in sides]
    if sides and all(side_names):
        named = unique(n for names in side_names for n in names)
        return tuple(named[: limits.max_fanout]), "automatic"
    ranked = sorted((n for n in allowed if n in scores), key=lambda n: -scores[n])
    if not ranked and not mentioned:
        return allowed[: limits.max_fanout], "all"
    best = scores[ranked[0]] if ranked else 0.0
    keep = [n for n in ranked if scores[n] >= limits.routing_ratio * best]
    chosen = unique([*mentioned, *keep])[: limits.max_fanout]
    return tuple(chosen), "automatic"


def refine_queries(
    text: str, collection: Collection, sides: tuple[str, ...], collections: Sequence[Collection]
) -> tuple[tuple[str, ...], str]:
    """Queries for one collection and the part of a comparison it covers.

    The collection's focus keywords that share a word with the question are added to it. For a
    comparison whose sides name collections ("engineering and security policies"), a collection
    gets its own side plus the compared aspect; for a comparison of two things, each thing gets a
    sub-query of its own next to the whole question.
    """
    question_stems = stems(text)
    extra = [k for k in collection.keywords if stems(k) & question_stems and k.lower() not in text.lower()]
    # A word with a capital inside is searched written apart too ("MediCal", "Medi Cal").
    base = " ".join([text, *spelled_apart(text), *extra])
    if len(sides) != 2:
        return (base,), ""
    side_stems = [stems(s) for s in sides]
    aspect = " ".join(t for t in unique(terms(text)) if stem(t) not in side_stems[0] | side_stems[1])
    own = collection_stems(collection)
    naming = [i for i, s in enumerate(side_stems) if own & s]
    if len(naming) == 1:
        side = sides[naming[0]]
        # The collection's own name says nothing inside it: keep the rest of its side.
        side_terms = [t for t in terms(side) if stem(t) not in own]
        return (" ".join([*side_terms, aspect, *extra]).strip() or base,), side
    if any(mentioned_collections(side, collections) for side in sides):
        return (base,), ""  # the sides name other collections; this one covers the aspect
    return tuple(unique([base, f"{sides[0]} {aspect}".strip(), f"{sides[1]} {aspect}".strip()])), ""


def plan_research(
    question: Question,
    kind: QuestionKind,
    collections: Mapping[str, Collection],
    scores: Mapping[str, float],
    limits: ResearchLimits,
) -> Plan:
    sides = comparison_sides(question.text) if kind == "comparative" else ()
    names, routing = route_collections(question, collections, scores, limits, sides)
    chosen = [collections[n] for n in names]
    tasks = []
    for collection in chosen:
        queries, focus = refine_queries(question.text, collection, sides, chosen)
        tasks.append(
            ResearchTask(collection=collection.name, queries=queries, focus=focus, question=question.text)
        )
    return Plan(kind=kind, routing=routing, tasks=tuple(tasks), sides=sides)


def plan_message(question: str, candidates: Sequence[Collection]) -> str:
    lines = [f"Question: {quote_untrusted(question)}", "", "Collections:"]
    for c in candidates:
        keywords = f" Focus: {', '.join(c.keywords)}." if c.keywords else ""
        language = f" Documents in: {language_name(c.language)}."
        lines.append(f"- {c.name}: {c.title}. {c.description}{keywords}{language}")
    return "\n".join(lines)


def plan_from_model(
    output: PlanOutput,
    question: Question,
    heuristic: Plan,
    collections: Mapping[str, Collection],
    limits: ResearchLimits,
) -> Plan | None:
    """Apply the model's plan within the rules: explicit or channel-default collections stay as
    they are (the model only refines their queries); with automatic routing the model may add
    allowed collections but never drops one the routing probe found evidence in, so a weak
    planner cannot lose the evidence. ``None`` when the model chose nothing usable."""
    by_name = {p.name: p for p in output.collections}
    if heuristic.routing in ("explicit", "channel_default"):
        names = [t.collection for t in heuristic.tasks]
    else:
        allowed = set(allowed_names(question, collections))
        chosen_by_model = unique(p.name for p in output.collections if p.name in allowed)
        if not chosen_by_model:
            return None
        probed = [t.collection for t in heuristic.tasks]
        names = unique([*probed, *chosen_by_model])[: max(limits.max_fanout, len(probed))]
    existing = {t.collection: t for t in heuristic.tasks}
    chosen = [collections[n] for n in names]
    sides = heuristic.sides
    kind: QuestionKind = output.kind
    tasks = []
    for collection in chosen:
        planned = by_name.get(collection.name)
        base = existing.get(collection.name)
        queries, focus = (
            (base.queries, base.focus) if base else refine_queries(question.text, collection, sides, chosen)
        )
        model_query = " ".join((planned.query if planned else "").split())[:300]
        tasks.append(
            ResearchTask(
                collection=collection.name,
                queries=tuple(unique([model_query, *queries] if model_query else queries)),
                focus=(
                    " ".join(planned.subquestion.split())[:300] if planned and planned.subquestion else focus
                ),
                question=question.text,
            )
        )
    return Plan(kind=kind, routing=heuristic.routing, tasks=tuple(tasks), sides=sides)
