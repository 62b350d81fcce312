"""Lexical helpers shared by the backends and the research graph: words, terms, sentences.

Every rule reads words through ``words``/``tokens``, so the text handling below holds everywhere:

- Unicode is folded: compatibility forms decomposed and combining marks dropped ("Tekezé" reads as
  "tekeze", "ﬁ" as "fi"), as the search index's tokenizer does (FTS5 ``remove_diacritics 2``);
- a possessive is its owner ("Confederation's" and "Confederation’s" read as "confederation", "weeks'"
  as "weeks"), and other apostrophes inside a word are dropped ("O'Brien" reads as "obrien");
- hyphens and dashes separate words ("Medi-Gel" reads as "medi", "gel"), in the text as in the
  question, so a hyphenated name matches itself.

Before any of that, text that was decoded with the wrong encoding somewhere on its way (mojibake)
is repaired where it enters: documents as they are loaded, questions as they are asked
(``repair_encoding``). "clerkâ\x80\x99s" (UTF-8 read as Latin-1) and "NASA‚Äôs" (read as Mac
Roman) are otherwise words no one asks for, and names no passage writes.
"""

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import ftfy

_WORD_RE = re.compile(r"[^\W_]+(?:['’ʼ][^\W_]+)?", re.UNICODE)
APOSTROPHES = "'’ʼ"
_NO_APOSTROPHE = {ord(a): None for a in APOSTROPHES}
_POSSESSIVE_RE = re.compile(r"['’ʼ]s$")

# English stopwords, with the contractions as ``words`` reads them ("don't" is "dont", "I'm"
# "im") and as chat types them ("whats", "thats"): no key term, though "don't" is written.
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each either few for
    from further had has have having he her here hers herself him himself his how i if in into is
    it its itself just me might more most must my myself no nor not now of off on once only or
    other ought our ours ourselves out over own same shall she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up
    upon us very was we were what when where which while who whom whose why will with within
    without would you your yours yourself yourselves tell know please give show find explain
    describe say says said get got let lets like among amongst across along around beside besides
    beyond despite toward towards via per onto whether unless though although however yet since till
    dont doesnt didnt cant couldnt wont wouldnt shouldnt isnt arent wasnt werent havent hasnt hadnt
    mustnt neednt im ive youre youve youll youd hes shes theyre theyve theyll weve whats hows whens
    wheres whos whys thats theres heres
    """.split()
)

_SUFFIXES = ("ies", "ing", "ed", "es", "s")

# One question reads the same passage texts, titles and sentences in several places (drafting,
# focus weights, relevance, coverage, de-duplication), and popular passages come back across
# questions: their tokens and stems are computed once and kept in bounded caches keyed by the text.
# The cached values are tuples of strings (immutable, and untracked by the garbage collector once
# it has seen them, so the caches add nothing to a full collection's work); callers get a fresh
# list or set of their own.
TEXT_CACHE_SIZE = 4096


def repair_encoding(text: str) -> str:
    """``text`` with mojibake undone: ftfy's ``fix_encoding``, which re-decodes only a stretch that
    is far likelier to be a wrong decoding than real text (accents, curly quotes, dashes and other
    scripts stay as they are)."""
    return ftfy.fix_encoding(text) if text and not text.isascii() else text


def fold(text: str) -> str:
    """``text`` lower-cased, with compatibility forms decomposed and diacritics removed."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def words(text: str) -> list[str]:
    """Lower-cased word tokens, diacritics folded, possessives read as their owner, other
    apostrophes dropped."""
    return list(_words(text))


def tokens(text: str) -> tuple[str, ...]:
    """``words(text)`` as the cached tuple itself (for reading, without a copy)."""
    return _words(text)


# ASCII text without apostrophes (most sentences) is split without the regular expression: every
# ASCII character that is not a letter or a digit separates words, exactly as ``_WORD_RE`` reads
# such text (its ``[^\W_]`` is a letter or a digit), in a fifth of the time.
_ASCII_GAPS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _words(text: str) -> tuple[str, ...]:
    if text.isascii() and "'" not in text:
        return tuple(text.lower().translate(_ASCII_GAPS).split())
    found = _WORD_RE.findall(fold(text))
    if any(a in text for a in APOSTROPHES):
        return tuple(_unapostrophed(w) for w in found)
    return tuple(found)


def _unapostrophed(word: str) -> str:
    """A possessive's owner ("confederation's"), or the word without its apostrophe ("obrien")."""
    word = _POSSESSIVE_RE.sub("", word)
    for apostrophe in APOSTROPHES:
        word = word.replace(apostrophe, "")
    return word


