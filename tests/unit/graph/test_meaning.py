"""Key terms read by meaning: a word of the question that no passage writes stands for the passage
words that mean it, when the search's embedder finds them close enough."""

from collections.abc import Sequence
from typing import cast

import numpy as np

from graph.answer.meaning import SAME_MEANING, term_aliases
from graph.answer.relevance import focus_of, term_coverage
from retrieval.backends import DelegatingBackend, SearchBackend
from retrieval.embeddings import Vectors
from retrieval.passages import Passage

LEAVE = Passage(
    id="p1",
    collection="people",
    doc_id="d1",
    source="time-off.md",
    title="Paid time off",
    text="Everyone gets 27 days of paid time off per year, plus public holidays.",
)


class WordVectors(DelegatingBackend):
    """A search whose embedder knows a few words: ``near`` pairs get ``cosine`` between them,
    every other pair is orthogonal."""

    def __init__(self, near: dict[str, str], cosine: float) -> None:
        super().__init__(cast(SearchBackend, None))
        self.near, self.cosine, self.asked = near, cosine, list[str]()

    async def meanings(self, texts: Sequence[str]) -> Vectors | None:
        self.asked.extend(texts)
        basis = {text: i for i, text in enumerate(dict.fromkeys(texts))}
        out = np.zeros((len(texts), len(basis)), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, basis[text]] = 1.0
        for word, other in self.near.items():
            if word in basis and other in basis:
                for row, text in enumerate(texts):
                    if text == word:
                        out[row] = 0.0
                        out[row, basis[word]] = np.sqrt(1 - self.cosine**2)
                        out[row, basis[other]] = self.cosine
        return out


async def test_a_word_no_passage_writes_stands_for_the_words_that_mean_it() -> None:
    question = "how many vacation days do we get"
    close = WordVectors({"vacation": "holidays"}, cosine=SAME_MEANING + 0.05)
    aliases = await term_aliases(question, [LEAVE], close)
    assert list(aliases.values()) == [frozenset({"holiday"})]
    # Only the question's word that no passage writes is compared, with the passage's words.
    assert close.asked[0] == "vacation" and close.asked.count("days") == 1
    focus = focus_of(question, [LEAVE], aliases=aliases)
    plain = focus_of(question, [LEAVE])
    sentence = LEAVE.text
    assert term_coverage(focus, sentence, LEAVE.title) > term_coverage(plain, sentence, LEAVE.title)


async def test_nothing_stands_for_a_word_when_the_closest_is_not_close_enough() -> None:
    far = WordVectors({"berlin": "holidays"}, cosine=SAME_MEANING - 0.15)
    assert await term_aliases("is there a berlin office", [LEAVE], far) == {}


async def test_without_an_embedder_the_words_decide_alone() -> None:
    class WordsOnly(WordVectors):
        async def meanings(self, texts: Sequence[str]) -> Vectors | None:
            return None

    assert await term_aliases("how many vacation days", [LEAVE], WordsOnly({}, 0.0)) == {}
