"""Progress events written to LangGraph's custom stream while a question is researched."""

from graph.models import Answer, AnswerSentence, FindingStatus, QuestionKind, Routing, _Frozen


class PlanReady(_Frozen):
    kind: QuestionKind
    routing: Routing
    collections: tuple[str, ...]


class BranchStarted(_Frozen):
    collection: str
    round: int = 1
    entity: str = ""


class BranchFinished(_Frozen):
    collection: str
    status: FindingStatus
    sources: int
    seconds: float
    reason: str = ""
    round: int = 1
    entity: str = ""
    links: tuple[tuple[str, str], ...] = ()  # (url, title) of each distinct source URL found, by rank


class FollowUp(_Frozen):
    """``reflect`` sends another round: the entity each branch looks for, in which collection."""

    round: int
    targets: tuple[tuple[str, str], ...]  # (entity, collection)


class LLMFallback(_Frozen):
    """The model could not be used for a step; the extractive or heuristic path was taken."""

    stage: str  # plan | draft | reflect | synthesis
    reason: str
    collection: str = ""


class SentenceVerified(_Frozen):
    """One sentence of a model-written answer, verified as it was written: shown at once. The
    answer that follows opens with exactly the sentences sent this way, in this order, with these
    citation numbers."""

    sentence: AnswerSentence


class AnswerReady(_Frozen):
    answer: Answer
    seconds: float


ProgressEvent = (
    PlanReady | BranchStarted | BranchFinished | FollowUp | LLMFallback | SentenceVerified | AnswerReady
)
