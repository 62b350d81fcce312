"""A passage's text analysis computed once, when it is indexed, and stored beside it.

Every question reads the passages it retrieves several times over (drafting, focus weights,
relevance, coverage, follow-up names): each text's sentences, their light stems (``retrieval.text``)
and their English Snowball stems (``retrieval.language``). Those are cached per text, but a passage
new to the process pays for all of it on the event loop, about 0.1 ms a passage, 64 passages a
question at 8 collections. A backend that stores ``analyse(title, text)`` with the passage hands
it over with each search hit (``offer``); the first time the text caches miss on that text they
read it (``remember``) and take the stored values instead of computing them: the same values, read
in a fraction of the time, and nothing read for a passage the caches still hold.

The stored form starts with a fingerprint of the rules that made it (the analysis of a sample text
that exercises them) and of the form itself: an index written by a version whose splitting,
stemming or stored form differs is read as if it stored nothing, and its passages are analysed as
they come (and stored anew at the collection's next sync).
"""

import hashlib
import json
from functools import cache, partial
from importlib.metadata import PackageNotFoundError, version

from retrieval.language import DEFAULT_LANGUAGE, prime_stems_in, stem_tuple_in
from retrieval.text import STOPWORDS, defer_analysis, prime_analysis, sentence_analysis, stems

# The stored form's own version: a form read otherwise (a field added, moved or meaning more) must
# not be read by code expecting this one. 2: the text's light stems stored whole, not only the list
# markers' (reading a passage no longer takes their union with every sentence's). 3: every stem list
# stored sorted, as the caches compute it (a stem list's order decides the order floats are summed
# in, and an answer must not depend on whether a text was analysed here or read from the index).
_FORM = 3
# The Snowball stemmers: the pure-Python one, and PyStemmer's C build, which it uses when installed.
STEMMERS = ("snowballstemmer", "PyStemmer")
# Splitting (abbreviations, initials, list markers, quotes), apostrophes, numbers, the light
# stemmer's suffixes and Snowball's: a change to any of these rules changes the fingerprint, through
# the sample below; so does any change to the stopwords, which are part of it whole.
_SAMPLE_TITLE = "Parental Leave Policies (2024)"
_SAMPLE_TEXT = (
    "Employees get 20 weeks' paid leave, e.g. after adoption. Mr. O'Brien approves it; "
    "requests go to J. Smith at the U.S. Office of Acme Co. Ltd. (est. 1990) by 31 March.\n\n"
    "1. Running studies\n- carried boxes, stopped buses and happier cities\n"
    '"Quoted!" (Asides.) Ünïcödé naïve café crème — stemming generously, tried, hoped. Keep it, '
    "eg. 30 days, in room No. 5 with path.extname(). No. It is v1.2.3 and dry.Don't wrap it in sync.Once.\n\n"
    "```sh\nmake deploy\n```"
)


def analyse(title: str, text: str) -> str:
    """The stored form of the passage's analysis: light and Snowball stems of the title, the text's
    light stems (its sentences' and those of its list markers, ``1.``, and code blocks, which belong
    to no sentence) and its Snowball stems, and each sentence with its word count, light stems and
    Snowball stems."""
    sentences, everything = sentence_analysis(text)
    return json.dumps(
        [
            fingerprint(),
            " ".join(stems(title)),
            " ".join(stem_tuple_in(title, DEFAULT_LANGUAGE)),
            " ".join(sorted(everything)),
            " ".join(stem_tuple_in(text, DEFAULT_LANGUAGE)),
            [
                [sentence, count, " ".join(own), " ".join(stem_tuple_in(sentence, DEFAULT_LANGUAGE))]
                for sentence, own, count in sentences
            ],
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def offer(title: str, text: str, stored: str | None) -> None:
    """A search's hit with its stored analysis: read when the text is first analysed (a text the
    caches still hold from an earlier question is not read again)."""
    if stored:
        defer_analysis(text, partial(remember, title, text, stored))


def remember(title: str, text: str, stored: str | None) -> bool:
    """Hand a stored analysis of the passage to the text caches; ``False`` (nothing handed over)
    when there is none, or it was made by other rules, or it does not read back. A sentence's
    Snowball stems are kept as stored and split only if they are asked for (few are)."""
    if not stored:
        return False
    try:
        version, title_stems, title_snowball, text_stems, text_snowball, sentences = json.loads(stored)
        if version != fingerprint():
            return False
        analysed = tuple((sentence, tuple(own.split()), count) for sentence, count, own, _ in sentences)
        everything = tuple(text_stems.split())
        found = [(title, tuple(title_snowball.split())), (text, tuple(text_snowball.split()))]
        unsplit = [(sentence, snowball) for sentence, _, _, snowball in sentences]
    except (ValueError, TypeError, AttributeError):
        return False
    if not all(isinstance(snowball, str) for _, snowball in unsplit):
        return False
    prime_analysis(text, analysed, everything, title, tuple(title_stems.split()))
    prime_stems_in(DEFAULT_LANGUAGE, found, unsplit)
    return True


def _installed(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return ""


@cache
def fingerprint() -> str:
    """What identifies the analysis rules: a hash of the sample's analysis and of the installed
    stemmers' versions (a new release may stem words the sample lacks differently), computed on
    first use (without ``analyse``, which stores this)."""
    sentences, everything = sentence_analysis(_SAMPLE_TEXT)
    sample = [
        _FORM,
        [_installed(name) for name in STEMMERS],
        sorted(STOPWORDS),
        sorted(stems(_SAMPLE_TITLE)),
        sorted(stem_tuple_in(_SAMPLE_TITLE, DEFAULT_LANGUAGE)),
        sorted(everything),
        [[s, n, sorted(own), sorted(stem_tuple_in(s, DEFAULT_LANGUAGE))] for s, own, n in sentences],
    ]
    encoded = json.dumps(sample, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.blake2b(encoded, digest_size=6).hexdigest()
