"""Reading a question: ``in:a,b`` targets, and what kind of question it is."""

import re
from typing import Literal

from graph.models import QuestionKind
from retrieval.names import find_names, leading_name, quoted_names
from retrieval.text import STOPWORDS, terms, words

_IN_RE = re.compile(r"(?<!\S)in:([A-Za-z0-9_,-]*)(?!\S)")
_GREETINGS = r"(?:hi|hello|hey|hiya|yo|good (?:morning|afternoon|evening)|howdy)"
_THANKS = r"(?:thanks|thank you|thx|ty|cheers)"
# Words said before a thank-you or a question ("ok, great, thanks!", "so, are you saying …").
_INTERJECTION = r"(?:yes|no|ok|okay|great|cool|perfect|awesome|super|many|oh|ah|hmm|well|so|also)"
# How much a thank-you thanks ("thanks so much"), and whom a greeting or thank-you addresses.
_THANKS_MORE = r"(?:so much|a lot|a ton|a bunch|very much|again|in advance)"
_ADDRESS = r"(?:there|confer|all|team|everyone|folks|guys|mate)"
_GREETING_RE = re.compile(
    rf"^\s*{_GREETINGS}\b[\s!.,]*{_ADDRESS}?[\s!.,]*$",
    re.IGNORECASE,
)
# A thank-you, with the greetings and interjections before it ("ok, great, thanks") and what it
# is for ("thanks so much for your help"); what follows it is read part by part (``_is_thanks``).
_THANKS_RE = re.compile(
    rf"^\s*((?:(?:{_GREETINGS}|{_INTERJECTION})(?:[\s,!.]+|\s+[-\u2013\u2014]\s+))*{_THANKS})"
    rf"\b(?:\s+{_THANKS_MORE})?"
    r"(?:\s+for\s+(?:the|your|all|this|that|everything)\b[^?,;:!.]{0,40})?",
    re.IGNORECASE,
)
# Praise or acknowledgement of an answer, a part of a message of its own ("that was really
# helpful", "this helps a lot", "makes sense", "got it"): said with or without a thank-you, it is
# one; before a question, it is a courtesy like a thank-you.
_PRAISE = (
    rf"(?:(?:{_INTERJECTION})\s+)*"
    r"(?:(?:(?:that|this|it|you)(?:['\u2019]s|['\u2019]re|\s+(?:is|was|were|are|have been|has been))?\s+)?"
    r"(?:(?:really|very|so|super|most|extremely|truly|incredibly)\s+)?"
    r"(?:helpful|useful|great|cool|perfect|amazing|awesome|brilliant|excellent|fantastic|clear|"
    r"exactly what i needed)"
    r"|(?:that|this|it)(?:['\u2019]s|\s+(?:is|was))\s+good to know|good to know"
    r"|(?:that|this|it)\s+(?:really\s+)?(?:helps|helped)(?:\s+a\s+lot)?"
    r"|(?:(?:that|this|it)\s+)?makes\s+sense(?:\s+now)?"
    r"|(?:much\s+)?appreciated|got it|understood|noted|ok|okay|alright|all right|sure|fine"
    r"|have a (?:good|nice|great|lovely) (?:day|one|weekend|evening))"
)
_PRAISE_RE = re.compile(_PRAISE, re.IGNORECASE)
# What follows a thank-you when it asks something more ("thanks, is it paid", "ok, whats the
# limit": a contraction typed without its apostrophe asks too).
_ASKS_RE = re.compile(
    r"^(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|how|what|when|where|why|"
    r"who|which|whats|hows|whens|wheres|whos|whys)\b",
    re.IGNORECASE,
)
# A question announced, not asked ("I have a question", "I do have a couple more questions
# please", "can I ask you something?"): nothing to search for; before a question, a courtesy.
_ADDRESSED = rf"(?:\s+{_ADDRESS})?"
_ANNOUNCE = (
    r"(?:(?:(?:i|we)(?:['\u2019]ve)?(?: do| also| still)? (?:have|got)|(?:can|could|may) i ask(?: you)?)"
    r"(?: (?:a|an|one|two|three|some|few|a few|couple|a couple|couple of|a couple of|another|more))?"
    r"(?: (?:more|other|quick|small|follow-up|related|further))*"
    r" (?:questions?|something(?: else)?)(?: for you)?(?: too| as well)?(?: please)?"
    r"|(?:one|two|a few|a couple of|some) more questions?(?: please)?)"
)
_HELP_RE = re.compile(
    r"^\s*(help|\?|what can you do\??|how do i use (you|this)\??|usage|"
    r"(can|could) you (please )?help( me)?( please)?[?.!]*"
    rf"|(?:(?:{_GREETINGS}|{_INTERJECTION}){_ADDRESSED}[\s,!.]+)*{_ANNOUNCE}[?.!:]*)\s*$",
    re.IGNORECASE,
)
_COMPARE_RE = re.compile(
    r"\b(differ|differs|difference|differences|compare|compared|comparison|versus|vs\.?|contrast|"
    r"both|same as|similar|unlike|whereas)\b|\bwhich (one|is|was|has|had|came|were|are|did)\b.*\bor\b",
    re.IGNORECASE,
)
_EXPLORE_RE = re.compile(
    r"^\s*(what are (the|our)|overview|summari[sz]e|tell me about|explain|describe|list|how does)\b",
    re.IGNORECASE,
)


