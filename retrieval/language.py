"""Which language a text is in, and stemming in that language (Snowball stemmers).

Detection counts the most frequent function words of each supported language: short questions
carry several of them ("Wie lange dauert die Elternzeit?"), and the count is deterministic and
costs microseconds. Text with no clear majority is taken as English.
"""

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import snowballstemmer

from retrieval.text import (
    STEM_TABLE_SIZE,
    STOPWORDS,
    TEXT_CACHE_SIZE,
    fold,
    is_term,
    read_deferred,
    tokens,
    words,
)

DEFAULT_LANGUAGE = "en"

# ISO 639-1 code -> Snowball algorithm.
SNOWBALL = {
    "da": "danish",
    "de": "german",
    "en": "english",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "it": "italian",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "sv": "swedish",
}

# The most frequent function words of each language (articles, pronouns, prepositions,
# auxiliaries, question words): enough to tell the languages apart in one short question.
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "the a an of to in is are was were for on with and or how what which who when where why "
        "do does did can my our i you it at by from be have has this that".split()
    ),
    "de": frozenset(
        "der die das den dem des ein eine einen einem einer und oder ist sind war wie was wer wann "
        "wo warum welche welcher welches ich mein meine wir unser für mit von zu im in auf bei "
        "nicht kann muss darf gibt es hat haben wird werden viel viele wieviel wie viele bekomme "
        "bekommt bekommen erhalte erhält habe".split()
    ),
    "fr": frozenset(
        "le la les un une des du de et ou est sont était comment quel quelle quels quelles qui "
        "quand où pourquoi combien je mon ma mes nous notre pour avec dans sur par au aux ne pas "
        "peut dois ai avons il elle ce cette reçois obtiens".split()
    ),
    "es": frozenset(
        "el la los las un una unos unas del de y o es son era cómo como qué que quién cuándo "
        "dónde por qué cuánto cuántos cuántas yo mi mis nosotros nuestro para con en sobre al no "
        "puedo puede tengo hay".split()
    ),
    "nl": frozenset(
        "de het een en of is zijn was hoe wat wie wanneer waar waarom welke ik mijn wij onze "
        "voor met van te in op bij niet kan moet mag er heeft hebben wordt".split()
    ),
    "it": frozenset(
        "il lo la i gli le un una uno del della di e o è sono era come cosa chi quando dove "
        "perché quanto quanti quante io mio mia noi nostro per con in su al non posso può ho".split()
    ),
    "pt": frozenset(
        "o a os as um uma uns umas do da dos das de e ou é são era como que quem quando onde "
        "por quanto quantos quantas eu meu minha nós nosso para com em no na não posso pode "
        "tenho há".split()
    ),
    "sv": frozenset(
        "en ett den det de och eller är var hur vad vem när var varför vilken vilket vilka jag "
        "min mitt vi vår för med av till i på vid inte kan måste får har".split()
    ),
}
# Read as ``words`` reads text: diacritics folded ("für" is "fur").
FUNCTION_WORDS = {lang: frozenset(map(fold, vocabulary)) for lang, vocabulary in FUNCTION_WORDS.items()}


# Languages that capitalise every noun: a line with every longer word capitalised is no heading
# there ("Urlaubsanspruch pro Jahr 30 Arbeitstage").
NOUNS_CAPITALISED = frozenset({"de"})


def detect_language(text: str) -> str:
    """ISO 639-1 code of the language whose function words the text uses most; English on a tie
    or when it uses none. (Cached: one question's text is read by several steps.)"""
    return _detect_language(text)


# What tells English apart beside its function words (which also decide a question's key terms,
# so these are kept apart): its contractions, read before ``tokens`` drops their apostrophes ("I'm"
# would read as German "im"), and frequent words that are function words of no other language here.
_ENGLISH_CONTRACTION = re.compile(
    r"\b(?:i['’](?:m|ve|d|ll)|(?:you|we|they)['’](?:re|ve|ll|d)|(?:it|that|what|there|who|where|how|let)['’]s"
    r"|[a-z]+n['’]t)\b",
    re.IGNORECASE,
)
_ENGLISH_ALSO = frozenset(
    "more most such not if but there their they them your about than would should could any some "
    "been into".split()
)
# A word of the text with the sentence end marks between words.
_WORD_OR_END = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[.!?]")


def _unnamed(text: str) -> str:
    """``text`` without the capitalised words inside its sentences: they are names ("Red Hat
    OpenShift", "Die Hard"), and a name's word is no function word of its language. The first
    word of a sentence and "I" stay."""
    kept: list[str] = []
    opening = True
    for match in _WORD_OR_END.finditer(text):
        word = match.group()
        if word in ".!?":
            opening = True
            continue
        if opening or not word[:1].isupper() or word == "I" or word.startswith(("I'", "I’")):
            kept.append(word)
        opening = False
    return " ".join(kept)


@lru_cache(maxsize=256)
def _detect_language(text: str) -> str:
    found = tokens(_unnamed(text))
    if not found:
        return DEFAULT_LANGUAGE
    # Each word counted once, then the counts of each language's function words summed, reading
    # whichever of the two is shorter (the same counts as a pass over the text per language).
    frequency = Counter(found)
    counts = {lang: _uses(frequency, vocabulary) for lang, vocabulary in FUNCTION_WORDS.items()}
    counts[DEFAULT_LANGUAGE] += _uses(frequency, _ENGLISH_ALSO) + len(_ENGLISH_CONTRACTION.findall(text))
    best = max(counts, key=lambda lang: (counts[lang], lang == DEFAULT_LANGUAGE))
    if counts[best] == 0 or counts[best] <= counts[DEFAULT_LANGUAGE]:
        return DEFAULT_LANGUAGE
    return best