# Three stemmers, each where it is needed: this light one for answer writing's lexical matching
# (drafting, guards, citations, planning, synthesis, suggestions, verdicts); Snowball in the
# question's language for answer ranking, evaluation and foreign-language search
# (``retrieval.language``); FTS5's Porter inside the SQLite index, recomputed by
# ``retrieval.scoring`` (Snowball's Porter) so scores can be checked. English Snowball in place of
# this one was measured (issue #32) and lost on two of three datasets: samples recall@2 0.637 →
# 0.623, unrelated sections 0.561 → 0.585; hotpotqa500 answer contains 0.778 → 0.776, token recall
# 0.807 → 0.804; orgdocs gained a little (gold cited 0.545 → 0.549) but said "not found" for fewer
# unanswerable questions (0.36 → 0.32). It also joins words of different meaning that this
# stripper keeps apart: "personal" and "person", "container" and "contain", "authorization" and
# "authors", "expensive" and "expense" (from the samples' vocabulary).
@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light, predictable suffix stripper for lexical matching (not for display). Cached: the
    words of a corpus repeat, and every passage of every question goes through here."""
    if len(word) <= 4 or word.isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix == "ies":
                return base + "y"
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]:
                return base[:-1]
            if suffix == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
                return base + "e"
            return base
    return word


def is_term(word: str) -> bool:
    """A content word: no stopword, and more than one letter unless it is a number."""
    return word not in STOPWORDS and (len(word) > 1 or word.isdigit())


def terms(text: str) -> list[str]:
    """Content words in order of appearance, without stopwords, duplicates kept."""
    return [w for w in _words(text) if is_term(w)]


def stems(text: str) -> set[str]:
    """The stems of ``terms(text)`` (cached: this runs for every sentence of every passage)."""
    return set(_stems(text))


# Each word's stem, or "" for a word that is no term: a text's stems are then one C-level pass
# over its words (``map`` through this table) instead of a filter and a call per word. Words repeat
# across texts, so the table fills with the vocabulary once; bounded by emptying it when full.
STEM_TABLE_SIZE = 1 << 17
_STEM_TABLE: dict[str, str] = {}


def term_stems(tokens: Sequence[str]) -> set[str]:
    """The stems of the terms among ``tokens`` (lower-case words, as ``words`` gives them)."""
    table = _STEM_TABLE
    try:
        found = set(map(table.__getitem__, tokens))
    except KeyError:
        if len(table) > STEM_TABLE_SIZE:
            table.clear()
        for word in set(tokens).difference(table):
            table[word] = stem(word) if is_term(word) else ""
        found = set(map(table.__getitem__, tokens))
    found.discard("")
    return found


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _stems(text: str) -> tuple[str, ...]:
    primed = _PRIMED_STEMS.get(text)
    if primed is not None:
        return primed
    read_deferred(text)
    analysed = _PRIMED_SENTENCES.get(text)
    if analysed is not None:
        return analysed[1]
    return tuple(sorted(term_stems(_words(text))))


def unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


# Abbreviations a sentence goes on after ("Kohlberg Kravis Roberts & Co. L.P.", "Martin Luther
# King Jr. was", "Jan. 5", "limits, e.g. 5 requests"): Latin and English ones as people write them,
# with and without their inner dot ("eg.", "ie."), titles, company forms, references and months.
# Where one does end a sentence ("reviews, tests etc. Then"), the two are read as one: quoting more
# breaks nothing, cutting "eg. 30 days" off its number loses the answer.
ABBREVIATIONS = frozenset(
    """
    e.g. eg. i.e. ie. etc. vs. cf. approx. incl. esp. viz. ca. al. a.k.a. mr. mrs. ms. dr. prof.
    st. mt. ft. jr. sr. rev. gen. col. lt. sgt. capt. gov. sen. rep. hon. inc. co. corp. ltd. bros.
    dept. vol. fig. pp. ed. est. jan. feb. mar. apr. jun. jul. aug. sep. sept. oct. nov. dec.
    """.split()
)
# Abbreviations only before a number ("No. 5", "Nos. 3 and 4"): elsewhere the word ends a sentence
# ("No. We do not").
NUMBER_ABBREVIATIONS = frozenset({"no.", "nos."})
# A sentence ends at ".", "!" or "?" before a capital, a digit, or a name from code that opens the
# next one in lower case ("lookups. dns.lookup() uses", "set. os_path is").
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?(?:[A-Z0-9]|[a-z_$][\w$]*[._(]\w))")
# Text whose line breaks were lost (a web page's paragraphs, as scraped) glues one sentence to the
# next: "keep the paper dry.Do I need a tarp". It ends there too, after a stop that follows two
# lower-case letters, when the next word is capitalised, is a word that opens English sentences
# (``_OPENERS``: an article, a pronoun, a question word, an auxiliary, a preposition; written with
# or without its apostrophe) and is followed by a space or a comma: a name from code keeps its dot
# ("Client.Timeout", "errors.Is", "http.Get(url)", "sync.Once").
_GLUED_END = re.compile(r"(?<=[a-z]{2}[.!?])(?=[A-Z][a-z]*(?:['’ʼ][a-z]+)?[ ,])")
_OPENERS = frozenset(
    """a an the this that these those it its they their them we our you your i my he his she her
    there here if when what how why where who which whether do does did dont doesnt didnt can cant
    could would should will wont please in on at for from with by to no not yes but and or so
    also however im ive youre youll theres heres thats whats its""".split()
)

# How a passage carries a block of code (``code_block``): a paragraph of its own, between fence
# lines as Markdown writes them, the code's lines as they are and no blank line inside (a blank line
# separates paragraphs). The sentence splitter skips such a paragraph, so no code line is ever read
# as a sentence; ``code_blocks`` gives the code back.
CODE_FENCE = "```"


def code_block(code: str, language: str = "") -> str:
    """``code`` as a passage carries it: fenced, trailing spaces and blank lines dropped."""
    lines = [line.rstrip() for line in code.splitlines() if line.strip()]
    language = "".join(language.split()[:1])
    return "\n".join([CODE_FENCE + language, *lines, CODE_FENCE]) if lines else ""


def is_code_block(paragraph: str) -> bool:
    """Whether a paragraph of a passage (text between blank lines) is a block of code."""
    paragraph = paragraph.strip()
    return paragraph.startswith(CODE_FENCE) and paragraph.endswith(CODE_FENCE) and "\n" in paragraph


def code_blocks(text: str) -> list[str]:
    """The code of each code block of ``text``, without its fences, in order."""
    return [
        "\n".join(paragraph.strip().split("\n")[1:-1])
        for paragraph in _PARAGRAPHS.split(text)
        if is_code_block(paragraph)
    ]


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; list items and lines without end punctuation stand alone, and
    code blocks (``is_code_block``) are no sentences at all."""
    return list(_sentences(text))


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _sentences(text: str) -> tuple[str, ...]:
    read_deferred(text)
    primed = _PRIMED_SENTENCES.get(text)
    if primed is not None:
        return tuple(sentence for sentence, _, _ in primed[0])
    return tuple(_split(text, []))