def extract_targets(text: str) -> tuple[str, tuple[str, ...]]:
    """Remove every ``in:a,b`` from the text; return the rest, without a courtesy before what it
    asks (``without_courtesy``), and the named collections."""
    names: list[str] = []
    for match in _IN_RE.finditer(text):
        names.extend(n.strip().lower() for n in match.group(1).split(",") if n.strip())
    remaining = " ".join(_IN_RE.sub(" ", text).split())
    return without_courtesy(remaining), tuple(dict.fromkeys(names))


# What opens a message before what it asks, each ending at a punctuation mark ("thanks, …", "hi
# team! …", "Thanks for the information. …", "I'm sorry. …", "By the way, …", "Thanks in advance,
# …"), or running straight into a question ("I meant can I …", "hey what is …", "so are you …").
_COURTESY = (
    rf"(?:{_INTERJECTION}|{_GREETINGS}{_ADDRESSED}"
    rf"|{_THANKS}(?:\s+{_THANKS_MORE})?"
    rf"(?:\s+for\b[^,;:!?.]{{0,40}})?{_ADDRESSED}"
    r"|(?:i am |i['’]m |im )?sorry(?:\s+(?:to|if)\b[^,;:!?.]{0,40}?(?:,?\s+but\b)?)?"
    rf"|by the way|btw|i see|i mean|i meant|anyway|{_PRAISE}|{_ANNOUNCE})"
)
_COURTESY_RE = re.compile(rf"^\s*{_COURTESY}(?:\s*[,;:!.]+|\s+[-\u2013\u2014]+)\s*", re.IGNORECASE)
_ASIDE_RE = re.compile(rf"^\s*{_COURTESY}\s+(?=\S)", re.IGNORECASE)


def without_courtesy(text: str) -> str:
    """The text without the greetings, thank-yous, apologies and asides it opens with, when what
    follows asks something ("thanks, how many vacation days do we get?" asks about vacation days,
    not about thanks: a word of courtesy is no key term to search or judge by), or is a greeting
    or thank-you itself ("hi Confer, thanks!"). A message that asks nothing after them ("thanks,
    that was really helpful!") is left whole, and read as it was written."""
    rest = text
    for _ in range(MAX_OPENINGS):
        if is_direct(rest) or (end := _opening(rest)) is None:
            break
        rest = rest[end:]
    if rest == text or not terms(rest):
        return text
    if is_direct(rest) or "?" in rest or _ASKS_RE.match(rest) or _REQUEST_RE.match(rest):
        return rest
    return text


# Openings read one after another at most ("ok, great, thanks! …"): a message of nothing else is
# no question, and a long one costs no more than these.
MAX_OPENINGS = 8


def _opening(text: str) -> int | None:
    """Where the courtesy or aside the text opens with ends: at its punctuation mark, or without
    one where a question or a courtesy follows ("hey what is …", "ok great, thanks! …")."""
    match = _COURTESY_RE.match(text)
    if match is not None:
        return match.end()
    end = 0
    for _ in range(MAX_OPENINGS):
        match = _ASIDE_RE.match(text[end:])
        if match is None:
            return None
        end += match.end()
        if _ASKS_RE.match(text[end:]) or _COURTESY_RE.match(text[end:]):
            return end
    return None


# A statement that asks all the same ("I want to know if …", "tell me …", "I need the form").
_REQUEST_RE = re.compile(
    r"^(?:i (?:want|wanted|would like|need|was wondering|wonder)|tell me|explain|show me|please)\b",
    re.IGNORECASE,
)