def _uses(frequency: Counter[str], vocabulary: frozenset[str]) -> int:
    if len(frequency) < len(vocabulary):
        return sum(n for word, n in frequency.items() if word in vocabulary)
    return sum(frequency[word] for word in vocabulary if word in frequency)


def language_name(code: str) -> str:
    """The English name of a language Confer stems ("de" -> "German")."""
    return SNOWBALL.get(code, code).capitalize()


@lru_cache(maxsize=16)
def _stemmer(language: str) -> Any:
    return snowballstemmer.stemmer(SNOWBALL.get(language, "english"))


@lru_cache(maxsize=65536)
def stem_in(word: str, language: str = DEFAULT_LANGUAGE) -> str:
    """The Snowball stem of a lower-case word in the given language."""
    if word.isdigit():
        return word
    stemmed: str = _stemmer(language).stemWord(word)
    return stemmed


def content_words(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """Lower-case words without the function words of the language (and of English)."""
    function_words = FUNCTION_WORDS.get(language, frozenset())
    return [
        w
        for w in words(text)
        if w not in STOPWORDS and w not in function_words and (len(w) > 1 or w.isdigit())
    ]


def stems_in(text: str, language: str = DEFAULT_LANGUAGE) -> set[str]:
    """The Snowball stems of the text's content words (cached per text, as ``retrieval.text``
    caches: a tuple kept, a fresh set returned)."""
    return set(_stems_in(text, language))


# Per language, each word's Snowball stem, or "" for a word that is no content word in it (as
# ``retrieval.text`` keeps its light stems): a text's stems are one pass through the table, and the
# words it has not met yet are stemmed in one batch call. Bounded by emptying a table when full.
_STEM_TABLES: dict[str, dict[str, str]] = {}


def content_stems(text_words: Sequence[str], language: str = DEFAULT_LANGUAGE) -> set[str]:
    """The Snowball stems of the content words among ``text_words`` (lower-case words, as
    ``retrieval.text.words`` gives them): ``stems_in`` for text already split into words."""
    table = _STEM_TABLES.setdefault(language, {})
    try:
        found = set(map(table.__getitem__, text_words))
    except KeyError:
        if len(table) > STEM_TABLE_SIZE:
            table.clear()
        function_words = FUNCTION_WORDS.get(language, frozenset())
        missing = set(text_words).difference(table)
        content = [w for w in missing if is_term(w) and w not in function_words]
        table.update(dict.fromkeys(missing, ""))
        stemmed = _stemmer(language).stemWords(content)
        table.update((w, w if w.isdigit() else s) for w, s in zip(content, stemmed, strict=True))
        found = set(map(table.__getitem__, text_words))
    found.discard("")
    return found


def stem_tuple_in(text: str, language: str = DEFAULT_LANGUAGE) -> tuple[str, ...]:
    """``stems_in(text, language)`` as the cached tuple itself (for reading, without a copy)."""
    return _stems_in(text, language)


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _stems_in(text: str, language: str) -> tuple[str, ...]:
    read_deferred(text)
    primed = _PRIMED.get((text, language))
    if primed is not None:
        return tuple(primed.split()) if isinstance(primed, str) else primed
    return tuple(sorted(content_stems(tokens(text), language)))


# Snowball stems stored with passages at index time, as ``retrieval.text`` keeps its primed analyses.
_PRIMED: dict[tuple[str, str], tuple[str, ...] | str] = {}
PRIMED_SIZE = 8 * TEXT_CACHE_SIZE  # a title, a text and several sentences a passage


def prime_stems_in(
    language: str,
    found: Iterable[tuple[str, tuple[str, ...]]],
    unsplit: Iterable[tuple[str, str]] = (),
) -> None:
    """Hand over ``stems_in(text, language)`` of several texts, computed elsewhere
    (``retrieval.analysis``): as tuples, or as the stems joined by spaces (split when read)."""
    if len(_PRIMED) > PRIMED_SIZE:
        _PRIMED.clear()
    primed = _PRIMED
    for text, stems in found:
        primed[text, language] = stems
    for text, joined in unsplit:
        primed[text, language] = joined


MIN_PREFIX = 4


def foreign_stems(query: str) -> list[str]:
    """For a question that is not in English: the stems of its content words in its own language
    (at least ``MIN_PREFIX`` letters, diacritics folded as the index folds them), to search as
    prefixes beside the words."""
    language = detect_language(query)
    if language == DEFAULT_LANGUAGE:
        return []
    found = [stem_in(w, language) for w in content_words(query, language)]
    return list(dict.fromkeys(s for s in found if len(s) >= MIN_PREFIX and not s.isdigit()))


def forget_texts() -> None:
    """Empty the per-text caches (Snowball stems, detected languages; the per-word stems stay);
    see ``retrieval.text.forget_texts``."""
    _stems_in.cache_clear()
    _detect_language.cache_clear()
    _PRIMED.clear()