def sentence_stems(text: str) -> tuple[list[tuple[str, frozenset[str]]], frozenset[str]]:
    """Each sentence of ``split_sentences(text)`` with its ``stems``, and ``stems(text)`` — from one
    pass over the words: every word of the text is in exactly one sentence, except list markers
    (``1.``) and code blocks, which are added back. Cached, like ``stems``."""
    sentences, everything = _sentence_stems(text)
    return [(sentence, frozenset(own)) for sentence, own, _ in sentences], frozenset(everything)


# A sentence, the stems of its terms and its number of words (split at spaces).
AnalysedSentence = tuple[str, tuple[str, ...], int]


def sentence_analysis(text: str) -> tuple[tuple[AnalysedSentence, ...], tuple[str, ...]]:
    """``sentence_stems(text)`` as the cached tuples themselves (for reading, without copying
    them into sets), each sentence with its number of words."""
    return _sentence_stems(text)


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _sentence_stems(text: str) -> tuple[tuple[AnalysedSentence, ...], tuple[str, ...]]:
    read_deferred(text)
    primed = _PRIMED_SENTENCES.get(text)
    if primed is not None:
        return primed
    markers: list[str] = []
    sentences = tuple(
        (sentence, _stems(sentence), len(sentence.split())) for sentence in _split(text, markers)
    )
    everything = set(_stems(" ".join(markers)))
    for _, own, _ in sentences:
        everything.update(own)
    return sentences, tuple(sorted(everything))


_PARAGRAPHS = re.compile(r"\n\s*\n")
# A list item starts a line: a bullet, or a number of one to three digits ("2019." opening a
# wrapped line is a year, not an item).
_ITEMS = re.compile(r"\n(?=\s*(?:[-*•]|\d{1,3}[.)])\s)")
_MARKER = re.compile(r"^(?:[-*•]|\d{1,3}[.)])\s+")
_INITIAL = re.compile(r"[a-z]\.")  # "J. Smith"
# A small number closing a sentence ("Must be 4, 6, or 0. The value") or an ordinal inside one, as
# German writes dates ("am 31. März"): a sentence goes on unless the next word is an English
# function word ("The", "It", "If").
_NUMBER = re.compile(r"\d{1,2}\.")
# A dotted acronym ("U.S.", "D.C.", "a.m."): mostly inside a name ("the U.S. Army", "U.S. Route
# 66"), so no sentence ends there. Where one does ("born in the U.S. He moved"), the two sentences
# are read as one, which quotes more but breaks no name.
_DOTTED = re.compile(r"(?:[a-z]\.){2,}")


