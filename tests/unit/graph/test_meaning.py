"""Read by meaning: a word of the question that no passage writes stands for the passage words that
mean it, when the search's embedder finds them close enough; a sentence that means what was asked
answers it in other words, and evidence none of whose best sentences is related to the question
does not answer it, whatever words it shares with it."""

from collections.abc import Sequence
from typing import cast

import numpy as np
import pytest

from graph.answer.meaning import (
    ANSWERS,
    RELATED,
    SAME_MEANING,
    Closeness,
    TermAliases,
    quotable_sentences,
    read_also,
    sentence_closeness,
    term_aliases,
)
from graph.answer.relevance import entity_share, focus_of, term_coverage
from graph.answer.synthesis import CLOSE_TO_BEST, synthesize_extractive
from graph.context import ResearchLimits
from graph.models import Finding, Plan, QuestionKind, ResearchTask, Routing
from retrieval.backends import DelegatingBackend, SearchBackend
from retrieval.embeddings import Vectors
from retrieval.passages import Passage
from tests.unit.graph.judges import judges_by


def _passage(pid: str, collection: str, title: str, text: str, score: float = 0.0) -> Passage:
    """A passage of its own document."""
    return Passage(
        id=pid, collection=collection, doc_id=pid, source=f"{pid}.md", title=title, text=text, score=score
    )