# Kinds answered without research: what they say is no question about the documents.
DIRECT_KINDS: tuple[QuestionKind, ...] = ("greeting", "thanks", "help")


def is_direct(text: str) -> bool:
    """A greeting, a thank-you or a request for help and nothing more ("thanks!", "thanks a lot
    for your help", "hi team"): in a conversation, no follow-up to rewrite with the earlier turns
    and no turn a later follow-up builds on. "thanks, is it paid" asks something more, and "why?"
    (no content word, but a question) is a follow-up."""
    text = " ".join(text.split())
    if _GREETING_RE.match(text) or _HELP_RE.match(text):
        return True  # their patterns allow nothing after them but a word of address
    return _is_thanks(text)


def _is_thanks(text: str) -> bool:
    """A thank-you and nothing more, or praise of an answer: no question mark, and every part of
    what follows the thank-you praises, acknowledges, says goodbye or says what the asker will do
    ("thank you, that was really helpful!", "thanks, I will try that", "thanks mate"), emoji
    aside. Praise without a thank-you is one too ("great, that helps a lot"). Anything else after
    a thank-you is read as written: "thanks, the form is broken" reports something, and "thanks
    for the help, how do I submit it" asks."""
    text = " ".join(_EMOJI_RE.sub(" ", text).split())  # ":pray:", "🙏", ":)" say nothing more
    if "?" in text:
        return False
    thanks = _THANKS_RE.match(text)
    parts = [p for p in map(str.strip, _PARTS_RE.split(text[thanks.end() :] if thanks else text)) if p]
    if thanks is not None:
        return all(_PRAISE_RE.fullmatch(p) or _AFTER_THANKS_RE.fullmatch(p) for p in parts)
    return (
        bool(parts)
        and all(_PRAISE_RE.fullmatch(p) or _ALSO_SAID_RE.fullmatch(p) for p in parts)
        and any(_PRAISE_RE.fullmatch(p) for p in parts)
    )


# Said beside praise without making it a question ("ok, got it", "understood, thanks").
_ALSO_SAID = rf"{_INTERJECTION}|{_THANKS}(?:\s+{_THANKS_MORE})?"
_ALSO_SAID_RE = re.compile(_ALSO_SAID, re.IGNORECASE)
# What else may follow a thank-you in a message that is one: words of address, another thank-you,
# what the asker will do, that it worked, a goodbye.
_AFTER_THANKS_RE = re.compile(
    rf"{_ALSO_SAID}|{_ADDRESS}|{_THANKS_MORE}|{_ANNOUNCE}"
    r"|(?:(?:i|we)(?:['\u2019]ll| will)|will) (?:do|try|check|look into|read|use)"
    r"(?: (?:that|it|this|them))?(?: out| now)?"
    r"|will do|(?:that|it) (?:worked|works|did it|did the trick|fixed it)(?: now)?|works now|all good"
    r"|bye|see you|talk later|you rock|you(?:['\u2019]re| are) (?:the best|a star|a lifesaver)",
    re.IGNORECASE,
)
# Emoji, as Slack writes them (":pray:", ":+1:") or as characters, and smileys.
_EMOJI_RE = re.compile(
    r":[a-z0-9_+'-]+:|(?<!\w)[:;]-?[()DPp](?!\w)|[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]+"
)


_PARTS_RE = re.compile(r"[,;:!.]+|\s[-\u2013\u2014]\s")


def classify_question(text: str) -> QuestionKind:
    if _HELP_RE.match(text):
        return "help"
    if _is_thanks(text):
        return "thanks"  # before the words: "got it" has no key term, and asks for no help
    if not terms(text):
        return "help"
    if _GREETING_RE.match(text):
        return "greeting"
    if _COMPARE_RE.search(text) or comparison_sides(text):
        return "comparative"
    if _EXPLORE_RE.match(text):
        return "exploratory"
    return "factual"


