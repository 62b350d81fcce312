"""Suggested follow-ups: up to three questions an answer leaves open, offered under it.

Without a model the suggestions are lexical and deterministic:

- a comparison side no cited passage covers (a question about the side: ``about``),
- the same question about a sibling the cited passages list beside a name the question asks
  about, standing where it stands ("Growth accounts" → "Enterprise accounts"),
- names the cited passages mention that the question does not (the person an answer names, the
  product a policy applies to), cited passages first, names the answer itself says first; a
  one-word name (an acronym, a weekday) only when a retrieved document or section is about it,
- when nothing answered, the question again in the collections that may cover it (``in:``).

With a model, the model proposes questions from the question, the answer and the cited passages'
titles; each is validated (one short question, no markup or links, adding something the question
did not ask, and about something the cited passages name) and the heuristic is the fallback.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from graph.llm.port import ChatModel, LLMError
from graph.llm.prompts import SUGGEST_PROMPT, quote_untrusted
from graph.models import Answer
from graph.research.question import comparison_sides
from graph.research.reflect import BACKGROUND_DOCUMENTS, BACKGROUND_SHARE, question_entities
from retrieval.names import find_names, names_in
from retrieval.passages import Passage
from retrieval.text import split_sentences, stems, terms

MAX_SUGGESTIONS = 3
MAX_QUESTION_CHARS = 150
MAX_NAME_CHARS = 60
MAX_NAMES_PER_PASSAGE = 40
_FORBIDDEN = ("<", ">", "@", "://", "`", "*", "|", "\n", "[", "]")


class Suggestion(BaseModel):
    """A question to ask next; ``targets``: the collections to ask it in (``in:``), if any."""

    model_config = ConfigDict(frozen=True)

    question: str
    targets: tuple[str, ...] = ()
    # A name to ask about, when ``question`` is empty: ``bot/messages.py`` writes the question.
    about: str = ""

    @property
    def text(self) -> str:
        """As a person would type it: ``in:a,b`` first when it names collections."""
        return f"in:{','.join(self.targets)} {self.question}" if self.targets else self.question


@dataclass(frozen=True)
class Suggestions:
    items: tuple[Suggestion, ...]
    how: str  # "none" | "heuristic" | "model"
    fallback_reason: str = ""  # with a model: why the heuristic was used instead


class SuggestOutput(BaseModel):
    questions: list[str] = Field(default_factory=list)


def _cited(answer: Answer) -> list[Passage]:
    return list(dict.fromkeys(c.passage for c in answer.citations))


def _known_name(name: str, texts: Sequence[str]) -> bool:
    """A name, not a word capitalised because it opens a sentence, a line or a heading: an acronym,
    or a name somewhere inside a sentence."""
    if ".." in name or not name[:1].isalnum():
        return False
    if len(name) >= 2 and name.replace("-", "").isupper():
        return True
    return any(n.text == name and not n.opens_sentence for text in texts for n in find_names(text))


_COORDINATION = re.compile(r",|;|\b(?:and|or|versus|vs)\b|/", re.IGNORECASE)
MAX_SIBLING_QUESTION_WORDS = 14
MAX_SIBLING_GAP = 8  # words between two names listed side by side ("Growth accounts 50 ..., and Enterprise")
_LIST_MARKS = re.compile(
    r"(?:\s|,|;|/|\band\b|\bor\b|\bversus\b|\bvs\b\.?)*", re.IGNORECASE
)  # Starter, Growth or …
TITLE_SEPARATOR = " › "  # between a document's title and its section's headings (ingest)


def _coordinated(sentence: str, one: str, other: str) -> bool:
    """Whether two names stand side by side in a list or a comparison in ``sentence``."""
    lowered = sentence.lower()
    a, b = lowered.find(one.lower()), lowered.find(other.lower())
    if a < 0 or b < 0:
        return False
    start, end = (a + len(one), b) if a < b else (b + len(other), a)
    between = sentence[start:end]
    if len(between.split()) > MAX_SIBLING_GAP or names_in(between):
        return False  # far apart, or another name stands between them
    return bool(_COORDINATION.search(between))


class _Background:
    """``graph.research.reflect.is_background`` over stems computed once per passage: a name most retrieved
    passages mention, across several documents, is the setting, not a follow-up."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self._passages = [(p.doc_id, stems(f"{p.title} {p.text}")) for p in passages]

    def holds(self, name_stems: set[str]) -> bool:
        if len(self._passages) < 3:
            return False
        naming = [doc for doc, passage_stems in self._passages if name_stems <= passage_stems]
        return (
            len(naming) > BACKGROUND_SHARE * len(self._passages) and len(set(naming)) >= BACKGROUND_DOCUMENTS
        )


