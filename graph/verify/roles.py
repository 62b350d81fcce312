"""Swapped roles: a sentence that keeps a passage sentence's words but moves its names around.

"Smith succeeded Jones" and "Jones succeeded Smith" share every word, so overlap, names and the
other guards cannot tell them apart. Here each name (a run of capitalised words) becomes a slot
and the rest of the wording is the sentence's *skeleton*. The sentence is aligned with each of
its anchors: first with the names written out, so that a name stays with its own wherever both
state it, then, in the stretches left between, with every name as a slot. A slot is *framed*
when the words on both sides of it are aligned with the words on both sides of its anchor slot
(the sentence may start or end there: it may quote part of a sentence) and the aligned run
around it holds a word of substance. The roles are *swapped* when a framed slot holds another of
the anchor's names than the anchor has there, while the anchor's name stands elsewhere in the
sentence.

Before aligning, "X was founded by Y" is read as "Y founded X" in both sentences (a regular
verb, whose past tense is its participle): a change of voice is then no change, and a swap made
while changing the voice ("Zenith was acquired by Acme" → "Zenith acquired Acme") shows like any
other.

What is not a swap:

- a reordered list: names joined by "and", "or", "&", "nor", "with", "versus", "married", "met"
  (and commas beside one of them) may come in any order ("Tom and Anna" ↔ "Anna and Tom");
- a paraphrase that changes the wording around the names (an apposition dropped or moved, a
  clause left out): the slots are no longer framed by the same words;
- a name said shorter or longer ("Smith" for "John Smith"), unless the two are exchanged both ways;
- a name the anchor also states between the same words ("… met Jones; Jones met Brown …");
- one anchor swapped while another states the sentence's arrangement as it is ("Arsenal beat
  Chelsea in the cup. Chelsea beat Arsenal in the league.").

``roles_ok`` is what ``graph.verify.guards.check`` calls. It looks only at sentences with two names or
more, and aligns (one or a few ``difflib`` runs over short token lists per anchor) only when
their names are not simply in the anchor's order, which an exchange of two names would break.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Literal

from retrieval.names import is_name_word
from retrieval.text import STOPWORDS, fold

_TOKEN = re.compile(r"[^\W_]+|['’]s\b|[^\w\s]")
_SLOT = "\0"
_FRAME = 2
_SMALL_RUN = 4
_END = frozenset(".!?;:")
_BE = frozenset("is are was were been be".split())
_HAVE = frozenset("has have had".split())
_PARTICIPLE = re.compile(r"[a-z]{2,}ed")
_JOINERS = frozenset("and or & nor with versus vs married met".split())
Placement = Literal["swapped", "placed", "neutral"]


@dataclass(frozen=True)
class Skeleton:
    """``words``: the sentence's tokens, lower-cased, each name (a run of capitalised words, with
    initials and hyphens) replaced by one slot; ``names``: the name at each slot (``None``
    elsewhere), as its lower-cased words."""

    words: tuple[str, ...]
    names: tuple[tuple[str, ...] | None, ...]

    @property
    def slots(self) -> list[int]:
        return [i for i, n in enumerate(self.names) if n is not None]

    @property
    def stated(self) -> frozenset[tuple[str, ...]]:
        return frozenset(n for n in self.names if n is not None)

    @property
    def name_words(self) -> frozenset[str]:
        return frozenset(w for n in self.names if n is not None for w in n)


def _opens_name(tokens: Sequence[str], k: int) -> bool:
    """A capitalised small word inside a sentence that opens a name ("The Sail", "Am Rothenbaum")."""
    return 0 < k < len(tokens) - 1 and tokens[k][:1].isupper() and is_name_word(tokens[k + 1])


def _joins_name(tokens: Sequence[str], k: int) -> bool:
    """``tokens[k]`` continues a name: an initial's full stop ("James M. Cullen") or a hyphen
    between two capitalised words ("Medi-Gel")."""
    if k == 0 or k + 1 >= len(tokens) or not is_name_word(tokens[k + 1]):
        return False
    before = tokens[k - 1]
    if tokens[k] == ".":
        return len(before) == 1 and before.isupper()
    return tokens[k] == "-" and is_name_word(before)


def _name(run: Sequence[str]) -> tuple[str, ...]:
    """A name's words without the small words that open it ("The Army" is "Army")."""
    words = list(run)
    while len(words) > 1 and words[0] in STOPWORDS:
        words.pop(0)
    return tuple(words)


