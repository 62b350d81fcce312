"""Names in text: the one detector every rule reads (questions' entities, follow-up leads, the
guards' names, the role skeletons, the answer kinds).

A name is a quoted title, or a run of capitalised words (numbers inside it, and the small words
names contain between them: "Bank of America", "Vincent van Gogh"), in any script that has
capitals ("Tekezé", "Émile Zola"). What is not a name:

- a capitalised word that is capitalised only because it opens a sentence ("Considered the …"),
  or a function or question word there ("What", "Wie", "Comment", the text language's "Die");
- the small words a name neither starts nor ends with ("the", "of"), words capitalised for their
  position ("However"), and calendar and language words ("Monday", "English"), which name
  nothing alone;
- a possessive's ending: "Confederation's" names "Confederation";
- in German, where every noun is capitalised, one capitalised word alone, or a sentence's first
  word: only runs of capitalised words, acronyms and quoted titles count.

Names are split at "and" and "&" ("Starter and Growth" are two). Words are compared as
``retrieval.text.words`` reads them (diacritics folded, possessives dropped).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from retrieval.language import FUNCTION_WORDS
from retrieval.text import (
    ABBREVIATIONS,
    APOSTROPHES,
    STOPWORDS,
    TEXT_CACHE_SIZE,
    fold,
    stem,
    terms,
    unique,
    words,
)

# The small words inside names, between two capitalised words.
JOINERS = frozenset("of the de la le du da del der van von y for to".split())
# Words capitalised only for their place: function words and sentence adverbs. Never part of a name.
POSITIONAL = (
    frozenset(
        """however although though today yesterday meanwhile despite additionally furthermore
        moreover finally instead still yet thus therefore hence nevertheless many several another
        according unlike""".split()
    )
    | STOPWORDS
)
# Proper words that name nothing by themselves: calendar words and language adjectives. Part of a
# name inside it ("Fourth of July"), not at its edges; a name that changes them changes the
# meaning all the same (``is_name_word``).
NOT_NAMES = (
    frozenset(
        """
        january february march april may june july august september october november december
        monday tuesday wednesday thursday friday saturday sunday american british english french
        german
        """.split()
    )
    | POSITIONAL
)
# Words that open questions in the languages Confer stems: never a name at a sentence's start.
OPENERS = frozenset(
    fold(w)
    for w in """wie was wer wann wo warum welche welcher welches gibt kann muss darf ist sind comment
    quel quelle quels quelles qui quand où pourquoi combien est puis cómo qué quién cuándo dónde
    cuánto cuántos hoe wat wie wanneer waar waarom welke come cosa chi quando dove perché quanto
    quem onde quantos hur vad vem när varför vilken""".split()
)
# Languages that capitalise every noun: there one capitalised word alone is no name.
NOUNS_CAPITALISED = frozenset({"de"})

_QUOTED_RE = re.compile(r"[\"“”]([^\"“”]{2,100})[\"”“]")
# A word (letters and digits, with apostrophes, hyphens, dots, ampersands and slashes inside), a
# trailing apostrophe ("Employees'"), a trailing full stop; or one other character.
_TOKEN_RE = re.compile(
    rf"[^\W_]+(?:[{APOSTROPHES}\-‐‑./&][^\W_]+)*(?:[{APOSTROPHES}](?![^\W_]))?\.?|\S", re.UNICODE
)
_SENTENCE_END = frozenset(".!?:;•*\n")


@dataclass(frozen=True)
class Name:
    """A name found in a text: as written (possessive dropped), where its run starts and where the
    name ends in the text, whether it opens a sentence, and whether it was quoted."""

    text: str
    start: int
    end: int
    opens_sentence: bool
    quoted: bool = False


def is_name_word(token: str) -> bool:
    """A capitalised word that may be part of a name: not a function word or another word
    capitalised for its position ("The", "However")."""
    return token[:1].isupper() and (_acronym(token) or _key(token) not in POSITIONAL)


def names_in(text: str, *, language: str = "en", quoted: bool = True) -> list[str]:
    """The names in ``text`` (quoted titles that start with a capital or a digit first, when
    ``quoted``), in order, each once."""
    found = [n.text for n in find_names(text, language=language)]
    if quoted:
        titles = [n.text for n in quoted_names(text) if n.text[:1].isupper() or n.text[:1].isdigit()]
        found = titles + found
    return unique(found)


def quoted_names(text: str) -> list[Name]:
    """Quoted phrases of at least one content word (a title, or a phrase asked about as such)."""
    found = []
    for match in _QUOTED_RE.finditer(text):
        inner = " ".join(match.group(1).split()).strip(" ,;:")
        if terms(inner):
            found.append(Name(inner, match.start(1), match.end(1), _opens(text, match.start()), quoted=True))
    return found


def name_words(text: str, *, language: str = "en", sentences: bool = True) -> set[str]:
    """The words of the names in ``text`` (as ``words`` reads them), without small words."""
    found = find_names(text, language=language, sentences=sentences)
    return {w for n in found for w in words(n.text) if w not in STOPWORDS}


def leading_name(text: str) -> str:
    """The name ``text`` starts with, as written ("Screaming Trees" of "Screaming Trees had more
    members"), or ``""``: for a fragment that starts inside a sentence."""
    quoted = quoted_names(text)
    if quoted and quoted[0].start <= 1:
        return text[: quoted[0].end + 1]
    names = _find_names(text, "en", False)
    return text[: names[0].end] if names and names[0].start == 0 else ""


def find_names(text: str, *, language: str = "en", sentences: bool = True) -> list[Name]:
    """The names in ``text`` outside quotes, in order (``Name`` spans; see the module docstring).
    ``sentences``: ``text`` is made of sentences, whose first word is capitalised anyway (a
    capitalised word alone there is no name); otherwise every capitalised word counts."""
    return list(_find_names(text, language, sentences))


def mentions(text: str, name: str) -> bool:
    r"""Whether ``text`` says ``name`` as a whole (no word character right before or after it),
    case and diacritics aside."""
    folded, wanted = fold(text), fold(name)
    if not wanted:
        return False
    start = folded.find(wanted)
    while start >= 0:
        end = start + len(wanted)
        if (start == 0 or not _word_character(folded[start - 1])) and (
            end == len(folded) or not _word_character(folded[end])
        ):
            return True
        start = folded.find(wanted, start + 1)
    return False


def _word_character(character: str) -> bool:
    return character.isalnum() or character == "_"  # what ``\w`` matches


def _key(token: str) -> str:
    """A token as the word lists hold it: lower-case, folded, possessive and end dot dropped."""
    if token.isascii() and "'" not in token:
        return token.lower().rstrip(".")
    return "".join(words(token.rstrip(".")))


def _opens(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\"“'‘([")
    return not before or before[-1] in _SENTENCE_END or before[-1] in "-–—"


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _find_names(text: str, language: str, sentences: bool) -> tuple[Name, ...]:
    """The names outside quotes; ``sentences``: the text is whole sentences (its first word, and
    each word after a sentence's end or a line break, opens a sentence)."""
    masked = _QUOTED_RE.sub(lambda m: "," + " " * (len(m.group(0)) - 1), text)
    nouns_capitalised = language in NOUNS_CAPITALISED
    function_words = FUNCTION_WORDS.get(language, frozenset())
    found: list[Name] = []
    run: list[re.Match[str]] = []
    run_opens = False
    sentence_start = sentences
    last_end = 0

    def close() -> None:
        if not run:
            return
        parts, raw_start, opening = list(run), run[0].start(), run_opens
        run.clear()
        while parts and _edge(parts[-1].group()):
            parts.pop()
        while parts and _edge(parts[0].group()):
            parts.pop(0)
            opening = False
        if not parts:
            return
        if len(parts) == 1 and (opening or (nouns_capitalised and not _acronym(parts[0].group()))):
            return  # capitalised for its place in the sentence, or as a noun
        start = parts[0].start()
        name = _without_possessive(text[start : parts[-1].end()].rstrip("."))
        if any(_acronym(p.group().rstrip(".")) for p in parts) or any(
            t.isalpha() and len(t) > 1 and t not in NOT_NAMES for t in words(name)
        ):
            found.append(Name(name, raw_start, start + len(name), opening))

    for match in _TOKEN_RE.finditer(masked):
        token = match.group()
        if sentences and "\n" in masked[last_end : match.start()]:
            close()
            sentence_start = True
        last_end = match.end()
        core = token.rstrip(".")
        if not core or not core[0].isalnum():
            close()
            sentence_start = sentence_start or (sentences and token in _SENTENCE_END)
            continue
        first = core[0]
        capital = first.isupper()
        if capital and sentence_start and not _acronym(core):
            key = _key(core)
            capital = not (key in NOT_NAMES or key in OPENERS or key in function_words or nouns_capitalised)
        if capital or (run and first.isdigit()):
            if not run:
                run_opens = sentence_start
            run.append(match)
        elif run and core in JOINERS:  # lower-case as they stand
            run.append(match)
        else:
            close()
        ends_sentence = token.endswith(".") and not _keeps_dot(token)
        if ends_sentence:
            close()
        sentence_start = sentences and ends_sentence
    close()
    return tuple(found)


def _edge(token: str) -> bool:
    """A token a name neither starts nor ends with: small words, dates, numbers."""
    core = token.rstrip(".")
    return not core[:1].isupper() or (_key(core) in NOT_NAMES and not _acronym(core))


def _acronym(token: str) -> bool:
    """Capitals only ("IT", "SEV-1", "U.S."): never a function word ("it", "us")."""
    return len(token) > 1 and token.isupper()


def _keeps_dot(token: str) -> bool:
    """A full stop that belongs to the word: an initial ("J."), an abbreviation ("U.S.", "e.g.")."""
    core = token[:-1]
    return (len(core) == 1 and core.isalpha()) or "." in core or token.lower() in ABBREVIATIONS


def _without_possessive(name: str) -> str:
    for apostrophe in APOSTROPHES:
        if name.endswith(apostrophe + "s"):
            return name[:-2]
        if name.endswith(apostrophe):
            return name[:-1]
    return name


_PHRASE_BREAK_RE = re.compile(r"[.,;:!?()\[\]{}/|›»«—–\n]+")
# Small words an acronym's letters skip ("Federal Bureau of Investigation" is "FBI").
_ACRONYM_SKIPS = frozenset({"of", "and", "the", "for", "in", "on", "to", "a", "an"})


def acronyms_in(text: str) -> list[str]:
    """The words ``text`` writes in capitals (2 to 6 letters, "PR", "SF", "GDPR", a plural's
    "PRs" read as "pr"), lower-cased as ``words`` reads them, each once; not in a text written in
    capitals throughout, nor a common word often written so ("OK", "AM", "US")."""
    if not any(ch.islower() for ch in text):
        return []  # shouted: its capitals say nothing
    found = (w.lower() for w in re.findall(r"\b([A-Z]{2,6})s?\b", text))
    return unique(w for w in found if w not in STOPWORDS and w not in _CAPITALISED_WORDS)


# Words written in capitals that are no acronym to spell out.
_CAPITALISED_WORDS = frozenset({"ok", "okay", "am", "pm", "tv", "id"})


def expansion_of(
    acronym: str, texts: Sequence[str], weights: Sequence[float] | None = None, *, whole: bool = False
) -> str:
    """The words the texts spell ``acronym`` out with ("pull request" for "pr", "San Francisco"
    for "sf"): the run of content words whose initials are its letters (small words between them
    skipped) that the texts write most often, each text counting its ``weight`` (1 without);
    ``""`` when none is, or two weigh the same. With ``whole``, only a run that is a whole phrase
    (a title or heading) counts. Found by spelling, the same in any domain; an acronym the texts
    write as such needs none."""
    letters = acronym.lower()
    counts: dict[tuple[str, ...], float] = {}
    written: dict[tuple[str, ...], str] = {}  # each run as first written ("merge requests" is one)
    for i, text in enumerate(texts):
        for found in _phrases(text):
            for start, word in enumerate(found):
                if word[:1] != letters[0]:
                    continue
                run = _spelled(found, start, letters)
                if run and (not whole or _is_whole(run, found)):
                    key = tuple(stem(w) for w in run.split())
                    written.setdefault(key, run)
                    counts[key] = counts.get(key, 0.0) + (weights[i] if weights is not None else 1.0)
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if not ranked or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return ""
    return written[ranked[0][0]]


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _phrases(text: str) -> tuple[tuple[str, ...], ...]:
    """The words of each phrase of the text (a name is spelled out within one), read once per text
    for every acronym a question holds."""
    return tuple(tuple(words(part)) for part in _PHRASE_BREAK_RE.split(text))


def _spelled(found: Sequence[str], start: int, letters: str) -> str:
    """The run of ``found`` from ``start`` whose words' initials are ``letters`` ("work from
    home"), small words between them skipped ("federal bureau of investigation"), or "". Inside a
    phrase its first and last words are content words: "one of our", "roll out in" and "is on
    call" spell nothing. A whole phrase (a title or heading, an item) may start or end with a
    small word: "Paid time off" spells "PTO", "Out of office" "OOO"."""
    strict = _run(found, start, letters, strict=True)
    if strict or start:
        return strict
    whole = _run(found, 0, letters)
    return whole if _is_whole(whole, found) else ""


def _is_whole(run: str, found: Sequence[str]) -> bool:
    """Whether a run spelled from the start of a phrase is all of it (a title, a heading)."""
    return len(run.split()) == len(found)


def _run(found: Sequence[str], start: int, letters: str, *, strict: bool = False) -> str:
    """``_spelled``'s run, its ends content words when ``strict``."""
    taken: list[str] = []
    position = start
    for i, letter in enumerate(letters):
        while True:
            word = found[position] if position < len(found) else ""
            content = word not in STOPWORDS
            if word[:1] == letter and word.isalpha() and (content or not strict or 0 < i < len(letters) - 1):
                break
            if not taken or word not in _ACRONYM_SKIPS:
                return ""
            taken.append(word)
            position += 1
        taken.append(word)
        position += 1
    return " ".join(taken)