_NAME = r"[A-Z0-9\"'“]"
_SIDES_PATTERNS = (
    # "Which band, Letters to Cleo or Screaming Trees, had more members?"
    re.compile(
        rf"^(?:which|who|what)\s+\w+,\s*(?P<a>{_NAME}.+?)\s+or\s+(?:the\s+)?(?P<b>{_NAME}.+?),\s*\w+.*$"
    ),
    _BETWEEN := re.compile(r"\bbetween (?P<a>.+?) and (?P<b>.+?)(?:[?.!]|$)", re.IGNORECASE),
    # "Which is older, X or Y?", "Who was born first, X or Y?"
    re.compile(
        r"^(?:which|who|what)\b[^,]*,\s*(?:the\s+)?(?P<a>.+?)\s+or\s+(?:the\s+)?(?P<b>.+?)[?.!]*$",
        re.IGNORECASE,
    ),
    re.compile(r"\bcompare\s+(?P<a>.+?)\s+(?:and|with|to)\s+(?P<b>.+?)(?:[?.!]|$)", re.IGNORECASE),
    re.compile(
        r"^(?:how|in what way)s?\s+(?:do|does|did)\s+(?:the\s+)?(?P<a>.+?)\s+and\s+"
        r"(?:the\s+)?(?P<b>.+?)\s+(?:differ|compare)\b",
        re.IGNORECASE,
    ),
    # "What is the Beacon API rate limit compared to the webhook retry policy?"
    re.compile(
        r"^(?:what|how|which)\s+(?:is|are|was|were|does|do|did)\s+(?:the\s+)?(?P<a>.+?)\s+"
        r"(?:compared (?:to|with)|as opposed to)\s+(?:the\s+)?(?P<b>.+?)[?.!]*$",
        re.IGNORECASE,
    ),
    re.compile(r"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)[?.!]*$", re.IGNORECASE),
    # "What occupation did X and Y share?", "What type of sport does X and Y have in common?"
    re.compile(
        rf"\b(?:did|do|does)\s+(?:the\s+)?(?P<a>{_NAME}.+?)\s+and\s+(?:the\s+)?(?P<b>{_NAME}.+?)\s+"
        r"(?:share|have|both|each)\b"
    ),
    # "Are both X and Y ...?", "Were X and Y formed in the same city?", "Can X and Y both ...?"
    # Each side is a name (a capital, a digit or a quote; the first after at most three words
    # saying what it is, "the operas Vanessa and Le roi malgré lui"): "is the office open between
    # christmas and new year" and "can I change my birth and marriage certificate" compare nothing.
    re.compile(
        rf"^(?i:are|were|is|was|do|does|did|can|could|have|has)\s+(?:(?i:both)\s+)?(?:(?i:the)\s+)?"
        rf"(?P<a>(?:[a-z][\w-]*\s+){{0,3}}{_NAME}.+?)\s+and\s+(?:(?i:the)\s+)?(?P<b>{_NAME}.*)$"
    ),
    # "... both the Nusretiye Clock Tower and the Eski Imaret Mosque ..."
    re.compile(rf"\bboth\s+(?:the\s+)?(?P<a>{_NAME}.+?)\s+and\s+(?:the\s+)?(?P<b>{_NAME}.*)$"),
    # "who is younger Ulrich Walter or Luca Parmitano?"
    re.compile(rf"(?P<a>{_NAME}[^,?]*?)\s+or\s+(?:the\s+)?(?P<b>{_NAME}[^,?]*)[?.!]?$"),
)


# "between X and Y" compares only in a question that chooses or compares ("which of …", "the
# difference between …", "what do they share"); elsewhere it is a span or a relation: "is the
# office open between christmas and new year", "the conflict between X and Y".
_CHOICE_RE = re.compile(r"\b(which|who|whom|whose|share|shares|shared|common)\b", re.IGNORECASE)


# A comparison names its two sides in a question of a few lines: a longer text (a pasted log, key
# or document) is read for none, and the patterns, whose lazy runs may try every split of a long
# word, never read it (a 20,000-character key took 2 s).
MAX_COMPARISON_CHARS = 600


def comparison_sides(text: str) -> tuple[str, ...]:
    """The two things compared, when the sentence shape makes them clear; else nothing."""
    text = " ".join(text.split())
    if len(text) > MAX_COMPARISON_CHARS:
        return ()
    for pattern in _SIDES_PATTERNS:
        if pattern is _BETWEEN and not (_COMPARE_RE.search(text) or _CHOICE_RE.search(text)):
            continue
        match = pattern.search(text)
        if match:
            a = match.group("a").strip(" ,;:\"'")
            b = match.group("b").strip(" ,;:?.!\"'")
            if (b[:1].isupper() or b[:1].isdigit()) and len(b.split()) > 1:
                b = leading_name(b) or b
            sides = (" ".join(a.split()), " ".join(b.split()))
            if all(terms(side) for side in sides) and sides[0].lower() != sides[1].lower():
                return sides
    return ()


