"""Frozen values that travel through the graph state and come out as the answer."""

from typing import Literal

from pydantic import BaseModel, ConfigDict

from graph.trace import AnswerDecision, AnswerTrace, DroppedSentence
from retrieval.audience import Audience
from retrieval.passages import Passage

QuestionKind = Literal["factual", "comparative", "exploratory", "greeting", "thanks", "help"]
FindingStatus = Literal["ok", "empty", "failed", "timeout"]
Routing = Literal["explicit", "channel_default", "automatic", "all"]
AnswerMode = Literal["extractive", "llm", "direct"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Question(_Frozen):
    """What a person asked, and what the place they asked in lets Confer search."""

    text: str
    allowed: tuple[str, ...]
    requested: tuple[str, ...] = ()
    defaults: tuple[str, ...] = ()
    asked: str = ""  # a follow-up as typed, when ``text`` is its rewrite (shown in the trace only)
    # Who the answer is for: every search of this question reaches only the passages they may read
    # at the source (``retrieval.audience``). By default only what everyone may read; the chat sets
    # the asker's or the channel's, the terminal the operator's (everything).
    audience: Audience = Audience.anyone()


class ResearchTask(_Frozen):
    """One sub-agent's assignment: a collection and the queries to run in it."""

    collection: str
    queries: tuple[str, ...]
    focus: str = ""
    question: str
    round: int = 1
    entity: str = ""  # a follow-up's subject: the entity it looks for
    origin: str = ""  # a follow-up's source: the id of the passage that named the entity
    draft: bool = True  # with a model: whether the model drafts this branch's claims (the best-ranked)


class JoinTask(_Frozen):
    """``join_model``'s assignment: add the model's late work (its plan in round 1, its follow-up
    proposals after) to this round if it arrives before the round's branches have finished."""

    round: int


class Plan(_Frozen):
    kind: QuestionKind
    routing: Routing
    tasks: tuple[ResearchTask, ...]
    sides: tuple[str, ...] = ()


class Claim(_Frozen):
    """A statement drafted by a branch, with the ids of the passages that support it."""

    text: str
    passage_ids: tuple[str, ...]
    coverage: float
    item: bool = False  # an item of the list the claim before it introduces
    code: str = ""  # the code block the claim introduces ("… by running:"), without its fences


class QueryHits(_Frozen):
    """The ranking one query of a task produced (``slot`` is the query's position in the task)."""

    slot: int
    hits: tuple[tuple[str, float], ...]  # (passage id, score), best first


class Finding(_Frozen):
    collection: str
    status: FindingStatus
    reason: str = ""
    passages: tuple[Passage, ...] = ()
    rankings: tuple[QueryHits, ...] = ()
    claims: tuple[Claim, ...] = ()
    seconds: float = 0.0
    dropped: int = 0
    round: int = 1
    entity: str = ""
    origin: str = ""
    drop_reasons: tuple[str, ...] = ()  # why each dropped model sentence was dropped (graph.verify.guards)


class Derived(_Frozen):
    """A sentence Confer derives from cited ones rather than quotes (a comparison's verdict or
    choice), as data: ``bot/messages.py`` words it, and until then its sentence's text is empty.

    ``years``: both sides' years of the compared event ("Yes: 2000 for A, 2009 for B."); ``both``:
    what both sides are (``predicates[0]``); ``pair``: what each side is; ``choice``: ``chosen``
    is the side the question asks for, dated by ``years``, in the question's own comparison word
    (``comparison``: "older") or its event (``event``: "died"; "" for none) and ``earlier``."""

    kind: Literal["years", "both", "pair", "choice"]
    sides: tuple[str, str]
    yes: bool = True
    years: tuple[int, int] | None = None
    predicates: tuple[str, ...] = ()
    chosen: str = ""
    comparison: str = ""
    event: str = ""
    earlier: bool = True


class AnswerSentence(_Frozen):
    text: str
    citations: tuple[int, ...]
    derived: Derived | None = None
    item: bool = False  # an item of the list the sentence before it introduces: shown on a line of its own
    code: str = ""  # the code block the sentence introduces, as its passage writes it: shown after it


class AnswerSection(_Frozen):
    """Sentences attributed to one collection (``""``: a model-written answer across collections)."""

    collection: str
    sentences: tuple[AnswerSentence, ...]


class Citation(_Frozen):
    n: int
    passage: Passage
    quote: str


class CollectionOutcome(_Frozen):
    name: str
    status: FindingStatus
    sources: int
    seconds: float
    reason: str = ""
    round: int = 1


class ResearchRound(_Frozen):
    """One round of research: the collections its branches searched and their queries."""

    collections: tuple[str, ...]
    queries: tuple[str, ...]
    entities: tuple[str, ...] = ()
    seconds: float = 0.0


class JudgedSentence(_Frozen):
    """A sentence the answer judge read (``graph.answer.judge``): its passage, the signals it was
    judged on (in ``graph.answer.judge.FEATURES`` order) and the probability that it answers."""

    text: str
    passage_id: str
    collection: str
    probability: float
    features: tuple[float, ...]


class Judgement(_Frozen):
    """How the answer judge read the evidence: what the reply does (``answers``; ``closest``: no
    direct answer, the closest sentences shown as such; ``nothing``: nothing related found), the
    judge's probability that the evidence answers, the thresholds of its fit, and every sentence
    read with its signals and probability, most likely first."""

    outcome: Literal["answers", "closest", "nothing"]
    probability: float
    answers_at: float
    related_at: float
    sentences: tuple[JudgedSentence, ...] = ()
    quotes_at: float = 0.0
    """What a sentence of an answer other than its first reaches to be said (``JudgeModel.quotes``)."""


class Answer(_Frozen):
    mode: AnswerMode
    kind: QuestionKind
    sections: tuple[AnswerSection, ...] = ()
    citations: tuple[Citation, ...] = ()
    outcomes: tuple[CollectionOutcome, ...] = ()
    retrieved: tuple[Passage, ...] = ()
    dropped: int = 0
    # When nothing answers: the closest sentence found (labelled as such, never as the answer),
    # collections the question was not searched in that do cover it, and the question's language
    # when it differs from the documents' (ISO 639-1).
    closest: tuple[AnswerSentence, ...] = ()
    suggested: tuple[str, ...] = ()
    other_language: str = ""
    rounds: tuple[ResearchRound, ...] = ()
    drop_reasons: tuple[str, ...] = ()  # one bounded reason per dropped sentence whose reason is known
    # The candidate sentences an extractive answer passed over, each with the rule that left it out
    # (``graph.answer.synthesis``; at most ``graph.trace.MAX_PASSED``), for the trace.
    passed_over: tuple[DroppedSentence, ...] = ()
    # A yes/no comparison's verdict, when the cited sentences of both sides decide it: the first
    # section is then Confer's derived verdict sentence (``graph.answer.verdict``), not a quote.
    verdict: bool | None = None
    # A "which came first" comparison's chosen side, when the cited years of both sides decide it:
    # the first section is then Confer's derived sentence naming it (``graph.answer.verdict``).
    choice: str = ""
    # How the extractive answer judge read the evidence (``None``: not judged, e.g. a comparison).
    judgement: Judgement | None = None
    # What the answer step decided (``graph.trace``): set by the answer step, or derived from the
    # answer when it sets none; and how the whole answer was found, set when the graph finishes.
    decision: AnswerDecision | None = None
    trace: AnswerTrace | None = None
    # Set by ``bot/``'s answer cache: the key the answer is kept under, and when a served copy was
    # researched (Unix time; 0: researched for this question).
    cache_key: str = ""
    cached_at: float = 0.0

    @property
    def partial(self) -> bool:
        return any(o.status in ("failed", "timeout") for o in self.outcomes)

    @property
    def found(self) -> bool:
        return any(section.sentences for section in self.sections)