def _replace(pattern: re.Pattern[str], text: str, name: str) -> str:
    """``text`` with the first match of ``pattern`` replaced by ``name`` (taken literally)."""
    match = pattern.search(text)
    return text if match is None else text[: match.start()] + name + text[match.end() :]


def _next_word(text: str, end: int) -> str:
    """The word (or list mark: ``,`` ``;`` ``/``) right after position ``end`` of ``text``."""
    match = re.match(r"\s*([\w'’-]+|[,;/])", text[end:])
    return match.group(1).lower() if match else ""


def _same_place(question: str, entity: str, sentence: str, sibling: str) -> bool:
    """Whether ``sibling`` stands in ``sentence`` where ``entity`` stands in the question: when the
    entity is followed by the same word in both ("Growth accounts"), the sibling is too
    ("Enterprise accounts"; not "under Settings, API keys"); otherwise both are items of one list
    ("Starter, Growth and Enterprise")."""
    pattern = re.compile(rf"(?<!\w){re.escape(entity)}(?!\w)", re.IGNORECASE)
    asked, mentioned = pattern.search(question), pattern.search(sentence)
    listed = re.search(rf"(?<!\w){re.escape(sibling)}(?!\w)", sentence)
    if asked is None or mentioned is None or listed is None:
        return False
    head = stems(_next_word(question, asked.end()))
    if head and head == stems(_next_word(sentence, mentioned.end())):
        return head == stems(_next_word(sentence, listed.end()))
    between = sentence[min(mentioned.end(), listed.end()) : max(mentioned.start(), listed.start())]
    return bool(_LIST_MARKS.fullmatch(between))


def _subject_of_a_document(name_stems: set[str], passages: Sequence[Passage]) -> bool:
    """Whether a retrieved passage's document or section is titled with the name ("VPN",
    "Madonna (entertainer)"): a one-word name (an acronym, "Sundays", "UTC", "JSON") is a
    follow-up only when Confer holds a document or section about it."""
    return any(
        name_stems == stems(re.sub(r"\(.*?\)", " ", part))
        for p in passages
        for part in p.title.split(TITLE_SEPARATOR)
    )


