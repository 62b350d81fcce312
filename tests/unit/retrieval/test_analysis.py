"""A passage's analysis stored at index time must read back as exactly what the text caches would
compute, and be ignored when it cannot be trusted."""

import json
import random
from pathlib import Path

import pytest

from retrieval import analysis, language, text
from retrieval.language import stem_tuple_in
from retrieval.text import STOPWORDS, sentence_analysis, split_sentences, stems

TEXTS = [
    "Use e.g. the bot. Dr. Smith approves it! Then deploy.\n- first item\n- second item",
    "Steps:\n1. Open a ticket.\n2) Page the on-call engineer.\n\n10. Write the review. Done",
    "He said ‘don’t’ and ‘it's fine.’ Then (3.5 hours later) it wasn't.\n\n\n• 42 tests passed",
    "Die Elternzeit dauert 20 Wochen. Anträge gehen an die Personalabteilung.",
    "",
    "1.",
]


def _texts() -> list[tuple[str, str]]:
    samples = sorted(Path(__file__).parents[3].glob("samples/*/*.md"))
    found = [(f"Title {i}: {t[:20]}", t) for i, t in enumerate(TEXTS)]
    found += [(path.stem.replace("-", " ").title(), path.read_text()) for path in samples]
    rng = random.Random(5)
    words = "leave weeks approved policies running Ünïcödé O'Brien e.g. 2024 the - 1. ; (x) ‘q’".split()
    for _ in range(200):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        cuts = [". ", "! ", "\n\n", "\n- ", " ", "? "]
        found.append((" ".join(rng.sample(words, 3)), "".join(w + rng.choice(cuts) for w in body.split())))
    return found


def _computed(title: str, body: str) -> tuple[object, ...]:
    sentences, everything = sentence_analysis(body)
    return (
        [(s, frozenset(own), n) for s, own, n in sentences],
        frozenset(everything),
        frozenset(stems(body)),
        frozenset(stems(title)),
        frozenset(stem_tuple_in(title)),
        frozenset(stem_tuple_in(body)),
        [frozenset(stem_tuple_in(s)) for s, _, _ in sentences],
        tuple(split_sentences(body)),
    )


def test_a_stored_analysis_reads_back_as_what_the_caches_compute() -> None:
    pairs = _texts()
    assert len(pairs) > 200
    stored = [analysis.analyse(title, body) for title, body in pairs]
    expected = [_computed(title, body) for title, body in pairs]
    text.forget_texts()
    language.forget_texts()
    for (title, body), kept in zip(pairs, stored, strict=True):
        assert analysis.remember(title, body, kept)
    # Every value below now comes from the stored analyses (the caches were emptied).
    for (title, body), wanted in zip(pairs, expected, strict=True):
        assert _computed(title, body) == wanted


def _ordered(title: str, body: str) -> tuple[object, ...]:
    sentences, everything = sentence_analysis(body)
    return (sentences, everything, stem_tuple_in(title), stem_tuple_in(body))


def test_stems_come_in_one_order_whether_computed_or_read_from_a_stored_analysis() -> None:
    # Sums of weights over a text's stems must not depend on whether its analysis was computed in
    # this process or read from the index: near-tied sentences would rank by what was read before.
    pairs = _texts()
    stored = [analysis.analyse(title, body) for title, body in pairs]
    text.forget_texts()
    language.forget_texts()
    computed = [_ordered(title, body) for title, body in pairs]
    text.forget_texts()
    language.forget_texts()
    for (title, body), kept in zip(pairs, stored, strict=True):
        assert analysis.remember(title, body, kept)
    for (title, body), wanted in zip(pairs, computed, strict=True):
        assert _ordered(title, body) == wanted


def test_reading_a_stored_analysis_computes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    title, body = "Parental Leave", "Parental leave lasts 20 weeks. Managers approve it.\n1. Apply early."
    stored = analysis.analyse(title, body)
    expected = _computed(title, body)
    text.forget_texts()
    language.forget_texts()
    assert analysis.remember(title, body, stored)

    def computed(*args: object) -> None:
        raise AssertionError("analysed again")

    monkeypatch.setattr(text, "_split", computed)
    monkeypatch.setattr(text, "term_stems", computed)
    monkeypatch.setattr(language, "content_stems", computed)
    assert _computed(title, body) == expected


@pytest.mark.parametrize(
    "stored",
    [None, "", "not json", "[1, 2]", '["000000000000", "", "", "", "", []]', '{"a": 1}', "[null]"],
)
def test_a_missing_foreign_or_broken_analysis_is_not_used(stored: str | None) -> None:
    title, body = "Leave", "Parental leave lasts 20 weeks."
    text.forget_texts()
    language.forget_texts()
    assert not analysis.remember(title, body, stored)
    assert stems(body) == {"parental", "leave", "last", "20", "week"}


def test_an_analysis_made_by_other_rules_is_not_used() -> None:
    title, body = "Leave", "Parental leave lasts 20 weeks."
    version, *rest = json.loads(analysis.analyse(title, body))
    assert version == analysis.fingerprint()
    # The same form with a wrong stem, under another version: not read (it would poison the cache).
    rest[4][0][2] = "wrong"
    text.forget_texts()
    assert not analysis.remember(title, body, json.dumps(["0" * len(version), *rest]))
    assert "wrong" not in stems(body)


def test_an_offered_analysis_is_read_only_when_the_caches_miss_the_text() -> None:
    title, body = "Leave", "Parental leave lasts 20 weeks. Managers approve it."
    version, *rest = json.loads(analysis.analyse(title, body))
    rest[4][0][2] = "marked"  # a stem nobody computes: it shows whether the stored form was read
    marked = json.dumps([version, *rest])
    text.forget_texts()
    language.forget_texts()
    assert stems("Parental leave lasts 20 weeks.") == {"parental", "leave", "last", "20", "week"}
    sentence_analysis(body)  # the caches hold the text now
    analysis.offer(title, body, marked)
    assert all("marked" not in own for _, own, _ in sentence_analysis(body)[0])
    text.forget_texts()
    language.forget_texts()
    analysis.offer(title, body, marked)
    assert "marked" in sentence_analysis(body)[0][0][1]


def test_another_stemmer_release_makes_another_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    current = analysis.fingerprint()
    analysis.fingerprint.cache_clear()
    monkeypatch.setattr(analysis, "version", lambda name: "99.0" if name == "PyStemmer" else "3.1.1")
    try:
        assert analysis.fingerprint() != current
    finally:
        analysis.fingerprint.cache_clear()


def test_another_stopword_list_makes_another_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stopword the sample text lacks still changes which stems a stored analysis holds.
    current = analysis.fingerprint()
    analysis.fingerprint.cache_clear()
    monkeypatch.setattr(analysis, "STOPWORDS", STOPWORDS - {"among"})
    try:
        assert analysis.fingerprint() != current
    finally:
        analysis.fingerprint.cache_clear()
