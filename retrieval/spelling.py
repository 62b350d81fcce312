"""A question's misspelt words, read against the passages its search found.

People mistype names and long words ("the Livesey Hal War Memorial", "St. Judt Medical", "a WB
supernatrual drama"). A search by meaning finds the passages anyway, but every later check reads
words: the name the question gives is then named nowhere, and the evidence seems not to answer.
``respell`` puts back the passages' spelling of such a word, and only where the passages show it
unmistakably:

- the word is written in none of the passages, nor is any word with its stem;
- it is part of a name the question gives (capitalised or quoted), or long (``LONG_WORD``
  letters): a short common word ("side", "part") is more often another word than a typo;
- exactly one word of the passages is one edit away (a letter added, dropped, changed, or two
  neighbours swapped), starts with the same letter, and stands next to the same word as in the
  question ("Livesey Hall", "Hall War"), so the correction is read in its place, not guessed.
"""

import re
from collections.abc import Sequence

from retrieval.names import names_in
from retrieval.text import STOPWORDS, fold, stem, unique, words

LONG_WORD = 7  # letters: a longer word not written anywhere is corrected even outside a name
_LETTERS = re.compile(r"[^\W\d_]+")


# A word written with a capital inside ("MediCal", "PowerPoint"): parts of three letters or more,
# so the shortest prefixes of names ("McCartney", "DeVito", "LeBron") are not split off (longer
# ones are: "MacArthur" is also searched as "Mac Arthur").
_CAMEL_CASE = re.compile(r"\b[A-Z]?[a-z]{2,}(?:[A-Z][a-z]{2,})+\b")
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+")


def spelled_apart(text: str) -> list[str]:
    """The words ``text`` writes with a capital inside, each written apart ("MediCal" → "Medi
    Cal"): documents often write them with a hyphen or a space ("Medi-Cal"), which no search by
    words finds from the joined word ("medical" is another word)."""
    return unique(" ".join(_CAMEL_PART.findall(m.group())) for m in _CAMEL_CASE.finditer(text))


def respell(question: str, texts: Sequence[str]) -> str:
    """``question`` with each misspelt word (see the module) written as ``texts`` write it, and
    each word written with a capital inside that the texts write only with a hyphen ("MediCal",
    when they write "Medi-Cal") written so."""
    return _respell_words(_joined_as_written(question, texts), texts)


def _joined_as_written(question: str, texts: Sequence[str]) -> str:
    """``question`` with each word written with a capital inside that ``texts`` never write so,
    but write as a name written apart is, its parts, capitals and all, joined by a hyphen
    ("Medi-Cal"; "one drive" in a sentence is not "OneDrive"), written that way."""
    for match in reversed(list(_CAMEL_CASE.finditer(question))):
        word = match.group()
        if any(word in text for text in texts):
            continue
        hyphenated = "-".join(_CAMEL_PART.findall(word))
        apart = re.compile(r"\b" + re.escape(hyphenated) + r"\b")
        if any(apart.search(text) for text in texts):
            question = question[: match.start()] + hyphenated + question[match.end() :]
    return question


def _respell_words(question: str, texts: Sequence[str]) -> str:
    tokens = [(m.start(), m.end(), fold(m.group())) for m in _LETTERS.finditer(question)]
    sequences = [words(text) for text in texts]
    written = {w for sequence in sequences for w in sequence}
    unknown = [
        i
        for i, (_, _, word) in enumerate(tokens)
        if len(word) >= 3 and word not in STOPWORDS and word not in written
    ]
    if not unknown:
        return question
    stems_written = {stem(w) for w in written}
    in_names = {w for name in names_in(question) for w in words(name)}
    corrected = question
    for i in reversed(unknown):  # from the end, so earlier positions still hold
        start, end, word = tokens[i]
        if stem(word) in stems_written or (word not in in_names and len(word) < LONG_WORD):
            continue
        before = tokens[i - 1][2] if i > 0 else None
        after = tokens[i + 1][2] if i + 1 < len(tokens) else None
        found = {
            candidate
            for sequence in sequences
            for at, candidate in enumerate(sequence)
            if candidate[:1] == word[:1]
            and len(candidate) >= 4
            and _one_edit(word, candidate)
            and (
                (before is not None and at > 0 and sequence[at - 1] == before)
                or (after is not None and at + 1 < len(sequence) and sequence[at + 1] == after)
            )
        }
        if len(found) == 1:
            corrected = corrected[:start] + _cased(found.pop(), question[start:end]) + corrected[end:]
    return corrected


def _one_edit(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter added, dropped or changed, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        differ = [i for i in range(len(a)) if a[i] != b[i]]
        return len(differ) == 1 or (
            len(differ) == 2
            and differ[1] == differ[0] + 1
            and a[differ[0]] == b[differ[1]]
            and a[differ[1]] == b[differ[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    at = next((i for i in range(len(short)) if short[i] != long[i]), len(short))
    return short[at:] == long[at + 1 :]


def _cased(word: str, like: str) -> str:
    """``word`` with the capitals of the word it replaces."""
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word