# Words that shape the ask rather than name what it is about ("how many weeks", "which one").
_ASK_WORDS = frozenset(
    """
    many much long often far old new big large small high low first last later earlier one two
    kind type sort name named called known number amount anyone someone something thing things
    happen happens happened need needs use used way ways better best compared comparison
    differ difference different versus vs rule rules policy policies process procedure
    requirement requirements guideline guidelines detail details step steps information info
    overview summary doc docs documentation handbook
    older younger larger smaller bigger longer shorter higher lower earlier stricter faster slower
    more less most least greater newer taller
    really actually basically pretty sure maybe perhaps wonder wondering supposed anyway want wants
    wanted means meaning understand understanding definition define
    """.split()
)


def key_terms(text: str) -> list[str]:
    """The question's content words that say what it is about, in order, without duplicates."""
    shape = _ASK_WORDS | {"mean"} if _MEAN_ASK_RE.search(text) else _ASK_WORDS
    return list(dict.fromkeys(t for t in terms(text) if t not in shape))


# "mean" asking what a thing means ("what does SEV1 mean", "what do you mean by …"), not the
# average ("the mean salary").
_MEAN_ASK_RE = re.compile(r"\b(?:do|does|did)\s+(?:[\w'’-]+\s+){0,6}?mean\b|\bmean\s+by\b", re.IGNORECASE)


def key_entities(text: str, *, language: str = "en") -> tuple[str, ...]:
    """Names the question mentions (``retrieval.names``): quoted phrases, then capitalised names."""
    found = [n.text for n in quoted_names(text)] + [n.text for n in find_names(text, language=language)]
    return tuple(dict.fromkeys(e for e in found if any(w not in STOPWORDS for w in words(e))))


AnswerType = Literal["date", "day", "number", "name", "any"]

# What an English question asks for, from its wording: a date ("when", "what year"), a day or
# time of day ("what day does …", "what time is …"), a number ("how many", "what population"; an
# amount of time or how often: "how long", "how quickly", "how often"), a name ("who", "where",
# "which city"), or anything.
_DATE_ASK_RE = re.compile(
    r"^\s*when\b|\b(what|which) (year|decade|century|date|month)\b|\bsince when\b|\bhow long ago\b",
    re.IGNORECASE,
)
# The day or time asked about is what the verb after it is said of: "what time off …", "what
# day rate …" and "what time zone …" ask for other things.
_DAY_ASK_RE = re.compile(
    r"\b(what|which) (day|days|weekday|weekdays|time|times|hours)(?: of the (?:week|month|year))? "
    r"(is|are|was|were|do|does|did|will|would|should|can|could|has|have)\b",
    re.IGNORECASE,
)
_NUMBER_ASK_RE = re.compile(
    r"\bhow (many|much|long|tall|old|far|high|large|big|wide|deep|heavy|"
    r"quickly|soon|fast|often|frequently|early|late)\b|"
    r"\bwhat (is|was|were|are) the (population|number|height|length|age|capacity|area|size|"
    r"distance|elevation|attendance|total|amount|budget|revenue)\b",
    re.IGNORECASE,
)
_NAME_ASK_RE = re.compile(
    r"^\s*(who|whom|whose|where)\b|\b(who|whom|whose)\b|\bwhere\b|"
    r"\b(what|which) (\w+ ){0,2}(city|town|country|state|county|village|region|place|person|man|"
    r"woman|actor|actress|singer|band|group|team|club|company|firm|university|school|author|writer|"
    r"director|film|movie|album|song|station|network|party|league|brand)\b",
    re.IGNORECASE,
)
# A question opening with a verb asks yes or no ("Were both X and Y American?").
_YES_NO_RE = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.IGNORECASE
)


def expected_answer(text: str) -> AnswerType:
    """What kind of thing an English question asks for: a date, a number, a name, or anything
    (other questions, and yes-or-no questions, which a quoted sentence answers by its content)."""
    if _YES_NO_RE.match(text):
        return "any"
    if _DATE_ASK_RE.search(text):
        return "date"
    if _DAY_ASK_RE.search(text):
        return "day"
    if _NUMBER_ASK_RE.search(text):
        return "number"
    if _NAME_ASK_RE.search(text):
        return "name"
    return "any"