def heuristic_suggestions(
    question: str, answer: Answer, limit: int = MAX_SUGGESTIONS
) -> tuple[Suggestion, ...]:
    """The suggestions the answer's evidence gives, without a model (see the module docstring)."""
    if answer.mode == "direct" or limit <= 0:
        return ()
    if not answer.found:
        return tuple(Suggestion(question=question, targets=(name,)) for name in answer.suggested[:limit])
    cited = list(dict.fromkeys(c.passage for c in answer.citations))
    texts = [p.text for p in cited]
    asked = stems(question)
    found: list[Suggestion] = []
    seen: list[set[str]] = []

    def fresh(name: str) -> set[str] | None:
        name_stems = stems(name)
        if not name_stems or len(name) > MAX_NAME_CHARS or name_stems <= asked:
            return None
        if any(name_stems <= s or s <= name_stems for s in seen):
            return None  # a suggestion already covers it
        return name_stems

    # A comparison side no cited passage covers.
    evidence = stems(" ".join(f"{p.title} {p.text}" for p in cited))
    sides = comparison_sides(question)
    for side in sides:
        side_stems = stems(side)
        if side_stems and not side_stems <= evidence:
            seen.append(side_stems)
            found.append(Suggestion(question="", about=side))
    # The same question about a sibling: a name the cited passages list beside one the question
    # names ("Growth accounts" → "Enterprise accounts").
    short = len(question.split()) <= MAX_SIBLING_QUESTION_WORDS  # a long question is not rewritten
    named = [
        e for e in question_entities(question, sides) if len(e) <= MAX_NAME_CHARS and short and not sides
    ]
    for entity in named:
        pattern = re.compile(rf"(?<!\w){re.escape(entity)}(?!\w)", re.IGNORECASE)
        for text in texts:
            for sentence in split_sentences(text):
                if not pattern.search(sentence):
                    continue
                for name in names_in(sentence):
                    name_stems = fresh(name)
                    if name_stems is None or stems(entity) & name_stems or ".." in name:
                        continue
                    if not _coordinated(sentence, entity, name):  # listed beside it: a name
                        continue
                    if not _same_place(question, entity, sentence, name):  # of the same kind
                        continue
                    if len(found) < limit:
                        seen.append(name_stems)
                        found.append(Suggestion(question=_replace(pattern, question, name)))
    # Names the cited passages mention that the question does not: what the answer names first.
    said = stems(" ".join(s.text for section in answer.sections for s in section.sentences))
    retrieved = list(answer.retrieved) or cited
    background = _Background(retrieved)
    candidates: list[tuple[float, int, str]] = []
    considered: set[str] = set()
    for rank, passage in enumerate(cited):
        for position, name in enumerate(names_in(passage.text)[:MAX_NAMES_PER_PASSAGE]):
            name_stems = stems(name)
            if not name_stems or name_stems <= asked or name in considered:
                continue
            considered.add(name)
            if background.holds(name_stems) or not _known_name(name, texts):
                continue
            if len(name.split()) == 1 and not _subject_of_a_document(name_stems, retrieved):
                continue
            score = (2.0 if name_stems <= said else 1.0) / (1 + rank) / (1 + 0.1 * position)
            score *= 1.0 if len(name_stems) > 1 else 0.7
            candidates.append((-score, len(candidates), name))
    for _, _, name in sorted(candidates):
        if len(found) >= limit:
            break
        name_stems = fresh(name)
        if name_stems is not None:
            seen.append(name_stems)
            found.append(Suggestion(question="", about=name))
    return tuple(found[:limit])


def _valid(text: str, question: str, evidence: set[str]) -> str | None:
    text = " ".join(text.split())
    if not text or len(text) > MAX_QUESTION_CHARS or not text.endswith("?"):
        return None
    if any(mark in text for mark in _FORBIDDEN) or text.count("?") > 1:
        return None
    new = set(terms(text)) - set(terms(question))
    if not new:
        return None  # asks nothing the question did not
    if not stems(" ".join(new)) & evidence:
        return None  # about nothing the cited passages name
    return text


async def suggest_followups(
    question: str,
    answer: Answer,
    *,
    llm: ChatModel | None,
    limit: int = MAX_SUGGESTIONS,
    time_budget: float = 4.0,
) -> Suggestions:
    """Up to ``limit`` follow-ups: the model's, validated, when a model is configured and the answer
    found something; the heuristic's otherwise, or when the model fails or proposes nothing usable."""
    lexical = heuristic_suggestions(question, answer, limit)
    if llm is None or not answer.found or answer.mode == "direct":
        return Suggestions(items=lexical, how="heuristic" if lexical else "none")
    cited = _cited(answer)
    sentences = " ".join(s.text for section in answer.sections for s in section.sentences)
    titles = "\n".join(f"- {quote_untrusted(p.title)}" for p in dict.fromkeys(p for p in cited))
    user = (
        f"Question: {quote_untrusted(question)}\n\n<answer>{quote_untrusted(sentences[:3000])}</answer>\n\n"
        f"Sources:\n{titles}"
    )
    try:
        output = await llm.complete_json(
            system=SUGGEST_PROMPT.replace("{limit}", str(limit)),
            user=user,
            schema=SuggestOutput,
            time_budget=time_budget,
        )
    except LLMError as exc:
        return Suggestions(items=lexical, how="heuristic", fallback_reason=exc.reason)
    evidence = stems(" ".join(f"{p.title} {p.text}" for p in cited)) | stems(sentences)
    kept: list[Suggestion] = []
    for proposed in output.questions:
        text = _valid(proposed, question, evidence)
        if text and all(text.lower() != k.question.lower() for k in kept):
            kept.append(Suggestion(question=text))
        if len(kept) >= limit:
            break
    if not kept:
        return Suggestions(items=lexical, how="heuristic", fallback_reason="no usable suggestion")
    return Suggestions(items=tuple(kept), how="model")
