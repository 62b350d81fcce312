"""Understanding a follow-up: before planning, it becomes a standalone question.

Without a model the rewrite is lexical: an elliptical follow-up ("And for contractors?", "What
about First for Women?") takes the previous question and puts the new part where the previous
subject was (or appends a qualifier such as "for contractors"); a pronoun (it, they, he, she, that)
becomes the previous subject, and so does "ones" ("do unused ones carry over?"). With a model, the
model rewrites (validated JSON) and the lexical rewrite is the fallback when it fails or answers
with something unusable.

The earlier turns are Confer's own (questions it answered in the conversation) or messages read
from a thread Confer had not answered (``origin="thread"``). After Confer's turns a follow-up
builds on the last one; after a thread's messages it builds on the thread's first message, where
people say what a thread is about ("We are expecting a baby in March, so I am planning my parental
leave.", then "Congratulations!", then "@Confer how many weeks can I take?").
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from graph.llm.port import ChatModel, LLMError
from graph.llm.prompts import FOLLOWUP_PROMPT
from graph.research.question import comparison_sides, is_direct, key_terms
from retrieval.names import names_in
from retrieval.text import STOPWORDS, terms

MAX_QUESTION_CHARS = 500
HISTORY_TURNS = 3  # the last turns the model sees (after a thread's first message, if not among them)

RewriteHow = Literal["as_asked", "heuristic", "model"]
# Where an earlier turn comes from: a question Confer answered in the conversation, or a message
# people wrote in a thread before Confer was asked there (``answer``: what an agent replied to it).
TurnOrigin = Literal["conversation", "thread"]


@dataclass(frozen=True)
class PriorTurn:
    """What a follow-up needs from an earlier turn: its standalone question and subject."""

    question: str
    subject: str = ""
    answer: str = ""
    origin: TurnOrigin = "conversation"


@dataclass(frozen=True)
class Standalone:
    """The question to research, and how it was obtained from what was asked."""

    text: str
    subject: str
    how: RewriteHow
    fallback_reason: str = ""  # with a model: why the lexical rewrite was used instead


class RewriteOutput(BaseModel):
    question: str


_QUESTION_WORDS = r"how|what|who|whom|whose|when|where|which|why|is|are|was|were|do|does|did|can|could"
_AMOUNT = r"(?:long|much|many|often|old|far|big)"  # "how long", "how many", …
_AUX = (
    r"am|is|are|was|were|do|does|did|can|could|should|would|will|has|have|had|may|might|must|be|been|get|gets"
)
_ELLIPSIS_RE = re.compile(
    r"^\s*(?:(?:and|but|also|so|ok|okay)\s*[,:]?\s+)?(?:(?:and\s+)?(?:what|how)\s+about|what\s+of|"
    r"same\s+(?:question\s+)?for|and|also)\s+(?P<rest>.+?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_PREPOSITION_RE = re.compile(
    r"^(?:for|in|at|on|during|with|without|under|after|before|from|to|by|outside|inside|within|until|"
    r"till|since|per|over|across|between|through|throughout|beyond)\b",
    re.IGNORECASE,
)
# A follow-up with this few content words of its own, and none of the earlier turn's, leans on the
# conversation for what it is about ("how many weeks can I take?"): the earlier turn's subject, else
# what it asked (every content word of an earlier question), else the last CONTEXT_TERMS content
# words of an earlier statement (where English puts what a statement is about: "… planning my
# parental leave"), go with it to the search.
UNDERSPECIFIED_TERMS = 2
CONTEXT_TERMS = 2
_QUESTION_START_RE = re.compile(rf"^(?:{_QUESTION_WORDS}|{_AUX})\b", re.IGNORECASE)
_PRONOUN_RE = re.compile(
    r"\b(?P<p>it|its|they|them|their|he|him|his|she|her|that|this)(?P<is>['’]s)?\b"
    r"(?=(?P<after>\s*[?.!,]|\s+\w+|$)?)",
    re.IGNORECASE,
)
_POSSESSIVE = {"its", "their", "his"}
# The "it" that stands for nothing: before a judging adjective ("is it possible to", "if it is
# true"), in "it makes sense", and of the weather ("if it rains").
_IT_IS = r"(?:\s*['’]s|\s+(?:is|was|be|isn't|wasn't))?"  # "it's", "it is", "is it", "isn't it"
_EXPLETIVE_RE = re.compile(
    rf"{_IT_IS}\s+(?:possible|impossible|necessary|true|false|ok|okay|"
    r"safe|worth|important|better|normal|legal|allowed|required|mandatory|hard|easy|enough|too)\b"
    # "isn't it already too late?", "is it time to …": how late it is, whatever stands between
    rf"|{_IT_IS}(?:\s+(?:already|still|really|just|even|not|so|getting))*"
    r"\s+(?:too\s+(?:late|early|soon)|late|early|time)\b(?!-)"
    r"|\s+(?:makes?|made)\s+sense\b|\s+(?:rains?|rained|raining|snows?|snowed|snowing)\b"
    r"|\s+(?:is|was)\s+(?:raining|snowing)\b",
    re.IGNORECASE,
)
_ONES_RE = re.compile(r"\bones\b", re.IGNORECASE)
# "What is an account?" asks what a thing is; "what is the deadline?" asks an attribute of the
# conversation's subject.
_DEFINITION_RE = re.compile(r"^\s*(?:what|who)\s+(?:is|are|was|were)\s+(?:a|an)\s", re.IGNORECASE)
_DEMONSTRATIVE_VERB_RE = re.compile(rf"^\s*(?:{_AUX}|mean|means|cover|covers|apply|applies)\b", re.I)
_LEAD_RE = re.compile(
    rf"^\s*(?:(?:{_QUESTION_WORDS})(?:['’]s)?\s+)?(?:{_AMOUNT}\s+)?"
    rf"(?:(?:{_AUX})\s+)?(?:(?:the|a|an|our|my|your)\s+)?",
    re.IGNORECASE,
)
_STOP_AT_RE = re.compile(rf"\s+(?:{_AUX}|that|which|who)\b.*$", re.IGNORECASE)
_ABOUT_RE = re.compile(
    r"^\s*(?:tell me (?:more )?about|describe|explain|what do you know about)"
    r"\s+(?:the\s+)?[\"“]?(?P<subject>[^\"”?]+?)[\"”]?\s*[?.!]*$",
    re.IGNORECASE,
)
# A subject that can stand in for "it": words and hyphens, none of them a verb of the question's
# frame or a person ("I", "you").
_PERSONS = "i we you me us it they he she".split()
_NOUN_PHRASE_RE = re.compile(
    rf"^(?!.*\b(?:{_AUX}|{'|'.join(_PERSONS)}|yes|no)\b)[\w][\w\s'’&./-]*$", re.IGNORECASE
)
# Words a subject never starts with: the persons, and question words and articles left over.
_VAGUE = frozenset([*_PERSONS, *"one there here what which who how the a".split()])
# "How do feature flags work here?": after "do" (or a modal) the subject runs into the main verb,
# and a noun phrase cut out lexically would carry it ("feature flags work here"); so it does
# after the "is" of a yes-no question ("is web chat secure enough").
_DO_SUPPORT_RE = re.compile(
    rf"^\s*(?:(?:(?:{_QUESTION_WORDS})\s+)?(?:{_AMOUNT}\s+)?"
    r"(?:do|does|did|can|could|should|would|will|may|might|must)|is|are|was|were)\b",
    re.IGNORECASE,
)


def subject_of(question: str) -> str:
    """What a question is about: the things it compares, else its longest name, else the noun
    phrase after the question word ("How long is parental leave?" → "parental leave")."""
    question = " ".join(question.split())
    about = _ABOUT_RE.match(question)
    if about:
        return about.group("subject")
    sides = comparison_sides(question)
    if sides:
        return " and ".join(side.strip(" ,;:") for side in sides)
    names = [n for n in names_in(question) if n.lower() not in _VAGUE]
    if names:
        return max(names, key=lambda n: len(n.split()))
    rest = _LEAD_RE.sub("", question, count=1)
    rest = _STOP_AT_RE.sub("", rest).strip(" ?.!,;:")
    words = rest.split()[:6]
    while words and words[-1].lower() in STOPWORDS:  # not "the rate limit on the"
        words.pop()
    return " ".join(words) if words and words[0].lower() not in _VAGUE else ""


def rewrite_followup(text: str, history: Sequence[PriorTurn]) -> Standalone:
    """The lexical rewrite: a standalone question from ``text`` and the earlier turns. A
    thank-you, a greeting or a request for help stands alone, and no earlier one is a turn to
    build on ("thanks" after an answer about parental leave is no question about it)."""
    text = " ".join(text.split())
    if not text or is_direct(text):
        return Standalone(text=text, subject="", how="as_asked")
    return _rewrite(text, _conversation(history))


def _rewrite(text: str, history: Sequence[PriorTurn]) -> Standalone:
    """``rewrite_followup`` for a text with its spaces collapsed that asks something, after the
    turns that asked something (``_conversation``)."""
    if not history:
        return Standalone(text=text, subject=subject_of(text), how="as_asked")
    previous = _building_on(history)
    subject = previous.subject or subject_of(previous.question)
    base = previous.question.strip().rstrip("?.! ")
    ellipsis = _ELLIPSIS_RE.match(text)
    if ellipsis and not _QUESTION_START_RE.match(ellipsis.group("rest")):
        rest = ellipsis.group("rest").strip(" ,")
        if _PREPOSITION_RE.match(rest):
            rewritten = f"{base} {rest}?"
            return Standalone(text=rewritten, subject=subject, how="heuristic")
        new_subject = _strip_article(rest)
        qualifier = re.match(r"^(?P<head>[a-z][\w\s-]*?\s(?:for|of|in|on|at)\s)[a-z][\w\s-]*$", subject)
        if qualifier and subject in base and not new_subject[:1].isupper():
            # "the expense limit for travel" + "what about hotels?" → "the expense limit for hotels"
            rewritten = base.replace(subject, qualifier.group("head") + new_subject, 1)
            return Standalone(
                text=f"{rewritten}?", subject=qualifier.group("head") + new_subject, how="heuristic"
            )
        if subject and _NOUN_PHRASE_RE.match(subject) and re.search(re.escape(subject), base, re.IGNORECASE):
            rewritten = re.sub(re.escape(subject), lambda _m: new_subject, base, count=1, flags=re.IGNORECASE)
            return Standalone(text=f"{rewritten}?", subject=new_subject, how="heuristic")
        sides = comparison_sides(base)
        if sides and re.search(re.escape(sides[0]), base, re.IGNORECASE):
            rewritten = re.sub(
                re.escape(sides[0]), lambda _m: new_subject, base, count=1, flags=re.IGNORECASE
            )
            return Standalone(text=f"{rewritten}?", subject=new_subject, how="heuristic")
        return Standalone(text=f"{base}: {new_subject}?", subject=new_subject, how="heuristic")
    if ellipsis:  # "And can it be split up?": the rest is a question of its own
        text = ellipsis.group("rest").strip() + ("?" if text.rstrip().endswith("?") else "")
    if subject and not _stands_alone(subject, previous):
        # A subject cut from "how do X work" may hold the verb: put in for "it", it would garble
        # the question; the question is asked as written, with the subject's key terms.
        said = subject if _NOUN_PHRASE_RE.match(subject) else previous.question
        if _PRONOUN_RE.search(text) and (carried := " ".join(key_terms(said))):
            return Standalone(text=f"{text.rstrip()} ({carried})", subject=subject, how="heuristic")
        subject = ""
    resolved = _resolve_pronouns(text, subject) if subject else text
    if subject and resolved == text and subject not in names_in(previous.question):
        # "do unused ones carry over?" after "how many vacation days …": "ones" stands for the
        # thing the earlier question was about (a name is not such a thing: "which ones" of it?).
        resolved = _ONES_RE.sub(lambda _m: subject, text, count=1)
    if resolved != text:
        return Standalone(text=resolved, subject=subject, how="heuristic")
    own = subject_of(text)
    context = _context_terms(text, previous)
    if context:
        # Asked as written, with what the conversation is about: never a merge of the two.
        # The thread's subject stays, unless the follow-up asks what a thing of its own is ("what
        # is an account?"): the next "how can I create one?" is about that thing.
        # A thread's message is no question and has no subject: what it is about is the terms carried
        # ("parental leave", not the "weeks" of "how many weeks can I take?").
        named_own = (
            bool(own) and _DEFINITION_RE.match(text) is not None and _NOUN_PHRASE_RE.match(own) is not None
        )
        kept = subject or (context if previous.origin == "thread" else own)
        return Standalone(
            text=f"{text.rstrip()} ({context})", subject=own if named_own else kept, how="heuristic"
        )
    return Standalone(text=text, subject=own or subject, how="as_asked" if not ellipsis else "heuristic")


def _conversation(history: Sequence[PriorTurn]) -> list[PriorTurn]:
    """The earlier turns a follow-up may build on: those that asked something."""
    return [turn for turn in history if not is_direct(turn.question)]


def _building_on(history: Sequence[PriorTurn]) -> PriorTurn:
    """The turn a follow-up builds on (``history`` is not empty): the last one, unless it was read
    from a thread; then the thread's first message read, which says what the thread is about (its
    later replies congratulate, agree or chat: "Congratulations!" is no topic)."""
    last = history[-1]
    if last.origin != "thread":
        return last
    return next(turn for turn in history if turn.origin == "thread")


def _stands_alone(subject: str, previous: PriorTurn) -> bool:
    """Whether the earlier turn's subject can stand in for a pronoun: it is a name the question
    says, the sides it compares, or the question does not put it before its main verb."""
    if subject in names_in(previous.question) or comparison_sides(previous.question):
        return True
    if not _NOUN_PHRASE_RE.match(subject):
        return False  # 'am I getting a "method', "Yes, I": a piece of a clause, not a thing
    return not _DO_SUPPORT_RE.match(previous.question)


def _context_terms(text: str, previous: PriorTurn) -> str:
    """The key terms of the turn built on, for a follow-up that names too little to stand alone and
    shares none of them ("how many weeks can I take?" after "… planning my parental leave", "where
    do the old copies end up?" after "how do i set up versioning …"); "" otherwise."""
    own = set(key_terms(text))
    named = names_in(text)
    if len(own) > UNDERSPECIFIED_TERMS or named:
        return ""
    source = previous.subject or previous.question
    carried = [t for t in dict.fromkeys(terms(source)) if t not in own]
    if not carried or len(carried) < len(set(terms(source))):
        return ""  # the follow-up already says part of it
    # A question is about all it names: "how do i set up versioning so i can get back stuff that got
    # deleted on another device" is about versioning, which its last words do not say.
    asked = previous.question.rstrip().endswith("?") or _QUESTION_START_RE.match(previous.question)
    return " ".join(carried if previous.subject or asked else carried[-CONTEXT_TERMS:])


def _strip_article(text: str) -> str:
    return re.sub(r"^(?:the|a|an)\s+(?=[A-Z0-9])", "", text)


def _resolve_pronouns(text: str, subject: str) -> str:
    """Pronouns standing for the previous subject become the subject (possessives take 's).

    "that"/"this" count only where they open the question or follow a verb or preposition (not as
    a relative pronoun: "a group that was formed"); once a pronoun is replaced, later possessives
    refer back to it within the sentence and stay."""
    replaced = False

    def replace(match: re.Match[str]) -> str:
        nonlocal replaced
        lower = match.group("p").lower()
        after = match.group("after") or ""
        before = text[: match.start()].split()
        previous = before[-1].lower() if before else ""
        if lower == "it" and _EXPLETIVE_RE.match(text, match.end("p")):
            return match.group(0)  # "is it possible to …", "if it rains": "it" stands for nothing
        if lower in ("that", "this") and (
            (previous and not re.fullmatch(rf"{_QUESTION_WORDS}|{_AUX}|about|of|for|to|with|on|in", previous))
            or (
                after.strip()
                and not re.match(r"\s*[?.!,]", after)
                and not _DEMONSTRATIVE_VERB_RE.match(after)
            )
        ):
            return match.group(0)
        possessive = lower in _POSSESSIVE or (lower == "her" and _before_noun(after))
        if possessive and replaced:
            return match.group(0)
        replaced = True
        if match.group("is"):  # "it's fully rolled out"
            return f"{subject} is"
        return f"{subject}'s" if possessive else subject

    return _PRONOUN_RE.sub(replace, text)


def _before_noun(after: str) -> bool:
    """ "her" is possessive before a word that is neither a verb nor a preposition ("her thesis")."""
    if not re.match(r"\s+[a-z]", after) or _DEMONSTRATIVE_VERB_RE.match(after):
        return False
    return not re.match(r"\s+(?:to|in|on|at|for|from|with|about|and|or)\b", after)


def is_followup(text: str) -> bool:
    """Whether the text reads as depending on an earlier turn (ellipsis or a pronoun)."""
    return bool(_ELLIPSIS_RE.match(text) or _PRONOUN_RE.search(text))


async def understand_followup(
    text: str, history: Sequence[PriorTurn], *, llm: ChatModel | None, time_budget: float = 8.0
) -> Standalone:
    """The standalone question for ``text``: the model's rewrite when a model is configured and the
    text depends on earlier turns, validated; the lexical rewrite otherwise or as the fallback."""
    said = " ".join(text.split())
    if not said or is_direct(said):
        return Standalone(text=said, subject="", how="as_asked")
    history = _conversation(history)  # filtered once, for the rewrite and the model's prompt
    lexical = _rewrite(said, history)
    if llm is None or not history or not is_followup(text):
        return lexical
    start = _building_on(history)
    recent = history[-HISTORY_TURNS:]
    shown = recent if any(turn is start for turn in recent) else [start, *recent]
    turns = "\n".join(
        f"<turn>\nQ: {_quote(turn.question)}\nA: {_quote(turn.answer[:600])}\n</turn>" for turn in shown
    )
    user = f"Earlier turns:\n{turns}\n\nFollow-up: {_quote(text)}"
    try:
        output = await llm.complete_json(
            system=FOLLOWUP_PROMPT, user=user, schema=RewriteOutput, time_budget=time_budget
        )
    except LLMError as exc:
        return _fallback(lexical, exc.reason)
    question = " ".join(output.question.split())
    if not question or len(question) > MAX_QUESTION_CHARS or not terms(question):
        return _fallback(lexical, "unusable rewrite")
    if not (set(terms(question)) & set(terms(text) + terms(start.question) + terms(history[-1].question))):
        return _fallback(lexical, "rewrite unrelated to the conversation")
    return Standalone(text=question, subject=subject_of(question) or lexical.subject, how="model")


def _fallback(lexical: Standalone, reason: str) -> Standalone:
    return Standalone(text=lexical.text, subject=lexical.subject, how=lexical.how, fallback_reason=reason)


def _quote(text: str) -> str:
    return text.replace("<", "‹").replace(">", "›")
