"""Reflection between research rounds: what the question still needs, written as follow-ups.

A multi-hop question names its first subject but not the second: "the director of *Big Stone
Gap*" is named only inside the film's passage. After a round, ``reflect`` looks for

- entities the question names that no top passage is about (a side of a comparison, a subject
  whose collection came back empty), and
- bridge entities: names the top passages mention that the question does not, scored by how
  much of the question the sentence around them covers,

and turns each into a follow-up: a targeted query, routed again over the collections the place
may search. Without a model this is lexical and deterministic (a few milliseconds of CPU); with
one, the model proposes the follow-ups from the verified claims and the heuristic is the fallback.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pydantic import BaseModel, Field

from graph.answer.relevance import QuestionFocus, focus_of, offers_answer, term_coverage
from graph.llm.prompts import UNTRUSTED_RULES, quote_untrusted
from graph.models import Finding, Question
from retrieval.language import detect_language
from retrieval.names import names_in
from retrieval.passages import Passage
from retrieval.text import split_sentences, stems, terms, unique, words

TOP_PASSAGES = 3  # the passages a round's bridge entities are read from
SENTENCES = 4  # per passage: the subject and what it is related to come first
COVERED_RANKS = 2  # a question entity with a passage among these needs no follow-up
MAX_QUERY_CHARS = 300
BACKGROUND_SHARE = 0.5  # a name in more than this share of a round's passages is its background
BACKGROUND_DOCUMENTS = 2  # ... and in at least this many distinct documents
AROUND_WORDS = 5  # a name's context: the words right before and after it in its sentence
NEAR_WEIGHT = 1.0  # how much the question's remaining ask in a name's context counts
ANSWERED_COVERAGE = 0.9  # a sentence carrying this share of the ask (and an answer) needs no bridge
_ARTICLES = frozenset({"the", "a", "an"})  # inside a name, they join a role to what it belongs to


@dataclass(frozen=True)
class Lead:
    """Something the question still needs: an entity, the query that looks for it, and the passage
    that named it (``""`` when the question itself names it)."""

    entity: str
    query: str
    origin: str
    score: float


def is_about(passage: Passage, entity: str) -> bool:
    """Whether a passage is the one about ``entity``: its title and the entity name each other."""
    wanted, title = stems(entity), stems(passage.title)
    if not wanted or not title:
        return False
    shared = len(wanted & title)
    # One names the other ("Big Stone Gap" and "Big Stone Gap (film)"), and not as a small part
    # of a longer name ("Shanghai" is not what "Sichuan–Shanghai gas pipeline" is about).
    nested = shared == len(wanted) or shared == len(title)
    return nested and shared / max(len(wanted), len(title)) >= 0.5


def question_entities(text: str, sides: Sequence[str]) -> list[str]:
    """What the question names: the sides of a comparison, quoted titles, capitalised names."""
    return unique([*(s for s in sides if terms(s)), *names_in(text.strip())])


def missing_entities(
    question: Question,
    sides: Sequence[str],
    ranked: Sequence[Passage],
    limit: int,
    covered: Sequence[str] = (),
) -> list[Lead]:
    """Entities the question names that no top passage is about. ``covered``: names already
    researched on their own (a comparison side a collection stands for, a collection's name)."""
    top = list(ranked[:COVERED_RANKS])
    done = [stems(c) for c in covered if terms(c)]
    leads = []
    for entity in question_entities(question.text, sides):
        wanted = stems(entity)
        if not wanted or any(is_about(p, entity) for p in top) or any(wanted <= d for d in done):
            continue
        if entity not in sides and len(stems(entity)) < 2:
            continue  # "Kansas" in "which city in Kansas" locates; it is not what is asked about
        if entity not in sides and any(mentions(p, entity) and wanted & stems(p.title) for p in top):
            continue  # a best passage on it names it ("Beacon API" in "API rate limits")
        leads.append(
            Lead(entity=entity, query=entity, origin=top[0].id if top else "", score=1.0 + len(stems(entity)))
        )
    return leads[:limit]


def mentions(passage: Passage, entity: str) -> bool:
    """Whether a passage names ``entity`` (every word of it) in its title or text."""
    wanted = stems(entity)
    return bool(wanted) and wanted <= stems(f"{passage.title} {passage.text}")


def is_background(entity: str, ranked: Sequence[Passage]) -> bool:
    """A name most of the round's passages mention, across several documents (the company every
    document of a corpus names): it is the setting, not something the question leads to."""
    if len(ranked) < 3:
        return False
    naming = [p for p in ranked if mentions(p, entity)]
    documents = {p.doc_id for p in naming}
    return len(naming) > BACKGROUND_SHARE * len(ranked) and len(documents) >= BACKGROUND_DOCUMENTS


def bridge_entities(question: Question, ranked: Sequence[Passage], limit: int) -> list[Lead]:
    """Names the top passages mention that the question does not, best first.

    A name scores by its passage's rank, by how much of the question its sentence covers (the
    sentence that says "directed by Adriana Trigiani" shares "directed" and the film's title with
    the question), by how much of the question's remaining ask (its words other than the names it
    gives) the words right around the name carry ("performed by pianist Harry Connick Jr." for "a
    singer that performed"), and by coming early in the passage; a passage's own subject is not a
    lead. A question that names nothing has none: a chain starts at something the question names,
    and the names the passages of "how many vacation days do we get" mention (the company, the HR
    system) are their setting. Nor has a question that asks about the names it gives themselves,
    every word of it but its names shaping the ask ("what is Kubernetes", "tell me more about
    Letitia James"): the passage about the name answers it, and the names that passage mentions
    are what it says, not a further link of the question. A name with an article inside ("the
    HQ of the CEO of Globex", read as one name) may hold the ask: its question keeps its bridges
    ("the Department of Veterans Affairs" is one name).
    """
    wanted = stems(question.text)
    named = question_entities(question.text, ())
    if not wanted or not named:
        return []
    given = set().union(*(stems(e) for e in named))
    ask = wanted - given
    if not ask and not any(_ARTICLES.intersection(words(e)[1:]) for e in named):
        return []
    ask = ask or wanted  # "the HQ of the CEO of Globex" read as one name: the ask is inside it
    focus = focus_of(question.text, ranked)
    scored: dict[str, Lead] = {}
    seen_titles = [p for p in ranked[:COVERED_RANKS]]
    asked_in = detect_language(question.text)
    for rank, passage in enumerate(ranked[:TOP_PASSAGES]):
        own = stems(passage.title)
        # Words are shared only within one language: across two, no overlap says nothing.
        same_language = detect_language(passage.text) == asked_in
        for position, sentence in enumerate(split_sentences(passage.text)[:SENTENCES]):
            if answers_alone(focus, sentence, passage):
                continue  # its names are the answer's setting, not something it still needs
            sentence_stems = stems(sentence) | (own if position == 0 else set())
            overlap = len(sentence_stems & wanted) / len(wanted)
            if not overlap and same_language:
                continue  # a sentence sharing nothing with the question leads nowhere it asked
            for name in names_in(sentence):
                name_stems = stems(name)
                if not name_stems or name_stems <= wanted or name_stems <= own:
                    continue
                if any(p.id != passage.id and is_about(p, name) and i < 2 for i, p in enumerate(seen_titles)):
                    continue  # already among the best two: nothing to follow up
                if is_background(name, ranked):
                    continue
                near = len(stems(_around(sentence, name)) & ask) / len(ask)
                score = (1.0 / (1 + rank)) * (0.3 + overlap + NEAR_WEIGHT * near)
                score *= (1.0 / (1 + 0.3 * position)) * (1.0 if len(name_stems) > 1 else 0.6)
                key = " ".join(sorted(name_stems))
                if key not in scored or score > scored[key].score:
                    scored[key] = Lead(entity=name, query=name, origin=passage.id, score=round(score, 4))
    return sorted(scored.values(), key=lambda lead: (-lead.score, lead.entity))[:limit]


def answers_alone(focus: QuestionFocus, sentence: str, passage: Passage) -> bool:
    """Whether a sentence answers the question by itself: it carries all but a sliver of the
    question's key terms (``ANSWERED_COVERAGE``, its passage title counting half) and holds the
    kind of thing the question asks for (a number for "how long", a name for "who")."""
    return (
        focus.asks != "any"
        and term_coverage(focus, sentence, passage.title) >= ANSWERED_COVERAGE
        and offers_answer(focus, sentence)
    )


def _around(sentence: str, name: str) -> str:
    """The words right before and after ``name`` in the sentence (``AROUND_WORDS`` each side)."""
    start = sentence.find(name)
    if start < 0:
        return ""
    before = sentence[:start].split()[-AROUND_WORDS:]
    after = sentence[start + len(name) :].split()[:AROUND_WORDS]
    return " ".join([*before, *after])


def keep_second(
    question: Question, sides: Sequence[str], ranked: Sequence[Passage], leads: list[Lead]
) -> list[Lead]:
    """Leads named by the best passage wait behind the second when that one is about something
    else the question names: the question already vouches for it."""
    if len(ranked) < 2:
        return leads
    named = question_entities(question.text, sides)
    if not any(is_about(ranked[1], e) and not is_about(ranked[0], e) for e in named):
        return leads
    first, second = ranked[0].id, ranked[1].id
    return [replace(lead, origin=second) if lead.origin == first else lead for lead in leads]


def heuristic_leads(
    question: Question,
    kind: str,
    sides: Sequence[str],
    ranked: Sequence[Passage],
    limit: int,
    covered: Sequence[str] = (),
) -> list[Lead]:
    """The follow-ups a round's evidence suggests, without a model. For a comparison only sides
    without evidence are followed up (its ranking already puts each side's best passage first)."""
    if not ranked or limit <= 0:
        return []
    missing = missing_entities(question, sides, ranked, limit, covered)
    if kind == "comparative":
        return missing
    chosen = {lead.entity.lower() for lead in missing}
    bridges = [b for b in bridge_entities(question, ranked, limit) if b.entity.lower() not in chosen]
    if bridges and limit > 1:
        # The names the question gives may fill every slot, yet the best bridge is what the
        # evidence leads to: it always gets one.
        missing = missing[: limit - 1]
    return [*missing, *bridges][:limit]


# --- with a model --------------------------------------------------------------------------------

REFLECT_PROMPT = (
    "You direct follow-up research for a multi-step question. Given the question and the facts "
    "found so far (each with its source number), name what the question still needs: an entity "
    "the facts name that the question asks about without naming it (a person, work, place or "
    "organisation), or a part of the question no fact covers yet. Reply with JSON only: "
    '{"follow_ups": [{"entity": <the name to look up>, "query": <a keyword search query>, '
    '"collection": <one of the given names>, "source": <the number of the fact that names it, '
    "or 0>}]}. At most {max_follow_ups} follow-ups, only the given collection names; an empty "
    "list when nothing is missing. " + UNTRUSTED_RULES
)


class ProposedFollowUp(BaseModel):
    entity: str
    query: str
    collection: str
    source: int = 0


class ReflectOutput(BaseModel):
    follow_ups: list[ProposedFollowUp] = Field(default_factory=list)


def reflect_message(
    question: str, findings: Sequence[Finding], collections: Mapping[str, str]
) -> tuple[str, list[str]]:
    """The prompt's user part, and the passage id behind each fact number."""
    lines = [f"Question: {quote_untrusted(question)}", "", "Facts:"]
    sources: list[str] = []
    for finding in findings:
        for claim in finding.claims:
            if not claim.passage_ids:
                continue
            sources.append(claim.passage_ids[0])
            lines.append(f'<claim n="{len(sources)}">{quote_untrusted(claim.text)}</claim>')
    lines += ["", "Collections:"]
    lines += [f"- {name}: {title}" for name, title in collections.items()]
    return "\n".join(lines), sources


@dataclass(frozen=True)
class ProposedLead:
    lead: Lead
    collection: str


def validate_proposals(
    output: ReflectOutput, allowed: Sequence[str], sources: Sequence[str], fallback_origin: str, limit: int
) -> list[ProposedLead] | None:
    """The model's follow-ups within the rules: allowed collections only, non-empty queries, at most
    ``limit``, each once. ``None`` when it proposed some and none was usable (use the heuristic)."""
    kept: list[ProposedLead] = []
    seen: set[tuple[str, str]] = set()
    for proposal in output.follow_ups:
        query = " ".join(proposal.query.split())[:MAX_QUERY_CHARS]
        entity = " ".join(proposal.entity.split())[:MAX_QUERY_CHARS] or query
        if proposal.collection not in allowed or not terms(query):
            continue
        key = (query.lower(), proposal.collection)
        if key in seen:
            continue
        seen.add(key)
        origin = sources[proposal.source - 1] if 0 < proposal.source <= len(sources) else fallback_origin
        kept.append(
            ProposedLead(
                lead=Lead(entity=entity, query=query, origin=origin, score=1.0),
                collection=proposal.collection,
            )
        )
        if len(kept) >= limit:
            break
    if output.follow_ups and not kept:
        return None
    return kept