def list_items(paragraph: str) -> list[str]:
    """The items of a paragraph that is a list, each line opening with a bullet or a number (as
    ``split_sentences`` reads them), each item whole and without its marker; none when the
    paragraph is no list."""
    items = []
    for raw in _ITEMS.split(paragraph.strip()):
        block = " ".join(raw.split())
        marker = _MARKER.match(block)
        if not marker or not block[marker.end() :]:
            return []
        items.append(block[marker.end() :])
    return items


def _split(text: str, markers: list[str]) -> list[str]:
    """``split_sentences``, appending the words it leaves out of every sentence (list markers and
    code blocks) to ``markers``."""
    sentences: list[str] = []
    for paragraph in _PARAGRAPHS.split(text):
        if is_code_block(paragraph):
            markers.append(paragraph)
            continue
        for raw in _ITEMS.split(paragraph):
            block = " ".join(raw.split())
            marker = _MARKER.match(block)
            if marker:
                markers.append(marker.group())
                block = block[marker.end() :]
            if block:
                sentences += _block_sentences(block)
    return sentences


def _next_word(block: str, start: int) -> str:
    found = _WORD_RE.search(block, start, start + 40)
    return found.group().lower() if found else ""


def _block_sentences(block: str) -> list[str]:
    sentences: list[str] = []
    start = 0
    glued = (
        m
        for m in _GLUED_END.finditer(block)
        if _next_word(block, m.end()).translate(_NO_APOSTROPHE) in _OPENERS
    )
    for match in sorted([*_SENTENCE_END.finditer(block), *glued], key=lambda m: m.start()):
        candidate = block[start : match.start()].strip()
        last_word = candidate.rsplit(" ", 1)[-1].lower().lstrip("\"'([“‘")  # "(est. 2.3 billion)"
        if (
            last_word in ABBREVIATIONS
            or _INITIAL.fullmatch(last_word)
            or (_NUMBER.fullmatch(last_word) and _next_word(block, match.end()) not in STOPWORDS)
            or _DOTTED.fullmatch(last_word)
            or (last_word in NUMBER_ABBREVIATIONS and block[match.end() : match.end() + 1].isdigit())
        ):
            continue
        if candidate:
            sentences.append(candidate)
        start = match.end()
    tail = block[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


# Analyses stored with passages at index time (``retrieval.analysis``) and handed over by the search
# that read them. A search hands over a way to read the stored form (``defer_analysis``); the first
# cache miss on that text reads it (a text still cached costs nothing more), which primes the tables
# below, and the caches' misses take the primed values instead of computing them again. Keyed by
# the text, like the caches; bounded by emptying a table when full.
_DEFERRED: dict[str, Callable[[], object]] = {}
_PRIMED_SENTENCES: dict[str, tuple[tuple[AnalysedSentence, ...], tuple[str, ...]]] = {}
_PRIMED_STEMS: dict[str, tuple[str, ...]] = {}
PRIMED_STEMS_SIZE = 8 * TEXT_CACHE_SIZE  # a title and several sentences a passage


def defer_analysis(text: str, read: Callable[[], object]) -> None:
    """``read()`` primes the analysis of ``text`` (``prime_analysis``): called at the first cache
    miss on the text, if any."""
    if len(_DEFERRED) > TEXT_CACHE_SIZE:
        _DEFERRED.clear()
    _DEFERRED[text] = read


def read_deferred(text: str) -> None:
    """Read the analysis handed over for ``text``, once (nothing when there is none)."""
    read = _DEFERRED.pop(text, None)
    if read is not None:
        read()


def prime_analysis(
    text: str,
    sentences: tuple[AnalysedSentence, ...],
    everything: tuple[str, ...],
    title: str,
    title_stems: tuple[str, ...],
) -> None:
    """Hand over a passage's ``sentence_analysis(text)`` and ``stems(title)`` computed elsewhere
    (they must be exactly what this module computes: ``retrieval.analysis`` checks the version of
    the rules they were computed with); each sentence's stems go with them, as computing the
    analysis would have cached them."""
    if len(_PRIMED_SENTENCES) > TEXT_CACHE_SIZE:
        _PRIMED_SENTENCES.clear()
    if len(_PRIMED_STEMS) > PRIMED_STEMS_SIZE:
        _PRIMED_STEMS.clear()
    _PRIMED_SENTENCES[text] = (sentences, everything)
    primed = _PRIMED_STEMS
    primed[title] = title_stems
    for sentence, own, _ in sentences:
        primed[sentence] = own


def forget_texts() -> None:
    """Empty the per-text caches (words, stems, sentences of whole texts, analyses handed over; the
    per-word stems stay): for measuring the text work as passages new to the process meet it."""
    for cached in (_words, _stems, _sentences, _sentence_stems):
        cached.cache_clear()
    _DEFERRED.clear()
    _PRIMED_SENTENCES.clear()
    _PRIMED_STEMS.clear()