@lru_cache(maxsize=4096)
def skeleton(sentence: str) -> Skeleton:
    tokens = _TOKEN.findall(sentence)
    while tokens and tokens[-1] in _END:
        tokens.pop()
    words: list[str] = []
    names: list[tuple[str, ...] | None] = []
    run: list[str] = []

    def close() -> None:
        if run:
            words.append(_SLOT)
            names.append(_name(run))
            run.clear()

    for k, token in enumerate(tokens):
        if is_name_word(token) or _opens_name(tokens, k):
            run.append(fold(token))
            if k == 0:  # a sentence's first word is capitalised anyway: its own slot, if a name
                close()
            continue
        if run and _joins_name(tokens, k):
            continue
        close()
        words.append(token.lower().replace("’", "'"))
        names.append(None)
    close()
    return _active(Skeleton(tuple(words), tuple(names)))


def _active(sk: Skeleton) -> Skeleton:
    """The skeleton with "X was founded by Y" read as "Y founded X" (a regular verb, whose past
    tense is its participle), so that a change of voice is aligned with the anchor like any
    other wording and a swap made while changing the voice still shows."""
    words, names = list(sk.words), list(sk.names)
    k = 0
    while k < len(words):
        end = k + 1
        if end < len(words) and words[end] in _HAVE:
            end += 1
        subject = names[k]
        if (
            subject is not None
            and end + 3 < len(words)
            and words[end] in _BE
            and _PARTICIPLE.fullmatch(words[end + 1])
            and words[end + 2] == "by"
            and names[end + 3] is not None
            and not _listed(words, names, k, end + 3)
        ):
            start = k
            if k == 1 and names[0] is not None:  # a name opening the sentence: its first word too
                start, subject = 0, names[0] + subject
            words[start : end + 4] = [_SLOT, words[end + 1], _SLOT]
            names[start : end + 4] = [names[end + 3], None, subject]
            k = start
        k += 1
    return Skeleton(tuple(words), tuple(names))


def _listed(words: Sequence[str], names: Sequence[object], first: int, last: int) -> bool:
    """The name at ``first`` ends a list, or the one at ``last`` opens one ("Smith and Jones")."""
    before = first >= 2 and words[first - 1] in _JOINERS
    after = last + 2 < len(words) and (words[last + 1] in _JOINERS or words[last + 1] == ",")
    return (before and names[first - 2] is not None) or (after and names[last + 2] is not None)


def _moved(name: tuple[str, ...], other: tuple[str, ...], cand: Skeleton, source: Skeleton) -> bool:
    """``name`` (the candidate's) stands where the anchor has ``other``, and each belongs
    elsewhere: the anchor states ``name`` (or a longer form of it) at another slot and the
    candidate states ``other`` (or a shorter form), or the words of each come from the other side
    (names cut and joined anew)."""
    if name in source.stated and other in cand.stated:
        return True
    if any(_part(name, n) for n in source.stated - {other}) and any(
        _part(n, other) for n in cand.stated - {name}
    ):
        return True  # the same, with names said shorter ("Jones" for "Mary Jones")
    own, theirs = set(name), set(other)
    if own <= theirs or theirs <= own:
        return False
    return own <= source.name_words and theirs <= cand.name_words