LEAVE = _passage(
    "p1", "people", "Paid time off", "Everyone gets 27 days of paid time off per year, plus public holidays."
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


async def test_a_name_the_asker_writes_otherwise_is_named_where_its_meaning_is() -> None:
    """ "the EU" in the question, "the European Union" in the documents: read by meaning, the
    sentence names what the question names."""
    hosting = _passage(
        "h1",
        "product",
        "Customer data",
        "Customer data is stored in the European Union, in two data centres.",
    )
    question = "is customer data hosted in the EU?"
    aliases = await term_aliases(question, [hosting], WordVectors({"eu": "european union"}, cosine=0.8))
    plain = focus_of(question, [hosting])
    assert plain.entities == (("eu",),) and entity_share(plain, hosting.text, hosting.title) == 0.0
    meant = focus_of(question, [hosting], aliases=aliases)
    assert entity_share(meant, hosting.text, hosting.title) == 1.0
    # The alias is that sentence's words: another sentence of the passage does not name it.
    assert entity_share(meant, "Data centres are audited yearly.", hosting.title) == 0.0


async def test_nothing_stands_for_a_word_when_the_closest_is_not_close_enough() -> None:
    far = WordVectors({"berlin": "holidays"}, cosine=SAME_MEANING - 0.15)
    assert await term_aliases("is there a berlin office", [LEAVE], far) == {}


async def test_without_an_embedder_the_words_decide_alone() -> None:
    class WordsOnly(WordVectors):
        async def meanings(self, texts: Sequence[str]) -> Vectors | None:
            return None

    assert await term_aliases("how many vacation days", [LEAVE], WordsOnly({}, 0.0)) == {}
    # An acronym the passages spell out is read by its spelling, with or without one.
    review = _passage("p9", "engineering", "Code review", "Each pull request needs one approval.")
    spelled = await term_aliases("does a PR need an approval", [review], WordsOnly({}, 0.0))
    assert spelled == {"pr": frozenset({"pull", "request"})}
    focus = focus_of("does a PR need an approval", [review], aliases=spelled)
    assert focus.written_otherwise(("pr",)) and entity_share(focus, review.text, review.title) == 1.0


async def test_the_model_reads_an_acronym_before_its_spelling() -> None:
    # "EU" means "European Union" to the model: the spelling written most ("encrypted uploads")
    # is not read.
    hosting = _passage(
        "h2",
        "product",
        "Data",
        "Encrypted uploads are stored in the European Union; encrypted uploads are kept a year.",
    )
    question = "is customer data hosted in the EU?"
    aliases = await term_aliases(question, [hosting], WordVectors({"eu": "european union"}, cosine=0.8))
    assert aliases["eu"] == frozenset({"european", "union"})


class SentenceVectors(DelegatingBackend):
    """A search whose embedder puts the question (the first text it is ever asked) at
    ``cosines[key]`` from each text that contains a key of ``cosines``, and at ``default`` from the
    rest."""

    def __init__(self, cosines: dict[str, float], default: float = 0.1) -> None:
        super().__init__(cast(SearchBackend, None))
        self.cosines, self.default, self.asked = cosines, default, list[str]()

    async def meanings(self, texts: Sequence[str]) -> Vectors | None:
        out = np.zeros((len(texts), 2), dtype=np.float32)
        for row, text in enumerate(texts):
            if not self.asked and row == 0:
                out[row] = (1.0, 0.0)
                continue
            c = next((v for k, v in self.cosines.items() if k in text), self.default)
            out[row] = (c, np.sqrt(1 - c**2))
        self.asked.extend(texts)
        return out


ON_CALL = _passage(
    "oc",
    "engineering",
    "On-call",
    (
        "On-call\n\n"
        "Each team has a primary and a secondary on-call engineer every week. "
        "A page goes to the primary first, who acknowledges it within 15 minutes at night. "
        "See below."
    ),
    score=1.0,
)
VPN = _passage(
    "vpn",
    "people",
    "Travel",
    "Connect your laptop through the company VPN on hotel and public networks when you travel.",
    score=1.0,
)


def _plan(
    question: str,
    *collections: str,
    kind: QuestionKind = "factual",
    routing: Routing = "automatic",
    sides: tuple[str, ...] = (),
) -> Plan:
    return Plan(
        kind=kind,
        routing=routing,
        tasks=tuple(ResearchTask(collection=c, queries=(question,), question=question) for c in collections),
        sides=sides,
    )


def _finding(collection: str, *passages: Passage) -> Finding:
    return Finding(collection=collection, status="ok", passages=passages, claims=(), seconds=0.1)


async def test_each_quotable_sentence_of_the_best_passages_is_read_with_its_title() -> None:
    vectors = SentenceVectors({"acknowledges": 0.7})
    closeness = await sentence_closeness("how fast do I ack a page at night", [ON_CALL], vectors)
    assert closeness is not None
    # The heading line and the three-word sentence are no claims: neither is compared.
    assert vectors.asked[1:] == [
        "On-call: Each team has a primary and a secondary on-call engineer every week.",
        "On-call: A page goes to the primary first, who acknowledges it within 15 minutes at night.",
    ]
    assert closeness.best == pytest.approx(0.7)
    assert [s for _, s, _ in closeness.at_least(ANSWERS)] == [
        "A page goes to the primary first, who acknowledges it within 15 minutes at night."
    ]


async def test_an_faq_answer_is_read_with_the_question_it_answers_and_the_question_is_no_claim() -> None:
    """In questions and answers, what a sentence is about is the question before it; the question
    itself says nothing, and answers nothing however close it is to what was asked."""
    faq = _passage(
        "faq",
        "product",
        "Billing FAQ",
        "Why can't I update my credit card? The card's billing address must match the account. "
        "Payments are taken on the first of each month.",
    )
    vectors = SentenceVectors({"update my credit card": 0.8})
    closeness = await sentence_closeness("why does my credit card update keep failing", [faq], vectors)
    assert closeness is not None
    assert vectors.asked[1:] == [
        "Billing FAQ: Why can't I update my credit card? The card's billing address must match the account.",
        "Billing FAQ: Payments are taken on the first of each month.",
    ]
    assert [s for _, s, _ in closeness.at_least(ANSWERS)] == [
        "The card's billing address must match the account."
    ]
    answer = synthesize_extractive(
        _plan("why can't I update my credit card", "product"), [_finding("product", faq)], ResearchLimits()
    )
    assert all(not s.text.endswith("?") for section in answer.sections for s in section.sentences)


def test_a_line_written_as_a_heading_is_not_read_unless_the_language_capitalises_nouns() -> None:
    english = _passage(
        "en",
        "people",
        "Boats",
        "Places to Launch Your Boat\n\nBoats launch from the north pier every morning.",
    )
    assert quotable_sentences(english) == ["Boats launch from the north pier every morning."]
    german = _passage(
        "de",
        "people",
        "Urlaub",
        "Der Urlaub wird vom Team geplant und ist bei der Personalabteilung zu beantragen.\n\n"
        "Urlaubsanspruch Jahresurlaub Vollzeit Dreißig Arbeitstage",
    )
    assert "Urlaubsanspruch Jahresurlaub Vollzeit Dreißig Arbeitstage" in quotable_sentences(german)


async def test_more_sentences_are_read_against_the_same_question_vector() -> None:
    """An answer quoting beyond the best passages has those sentences read too: only those not read
    yet, and the question is not embedded again."""
    pay = _passage(
        "pay",
        "people",
        "Standby pay",
        "Each full week as primary on call earns a standby allowance of 350 euros.",
    )
    vectors = SentenceVectors({"standby allowance": 0.8})
    closeness = await sentence_closeness("what does a week on call pay", [ON_CALL], vectors)
    assert closeness is not None and closeness.of("pay", pay.text) is None
    asked = len(vectors.asked)
    read = await read_also(closeness, [(ON_CALL, closeness_sentence(closeness)), (pay, pay.text)], vectors)
    assert vectors.asked[asked:] == [f"Standby pay: {pay.text}"]
    assert read.of("pay", pay.text) == pytest.approx(0.8)
    assert read.cosines.items() >= closeness.cosines.items()


def closeness_sentence(closeness: Closeness) -> str:
    return next(iter(closeness.cosines))[1]


async def test_without_an_embedder_no_sentence_is_read_by_meaning() -> None:
    class WordsOnly(SentenceVectors):
        async def meanings(self, texts: Sequence[str]) -> Vectors | None:
            return None

    assert await sentence_closeness("who is on call", [ON_CALL], WordsOnly({})) is None


async def test_a_sentence_that_means_what_was_asked_answers_it_in_other_words() -> None:
    question = "who do I wake up if the site dies at 3am"
    plan, findings = _plan(question, "engineering"), [_finding("engineering", ON_CALL)]
    by_words = synthesize_extractive(plan, findings, ResearchLimits())
    assert not by_words.found  # no sentence writes "wake", "site", "dies" or "3am"
    close = await sentence_closeness(question, [ON_CALL], SentenceVectors({"A page goes": ANSWERS + 0.05}))
    answer = synthesize_extractive(plan, findings, ResearchLimits(), closeness=close)
    assert answer.found
    assert [s.text for s in answer.sections[0].sentences] == [
        "A page goes to the primary first, who acknowledges it within 15 minutes at night."
    ]
    assert [c.passage.id for c in answer.citations] == ["oc"]
    far = await sentence_closeness(question, [ON_CALL], SentenceVectors({"A page goes": ANSWERS - 0.1}))
    assert not synthesize_extractive(plan, findings, ResearchLimits(), closeness=far).found


async def test_evidence_whose_words_match_but_whose_sentences_mean_something_else_does_not_answer() -> None:
    question = "how do I connect my laptop to the VPN"
    plan, findings = _plan(question, "people"), [_finding("people", VPN)]
    assert synthesize_extractive(plan, findings, ResearchLimits()).found  # by words alone
    related = await sentence_closeness(question, [VPN], SentenceVectors({}, default=RELATED + 0.05))
    assert synthesize_extractive(plan, findings, ResearchLimits(), closeness=related).found
    unrelated = await sentence_closeness(question, [VPN], SentenceVectors({}, default=RELATED - 0.1))
    answer = synthesize_extractive(plan, findings, ResearchLimits(), closeness=unrelated)
    assert not answer.found and not answer.sections


async def test_words_that_cover_the_question_through_a_spelled_out_acronym_answer_however_far() -> None:
    """The embedder reads "PR" as nothing in particular, so the question's closeness to the
    sentence that answers it says nothing: the documents' spelling of the acronym decides. A word
    read by meaning ("december" for "christmas") is the embedder's own reading, and its closeness
    still judges."""
    reviews = _passage(
        "cr",
        "engineering",
        "Code review",
        "Changes to payments need two approvals from the owning team on each pull request.",
    )
    question = "how many approvals does a PR touching payments need"
    plan, findings = _plan(question, "engineering"), [_finding("engineering", reviews)]
    far = await sentence_closeness(question, [reviews], SentenceVectors({}, default=RELATED - 0.1))
    spelled = await term_aliases(question, [reviews], WordVectors({}, cosine=0.0))
    assert spelled.only_spelled
    answer = synthesize_extractive(plan, findings, ResearchLimits(), aliases=spelled, closeness=far)
    assert answer.found and [c.passage.id for c in answer.citations] == ["cr"]
    meant = TermAliases(meant=dict(spelled))
    vetoed = synthesize_extractive(plan, findings, ResearchLimits(), aliases=meant, closeness=far)
    assert not vetoed.found and not vetoed.sections


async def test_an_acronym_a_title_spells_answers_by_that_title() -> None:
    """ "PTO" is what the title "Paid time off" spells (a whole phrase may end with "off"): the
    days of paid time off answer "how many days of PTO do we get", however far the embedder puts
    them from a question whose acronym it does not know."""
    question = "how many days of PTO do we get"
    spelled = await term_aliases(question, [LEAVE], WordVectors({}, cosine=0.0))
    assert spelled.spelled == {"pto": frozenset({"paid", "time"})} and spelled.only_spelled
    plan, findings = _plan(question, "people"), [_finding("people", LEAVE)]
    far = await sentence_closeness(question, [LEAVE], SentenceVectors({}, default=RELATED - 0.1))
    answer = synthesize_extractive(plan, findings, ResearchLimits(), aliases=spelled, closeness=far)
    assert answer.found and [c.passage.id for c in answer.citations] == ["p1"]
    # Typed in lower case, a word is read as an acronym only where a whole title or heading spells
    # it: "pto" is "Paid time off", but "pr" is no "pull request" written inside a sentence.
    lower = await term_aliases("how many days of pto do we get", [LEAVE], WordVectors({}, cosine=0.0))
    assert lower.spelled == {"pto": frozenset({"paid", "time"})}
    review = _passage("p9", "engineering", "Code review", "Each pull request needs one approval.")
    assert await term_aliases("does a pr need an approval", [review], WordVectors({}, cosine=0.0)) == {}


async def test_where_the_evidence_writes_every_word_of_the_question_the_words_decide() -> None:
    """Every key term is written somewhere, but no sentence carries enough of them: the words'
    "not found" stands however close a sentence is (a first hop is close to a bridge question)."""
    pay = _passage(
        "pay",
        "engineering",
        "Standby pay",
        (
            "A week as primary earns a standby allowance of 350 euros. "
            "Allowances are paid with the monthly salary."
        ),
        score=0.9,
    )
    question = "which team engineer earns euros monthly when the secondary acknowledges at night"
    plan, findings = _plan(question, "engineering"), [_finding("engineering", ON_CALL, pay)]
    close = await sentence_closeness(question, [ON_CALL, pay], SentenceVectors({}, default=0.9))
    assert not synthesize_extractive(plan, findings, ResearchLimits(), closeness=close).found


async def test_a_question_naming_what_no_passage_names_is_not_answered_by_meaning() -> None:
    question = "who do I wake up at Globex if the site dies"
    plan, findings = _plan(question, "engineering"), [_finding("engineering", ON_CALL)]
    close = await sentence_closeness(question, [ON_CALL], SentenceVectors({"A page goes": 0.9}))
    assert not synthesize_extractive(plan, findings, ResearchLimits(), closeness=close).found


async def test_a_collection_whose_best_passages_say_nothing_related_gets_no_section() -> None:
    """The people policies write "night" and "page" too, in a sentence about something else: their
    section goes; the on-call section, whose sentence answers, stays."""
    leave = _passage(
        "late",
        "people",
        "Working hours",
        "After a night with more than two pages you may start late the next day.",
        score=0.95,
    )
    question = "how fast must the primary acknowledge a page at night"
    plan = _plan(question, "engineering", "people")
    findings = [_finding("engineering", ON_CALL), _finding("people", leave)]
    by_words = synthesize_extractive(plan, findings, ResearchLimits())
    assert [s.collection for s in by_words.sections] == ["engineering", "people"]
    vectors = SentenceVectors({"A page goes": 0.7, "Each team": RELATED + 0.05, "start late": RELATED - 0.1})
    close = await sentence_closeness(question, [ON_CALL, leave], vectors)
    answer = synthesize_extractive(plan, findings, ResearchLimits(), closeness=close)
    assert [s.collection for s in answer.sections] == ["engineering"]
    assert answer.sections[0].sentences[0].text.startswith("A page goes to the primary first")


async def test_a_document_far_in_meaning_from_the_closest_leaves_the_answer() -> None:
    """The words pick a sentence from a review policy too ("page", "night"); meaning says the
    on-call page answers and the review policy does not: its sentence goes, unless it is close
    to the best (and related to the question), or the on-call page names it (the next link of
    what was asked)."""
    review = _passage(
        "rev",
        "engineering",
        "Incident reviews",
        "Every page at night is reviewed by the primary in the weekly incident meeting.",
        score=0.9,
    )
    question = "how fast must the primary acknowledge a page at night"
    plan = _plan(question, "engineering")
    findings = [_finding("engineering", ON_CALL, review)]
    by_words = synthesize_extractive(plan, findings, ResearchLimits())
    assert [c.passage.id for c in by_words.citations] == ["oc", "rev"]

    async def cited(reviewed: float, on_call: Passage = ON_CALL, answering: float = 0.7) -> list[str]:
        vectors = SentenceVectors({"A page goes": answering, "Every page": reviewed})
        found = [_finding("engineering", on_call, review)]
        close = await sentence_closeness(question, [on_call, review], vectors)
        answer = synthesize_extractive(plan, found, ResearchLimits(), closeness=close)
        return [c.passage.id for c in answer.citations]

    assert await cited(0.7 - CLOSE_TO_BEST - 0.05) == ["oc"]
    assert await cited(0.7 - CLOSE_TO_BEST + 0.05) == ["oc", "rev"]
    # Close to the best, but not related to the question at all.
    assert await cited(RELATED - 0.02, answering=RELATED + 0.05) == ["oc"]
    naming = ON_CALL.model_copy(update={"text": ON_CALL.text.replace("See below.", "See Incident reviews.")})
    assert await cited(0.7 - CLOSE_TO_BEST - 0.05, naming) == ["oc", "rev"]


async def test_the_sentence_closest_in_meaning_opens_the_answer() -> None:
    """Both sentences carry the question's words; the one that means what was asked comes first,
    though the other opens the page. A question that names something keeps the words' order (its
    second hop is far in meaning from the whole question)."""
    leave = _passage(
        "pl",
        "people",
        "Parental leave",
        (
            "Parental leave for new parents at Kestrel does not reduce paid time off. "
            "Every new parent at Kestrel gets 20 weeks of fully paid parental leave."
        ),
        score=1.0,
    )

    async def opening(question: str) -> str:
        plan, findings = _plan(question, "people"), [_finding("people", leave)]
        vectors = SentenceVectors({"20 weeks": 0.7, "does not reduce": RELATED + 0.05})
        close = await sentence_closeness(question, [leave], vectors)
        answer = synthesize_extractive(plan, findings, ResearchLimits(), closeness=close)
        return answer.sections[0].sentences[0].text

    by_words = synthesize_extractive(
        _plan("how much parental leave do new parents get", "people"),
        [_finding("people", leave)],
        ResearchLimits(),
    )
    assert by_words.sections[0].sentences[0].text.startswith("Parental leave for new parents")
    assert (await opening("how much parental leave do new parents get")).startswith("Every new parent")
    named = await opening("how much parental leave do new parents get at Kestrel")
    assert named.startswith("Parental leave for new parents")


async def test_a_comparison_of_things_without_names_keeps_only_documents_that_belong() -> None:
    """A comparison of two plans (no names) quotes each side's sentence however far in meaning its
    document is, but not another document's sentence that only shares the sides' words."""
    enterprise = _passage(
        "ent",
        "product",
        "Uptime commitments",
        "The enterprise plan promises 99.95 percent uptime.",
        score=1.0,
    )
    starter = _passage(
        "sta", "product", "Monthly uptime", "Uptime on the starter plan is 99.9 percent a month.", score=0.95
    )
    retention = _passage(
        "ret",
        "product",
        "Data retention",
        "Customers on the enterprise plan can choose their own data retention period.",
        score=0.9,
    )
    question = "how much uptime do we promise on the enterprise plan vs the starter plan"
    plan = _plan(question, "product", kind="comparative", sides=("enterprise plan", "starter plan"))
    findings = [_finding("product", enterprise, starter, retention)]
    by_words = synthesize_extractive(plan, findings, ResearchLimits())
    assert {c.passage.id for c in by_words.citations} == {"ent", "sta", "ret"}
    vectors = SentenceVectors({"enterprise plan promises": 0.7, "starter plan is": 0.45, "retention": 0.3})
    close = await sentence_closeness(question, [enterprise, starter, retention], vectors)
    answer = synthesize_extractive(plan, findings, ResearchLimits(), closeness=close)
    assert {c.passage.id for c in answer.citations} == {"ent", "sta"}


async def test_a_comparison_of_named_collections_keeps_each_collections_section() -> None:
    """Asked to compare the collections it names (``in:``), the answer keeps a section for each,
    however far in meaning one collection's best sentence is from the other's."""
    engineering = _passage(
        "eng",
        "engineering",
        "Prod sessions",
        "Engineers request production access in the bot.",
        score=1.0,
    )
    security = _passage(
        "sec", "security", "Access control", "Production access is granted for one task at a time.", score=0.9
    )
    question = "how do the engineering and security policies differ on production access"
    plan = _plan(question, "engineering", "security", kind="comparative", routing="explicit")
    findings = [_finding("engineering", engineering), _finding("security", security)]
    vectors = SentenceVectors({"request production": 0.7, "granted for one task": RELATED + 0.05})
    close = await sentence_closeness(question, [engineering, security], vectors)
    answer = synthesize_extractive(plan, findings, ResearchLimits(), closeness=close)
    assert [s.collection for s in answer.sections] == ["engineering", "security"]


async def test_a_name_the_documents_write_only_otherwise_leaves_far_documents_out() -> None:
    """ "PR" is written nowhere, only "pull request": no chain runs through it, so a document far
    in meaning leaves the answer as for a question that names nothing."""
    reviews = _passage(
        "pr", "engineering", "Pull requests", "A pull request gets its first review within one working day."
    )
    meetings = _passage(
        "mt", "engineering", "Review meetings", "Each pull request review is logged at the weekly meeting."
    )
    question = "how fast does a PR get a review"
    plan, findings = _plan(question, "engineering"), [_finding("engineering", reviews, meetings)]
    aliases = TermAliases(spelled={"pr": frozenset({"pull", "request"})})
    vectors = SentenceVectors({"first review": 0.7, "is logged": 0.7 - CLOSE_TO_BEST - 0.05})
    close = await sentence_closeness(question, [reviews, meetings], vectors)
    by_words = synthesize_extractive(plan, findings, ResearchLimits(), aliases=aliases)
    assert sorted(c.passage.id for c in by_words.citations) == ["mt", "pr"]
    answer = synthesize_extractive(plan, findings, ResearchLimits(), aliases=aliases, closeness=close)
    assert [c.passage.id for c in answer.citations] == ["pr"]


async def test_a_not_found_shows_the_sentences_the_judge_finds_closest_unless_nothing_is_related() -> None:
    """Not close enough to answer: the reply says it found no direct answer and shows, cited, the
    sentence the answer judge finds most likely to answer; the asker judges. When even that one is
    not related to the question (below the judge's ``related``), nothing is shown."""
    question = "who do I wake up if the site dies at 3am"
    plan, findings = _plan(question, "engineering"), [_finding("engineering", ON_CALL)]
    judges = judges_by({"cosine": 8.0}, bias=-4.0, answers=0.9, related=0.3)
    related = await sentence_closeness(
        question, [ON_CALL], SentenceVectors({"A page goes": (RELATED + ANSWERS) / 2})
    )
    answer = synthesize_extractive(
        plan, findings, ResearchLimits(), closeness=related, judged_closeness=related, judges=judges
    )
    assert not answer.found and not answer.sections
    assert answer.closest[0].text == (
        "A page goes to the primary first, who acknowledges it within 15 minutes at night."
    )
    assert answer.citations[0].passage.id == "oc"
    assert answer.judgement is not None and answer.judgement.outcome == "closest"
    unrelated = await sentence_closeness(question, [ON_CALL], SentenceVectors({}, default=0.1))
    answer = synthesize_extractive(
        plan, findings, ResearchLimits(), closeness=unrelated, judged_closeness=unrelated, judges=judges
    )
    assert not answer.found and not answer.closest and not answer.citations


async def test_a_sentence_the_word_checks_would_not_offer_is_shown_when_the_judge_finds_it_related() -> None:
    """Below ``RELATED`` by closeness alone the checks offer nothing; the judge's reading of the
    same sentence (here: closeness and a bias) finds it related, so the reply shows it as the
    closest instead of coming back empty-handed."""
    question = "who do I wake up if the site dies at 3am"
    plan, findings = _plan(question, "engineering"), [_finding("engineering", ON_CALL)]
    far = await sentence_closeness(question, [ON_CALL], SentenceVectors({"A page goes": RELATED - 0.05}))
    assert not synthesize_extractive(plan, findings, ResearchLimits(), closeness=far).closest
    judges = judges_by({"cosine": 8.0}, bias=-2.0, answers=0.9, related=0.3)
    answer = synthesize_extractive(
        plan, findings, ResearchLimits(), closeness=far, judged_closeness=far, judges=judges
    )
    assert not answer.found
    assert answer.closest[0].text == (
        "A page goes to the primary first, who acknowledges it within 15 minutes at night."
    )


HOTELS = _passage(
    "ht",
    "people",
    "Travel",
    (
        "Travel\n\n"
        "Hotel rooms for business trips are booked through the travel portal. "
        "A hotel costs up to 180 euros per night, or 250 euros per night in expensive cities. "
        "The portal lists which cities count as expensive. "
        "Hotel bookings for business trips are reviewed by finance every month."
    ),
    score=1.0,
)


async def test_an_answer_is_the_sentences_that_answer_with_one_of_context_in_document_order() -> None:
    """The words keep every sentence about hotel nights; the answer is the one the judge finds
    answering, the sentence that continues it, and nothing the judge finds unrelated, in the order
    the document says them."""
    question = "how much can a hotel cost per night on a business trip"
    plan, findings = _plan(question, "people"), [_finding("people", HOTELS)]
    vectors = SentenceVectors({"180 euros": 0.8, "which cities": 0.2})
    close = await sentence_closeness(question, [HOTELS], vectors)
    by_words = synthesize_extractive(plan, findings, ResearchLimits())
    assert len([s for section in by_words.sections for s in section.sentences]) > 2
    judges = judges_by({"cosine": 8.0}, bias=-4.0, answers=0.5, related=0.3)
    answer = synthesize_extractive(
        plan, findings, ResearchLimits(), closeness=close, judged_closeness=close, judges=judges
    )
    assert answer.found
    assert [s.text for section in answer.sections for s in section.sentences] == [
        "A hotel costs up to 180 euros per night, or 250 euros per night in expensive cities.",
        "The portal lists which cities count as expensive.",
    ]
    # What was cut is in the trace, with why.
    padding = {d.text: d.reason for d in answer.passed_over}
    assert (
        padding["Hotel bookings for business trips are reviewed by finance every month."] == "not_answering"
    )