def _part(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    """``short`` is a run of ``long``'s words ("Hall" of "Daryl Hall")."""
    n = len(short)
    return any(long[k : k + n] == short for k in range(len(long) - n + 1))


def _group(sk: Skeleton, i: int) -> frozenset[tuple[str, ...]]:
    """The names listed together with slot ``i``: slots joined only by list words and commas,
    one list word at least ("Tom, Anna and Bo"), or nothing when the slot is in no list."""
    slots = sk.slots
    at = slots.index(i)
    lo = hi = at

    def joined(k: int) -> bool:  # slots[k] and slots[k + 1] are joined by list words only
        between = sk.words[slots[k] + 1 : slots[k + 1]]
        return bool(between) and all(w == "," or w in _JOINERS for w in between)

    while lo > 0 and joined(lo - 1):
        lo -= 1
    while hi + 1 < len(slots) and joined(hi):
        hi += 1
    span = sk.words[slots[lo] : slots[hi] + 1]
    if lo == hi or not any(w in _JOINERS for w in span):
        return frozenset()
    return frozenset(n for n in sk.names[slots[lo] : slots[hi] + 1] if n is not None)


def _frame(sk: Skeleton, i: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The two words either side of position ``i`` (fewer at the sentence's edges)."""
    return sk.words[max(i - _FRAME, 0) : i], sk.words[i + 1 : i + 1 + _FRAME]


def _stated_in_frame(name: tuple[str, ...], cand: Skeleton, i: int, source: Skeleton) -> bool:
    """``source`` puts ``name`` between the same words as the candidate's slot ``i`` does (where
    the candidate starts or ends, the words it has)."""
    left, right = _frame(cand, i)
    for j in source.slots:
        if source.names[j] != name:
            continue
        other_left, other_right = _frame(source, j)
        if other_left[len(other_left) - len(left) :] == left and other_right[: len(right)] == right:
            return True
    return False


def _align(cand: Skeleton, source: Skeleton) -> dict[int, int]:
    """Candidate position → anchor position. The sentences are aligned with their names first,
    so that a name stays with its own where both state it (in a run of wording that has a word
    of substance); what lies between is then aligned with every name as a slot, where a swap
    shows as a slot holding another name."""
    aligned: dict[int, int] = {}
    named = SequenceMatcher(None, _named(cand), _named(source), autojunk=False)
    a0 = b0 = 0
    for a, b, size in named.get_matching_blocks():
        if size and not _substantial(cand.words[a : a + size]):
            continue
        if a > a0 and b > b0:
            gap = SequenceMatcher(None, cand.words[a0:a], source.words[b0:b], autojunk=False)
            for ga, gb, gsize in gap.get_matching_blocks():
                aligned.update((a0 + ga + k, b0 + gb + k) for k in range(gsize))
        aligned.update((a + k, b + k) for k in range(size))
        a0, b0 = a + size, b + size
    return aligned


def _substantial(words: Sequence[str]) -> bool:
    """Some word that is not a name, a small word or punctuation, or four small words."""
    small = 0
    for w in words:
        if w != _SLOT and w.isalnum():
            if w not in STOPWORDS:
                return True
            small += 1
    return small >= _SMALL_RUN


def _named(sk: Skeleton) -> list[str]:
    return [w if n is None else _SLOT + " ".join(n) for w, n in zip(sk.words, sk.names, strict=True)]


def placement(sentence: str, anchor: str) -> Placement:
    """How the sentence's names sit in the anchor's wording: ``swapped`` (a name of the anchor
    moved into another's framed place), ``placed`` (at least two framed names, all where the
    anchor has them) or ``neutral`` (too few names, or too little wording in common to say)."""
    cand, source = skeleton(sentence), skeleton(anchor)
    if len(cand.stated) < 2 or len(source.stated) < 2:
        return "neutral"
    aligned = _align(cand, source)
    framed: dict[int, int] = {}  # candidate slot → anchor slot, in a run of aligned wording
    last = len(cand.words) - 1
    for i in cand.slots:
        j = aligned.get(i)
        if j is None:
            continue
        if (i > 0 and aligned.get(i - 1) != j - 1) or (i < last and aligned.get(i + 1) != j + 1):
            continue
        lo, hi = i, i
        while lo > 0 and aligned.get(lo - 1) == aligned[lo] - 1:
            lo -= 1
        while hi < last and aligned.get(hi + 1) == aligned[hi] + 1:
            hi += 1
        if _substantial(cand.words[lo : hi + 1]):  # not only small words and punctuation
            framed[i] = j
    same = 0
    moved: list[tuple[int, int]] = []
    for i, j in framed.items():
        name, other = cand.names[i], source.names[j]
        assert name is not None and other is not None  # slots align only with slots
        if name == other or _part(name, other) or _part(other, name):
            same += 1
        if name != other and _moved(name, other, cand, source):
            moved.append((i, j))
    pairs = {(cand.names[i], source.names[j]) for i, j in moved}
    for i, j in moved:
        name, other = cand.names[i], source.names[j]
        assert name is not None and other is not None
        if (_part(name, other) or _part(other, name)) and (other, name) not in pairs:
            continue  # "Smith" where the anchor says "John Smith": the same name, shorter
        if _group(cand, i) and _group(cand, i) == _group(source, j):
            continue  # a list in another order
        if _stated_in_frame(name, cand, i, source):
            continue
        return "swapped"
    return "placed" if same >= 2 else "neutral"


def _in_order(cand: Skeleton, source: Skeleton) -> bool:
    """The anchor states each of its names once, and the sentence's names in the same order: two
    names exchanged would reverse it, so there is no swap to look for (the cheap common case)."""
    names = [n for n in source.names if n is not None]
    if len(set(names)) < len(names):
        return False
    rest = iter(names)
    return all(any(n == other for other in rest) for n in cand.names if n is not None)


def roles_ok(sentence: str, anchors: Sequence[str]) -> bool:
    """No anchor's names swapped, unless another anchor states the sentence's arrangement."""
    cand = skeleton(sentence)
    if len(cand.stated) < 2:
        return True
    if not any(placement(sentence, a) == "swapped" for a in anchors if not _in_order(cand, skeleton(a))):
        return True
    return any(placement(sentence, a) == "placed" for a in anchors)
