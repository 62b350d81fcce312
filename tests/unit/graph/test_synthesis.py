import numpy as np

from graph.answer.evidence import merge_passages
from graph.answer.meaning import Closeness, candidates
from graph.answer.synthesis import build_answer, choose_claims, select_claims, synthesize_extractive
from graph.context import ResearchLimits
from graph.models import Claim, Finding, Plan, QueryHits, ResearchTask
from retrieval.passages import Passage
from tests.unit.graph.judges import judges_by


def _p(pid: str, collection: str, text: str, score: float) -> Passage:
    return Passage(
        id=pid, collection=collection, doc_id=pid, source=f"{pid}.md", title=pid, text=text, score=score
    )


def _plan(*names: str, kind: str = "factual") -> Plan:
    return Plan(
        kind=kind,
        routing="automatic",
        tasks=tuple(ResearchTask(collection=n, queries=("q",), question="q") for n in names),
    )


def _finding(collection: str, passages: list[Passage], claims: list[Claim]) -> Finding:
    return Finding(
        collection=collection, status="ok", passages=tuple(passages), claims=tuple(claims), seconds=0.1
    )


A1 = _p("a1", "eng", "Deploys roll out in three waves. Rollback is automatic.", 9.0)
A2 = _p("a2", "eng", "Friday deploys need approval from the manager on duty.", 3.0)
B1 = _p("b1", "sec", "Deploys to production require a change ticket.", 7.0)


def test_citations_are_numbered_in_order_of_first_use_and_resolve() -> None:
    findings = [
        _finding(
            "eng",
            [A1, A2],
            [
                Claim(text="Deploys roll out in three waves.", passage_ids=("a1",), coverage=0.9),
                Claim(
                    text="Friday deploys need approval from the manager on duty.",
                    passage_ids=("a2",),
                    coverage=0.5,
                ),
            ],
        ),
        _finding(
            "sec",
            [B1],
            [Claim(text="Deploys to production require a change ticket.", passage_ids=("b1",), coverage=0.8)],
        ),
    ]
    answer = synthesize_extractive(_plan("eng", "sec"), findings, ResearchLimits())
    numbers = [n for s in answer.sections for sentence in s.sentences for n in sentence.citations]
    assert numbers == sorted(numbers) == list(range(1, len(answer.citations) + 1))
    retrieved = {p.id for p in answer.retrieved}
    assert all(c.passage.id in retrieved for c in answer.citations)
    # Best sentence first, whatever its collection; one section per collection, in the order of
    # each collection's best sentence, its sentences best first.
    assert [s.collection for s in answer.sections] == ["eng", "sec"]
    assert [x.text for x in answer.sections[0].sentences] == [
        "Deploys roll out in three waves.",
        "Friday deploys need approval from the manager on duty.",
    ]


def test_sentences_citing_unretrieved_or_unsupporting_passages_are_dropped() -> None:
    claims = [
        (Claim(text="Deploys roll out in three waves.", passage_ids=("a1",), coverage=0.9), "eng"),
        (Claim(text="Deploys are forbidden on Mondays.", passage_ids=("ghost",), coverage=0.9), "eng"),
        (
            Claim(text="Quantum chairs levitate under marketing budgets.", passage_ids=("a1",), coverage=0.9),
            "eng",
        ),
    ]
    answer, dropped = build_answer(_plan("eng"), [_finding("eng", [A1], [])], claims)
    assert dropped == 2
    assert [s.text for sec in answer.sections for s in sec.sentences] == ["Deploys roll out in three waves."]
    assert [c.passage.id for c in answer.citations] == ["a1"]


def test_near_duplicate_claims_merge_their_citations() -> None:
    findings = [
        _finding(
            "eng", [A1], [Claim(text="Deploys roll out in three waves.", passage_ids=("a1",), coverage=0.9)]
        ),
        _finding(
            "sec",
            [_p("b2", "sec", "Deploys roll out in three waves!", 8.0)],
            [Claim(text="Deploys roll out in three waves!", passage_ids=("b2",), coverage=0.9)],
        ),
    ]
    answer = synthesize_extractive(_plan("eng", "sec"), findings, ResearchLimits())
    [section] = answer.sections
    [sentence] = section.sentences
    assert sentence.citations == (1, 2)


def test_merge_uses_raw_scores_not_rank_positions() -> None:
    weak_top = _p("w", "other", "x", 1.0)
    findings = [_finding("eng", [A1, A2], []), _finding("other", [weak_top], [])]
    assert [p.id for p in merge_passages(findings)] == ["a1", "a2", "w"]


def test_comparison_of_the_collections_asked_for_keeps_the_best_claim_of_each() -> None:
    words = ["alpha beta", "gamma delta", "epsilon zeta", "eta theta", "iota kappa"]
    strong = [
        Claim(text=f"Deploys roll out in three waves, {w}.", passage_ids=("a1",), coverage=0.95)
        for w in words
    ]
    passage = _p("a1", "eng", " ".join(c.text for c in strong), 9.0)
    findings = [
        _finding("eng", [passage], strong),
        _finding(
            "sec",
            [B1],
            [Claim(text="Deploys to production require a change ticket.", passage_ids=("b1",), coverage=0.2)],
        ),
    ]
    limits = ResearchLimits(answer_sentences=3)
    factual = select_claims(_plan("eng", "sec"), findings, limits)
    assert {c for _, c in factual} == {"eng"}
    asked = _plan("eng", "sec", kind="comparative").model_copy(update={"routing": "explicit"})
    comparative = select_claims(asked, findings, limits)
    assert {c for _, c in comparative} == {"eng", "sec"}
    # Routed by itself, a comparison without named sides compares inside the evidence: "sec"
    # earns no section of its own by being searched.
    routed = select_claims(_plan("eng", "sec", kind="comparative"), findings, limits)
    assert {c for _, c in routed} == {"eng"}


def test_failed_and_timed_out_collections_are_reported() -> None:
    findings = [
        _finding(
            "eng", [A1], [Claim(text="Deploys roll out in three waves.", passage_ids=("a1",), coverage=0.9)]
        ),
        Finding(collection="sec", status="timeout", reason="time budget exceeded", seconds=1.0),
    ]
    answer = synthesize_extractive(_plan("eng", "sec", "hr"), findings, ResearchLimits())
    assert answer.partial
    assert [(o.name, o.status) for o in answer.outcomes] == [
        ("eng", "ok"),
        ("sec", "timeout"),
        ("hr", "failed"),
    ]


def _asked(question: str, *names: str) -> Plan:
    return Plan(
        kind="factual",
        routing="automatic",
        tasks=tuple(ResearchTask(collection=n, queries=(question,), question=question) for n in names),
    )


def _titled(pid: str, title: str, text: str, score: float) -> Passage:
    return Passage(
        id=pid, collection="places", doc_id=pid, source=f"{pid}.md", title=title, text=text, score=score
    )


def test_a_sentence_naming_another_passages_subject_brings_the_part_of_it_that_answers() -> None:
    # The bridge: the first passage names the county; the county's passage says its seat, in a
    # sentence that shares little with the question and would rank far below.
    town = _titled(
        "t",
        "East Lempster, New Hampshire",
        "East Lempster is an unincorporated community in the town of Lempster in Sullivan County, "
        "New Hampshire. The village has a small white church and a post office in New Hampshire.",
        9.0,
    )
    county = _titled(
        "c",
        "Sullivan County, New Hampshire",
        "Sullivan County is a county located in the state of New Hampshire, United States. "
        "As of the 2010 census, the population of the county was 43,742 people. "
        "Its county seat is Newport.",
        6.0,
    )
    others = [
        _titled(
            f"o{i}",
            f"Town {i}, New Hampshire",
            f"Town {i} is a town in Cheshire County, New Hampshire, United States, near Lempster.",
            5.0 - i,
        )
        for i in range(6)
    ]
    question = "What is the county seat of the county where East Lempster, New Hampshire is located?"
    findings = [_finding("places", [town, county, *others], [])]
    answer = synthesize_extractive(_asked(question, "places"), findings, ResearchLimits())
    assert answer.found
    texts = [sentence.text for section in answer.sections for sentence in section.sentences]
    seat = texts.index("Its county seat is Newport.")
    assert seat <= 3
    assert all(seat < i for i, t in enumerate(texts) if t.startswith("Town "))


def test_a_when_question_prefers_the_sentence_with_a_date() -> None:
    from graph.answer.relevance import focus_of, offers_answer
    from graph.research.question import expected_answer

    assert expected_answer("When was Virginia Commonwealth University founded?") == "date"
    assert expected_answer("In what year was the novel first published?") == "date"
    assert expected_answer("How many laps is the 10,000 metres race?") == "number"
    assert expected_answer("Who directed Big Hollow Bend?") == "name"
    assert expected_answer("In which city is Bell Labs based?") == "name"
    assert expected_answer("Were Arlo Penrose and Ivo Marsh of the same nationality?") == "any"
    focus = focus_of("When was Virginia Commonwealth University founded?", [])
    assert offers_answer(focus, "VCU was founded in 1838 as the medical department.")
    assert not offers_answer(focus, "Virginia Commonwealth University was founded by the state.")
    counted = focus_of("How many laps is the race?", [])
    assert offers_answer(counted, "The race consists of 25 laps.")
    assert not offers_answer(counted, "The race is run on a track.")


def test_how_soon_and_how_often_ask_for_an_amount() -> None:
    """ "how quickly", "how fast" and "how often" are answered with an amount of time or a
    frequency, as "how long" is: the sentence that holds one offers the answer."""
    from graph.answer.relevance import focus_of, offers_answer
    from graph.research.question import expected_answer

    assert (
        expected_answer("security hole in the latest release, how quickly does it need to be fixed")
        == "number"
    )
    assert expected_answer("patch a really serious hole - how fast?") == "number"
    assert expected_answer("how often do we run community office hours") == "number"
    assert expected_answer("Is the build fast?") == "any"
    soon = focus_of("how quickly does a security fix need to ship", [])
    assert offers_answer(soon, "Security fixes ship within 24 hours.")
    assert not offers_answer(soon, "Security fixes ship as a patch release.")
    often = focus_of("how often do we run office hours", [])
    assert offers_answer(often, "Office hours run twice a month.")
    assert offers_answer(often, "Community office hours are held weekly on Zoom.")
    assert not offers_answer(often, "Office hours are held on Zoom.")


def test_a_day_asked_for_is_answered_by_the_sentence_that_names_it() -> None:
    # "what day ... week": the sentence that answers carries one key term ("week") and the day;
    # with two key terms required of every sentence, it was left out and the answer said
    # nothing of the day.
    from graph.answer.relevance import focus_of, offers_answer
    from graph.research.question import expected_answer

    question = "what day does the on call week switch over"
    assert expected_answer(question) == "day"
    assert expected_answer("what time does the office open") == "day"
    assert expected_answer("which day of the week is payday?") == "day"
    # "time off", "day rate" and "time zone" are what these ask about, not a day or time.
    assert expected_answer("What time off am I entitled to?") == "any"
    assert expected_answer("What day rate do contractors get?") == "any"
    assert expected_answer("what time zone is the Berlin office in?") == "any"
    focus = focus_of(question, [])
    assert offers_answer(focus, "The rotation runs from Tuesday 10:00 to the next Tuesday.")
    assert offers_answer(focus, "Maintenance happens on Sundays.")
    assert offers_answer(focus, "The handover is at 10:00.")
    assert offers_answer(focus, "The handover is at 9:30 am.")
    assert offers_answer(focus, "It closes in May.")
    assert not offers_answer(focus, "Nobody is on call more than one week in four.")
    # no time of day, and no month: a verse, a ratio, a build number, the verb "may"
    assert not offers_answer(focus, "See John 3:16 on the rotation.")
    assert not offers_answer(focus, "The rotation ratio is 3:45.")
    assert not offers_answer(focus, "Build 2:10 changed the rotation.")
    assert not offers_answer(focus, "You may swap a week with a teammate.")
    # a time the question says is no answer to it
    standup = focus_of("what day does the 10:00 standup move", [])
    assert not offers_answer(standup, "The 10:00 standup is held in room 3.")
    assert offers_answer(standup, "The 10:00 standup moves to Wednesdays.")
    rotation = _titled(
        "r",
        "On-call",
        "Each product team runs its own on-call rotation. Rotations are one week long, from Tuesday "
        "10:00 to the next Tuesday 10:00, with a primary and a secondary engineer.",
        9.0,
    )
    limits = _titled(
        "l",
        "On-call limits",
        "Nobody is on call more than one week in four. After a night with more than two pages, the "
        "on-call engineer starts the next day late.",
        8.0,
    )
    answer = synthesize_extractive(
        _asked(question, "places"), [_finding("places", [rotation, limits], [])], ResearchLimits()
    )
    texts = [sentence.text for section in answer.sections for sentence in section.sentences]
    assert answer.found
    assert any("from Tuesday 10:00" in t for t in texts)
    # A "when" question's sentence needs two key terms still: a weekday said in passing is no
    # answer to "when is the year-end freeze" ("go to the Monday sync").
    freeze = _titled(
        "fr", "Deploys", "No deploys happen during the year-end freeze, from December 20 to January 3.", 9.0
    )
    sync = _titled("sy", "Meetings", "Questions about the freeze go to the Monday sync.", 8.0)
    answer = synthesize_extractive(
        _asked("when is the year-end freeze", "places"),
        [_finding("places", [freeze, sync], [])],
        ResearchLimits(),
    )
    texts = [sentence.text for section in answer.sections for sentence in section.sentences]
    assert texts == ["No deploys happen during the year-end freeze, from December 20 to January 3."]
    # A question that names something is answered by sentences about it: one key term and a
    # date are not enough there (a sentence of another subject's "final years").
    question = "In what year did Kestrel Systems open the Lisbon office?"
    office = _titled("a", "Kestrel Systems", "Kestrel Systems opened the Lisbon office in 2019.", 9.0)
    market = _titled(
        "b", "Porto market", "In its final years the old market, founded in 1880, drew crowds.", 8.5
    )
    answer = synthesize_extractive(
        _asked(question, "places"), [_finding("places", [office, market], [])], ResearchLimits()
    )
    texts = [sentence.text for section in answer.sections for sentence in section.sentences]
    assert texts == ["Kestrel Systems opened the Lisbon office in 2019."]


def _bridge_findings(second_hop: list[Passage]) -> list[Finding]:
    """A bridge question's rounds: the first finds the film's passage, which names its director;
    the follow-up for the director finds ``second_hop``."""
    film = _titled(
        "f",
        "Big Hollow Bend (film)",
        "Big Hollow Bend is a 2014 American drama romantic comedy film written and directed by "
        "Delia Fontaine. The story is set in the actual Virginia town of Big Hollow Bend. It opened "
        "in New York in October 2014.",
        9.0,
    )
    others = [
        _titled(
            f"o{i}",
            f"Town {i}, Virginia",
            f"Town {i} is a small town in Virginia, far from the city.",
            4.0 - i,
        )
        for i in range(3)
    ]
    first = _finding("places", [film, *others], [])
    follow = Finding(
        collection="places",
        status="ok",
        passages=tuple(second_hop),
        round=2,
        entity="Delia Fontaine",
        origin="f",
    )
    return [first, follow]


BRIDGE = 'The director of the romantic comedy "Big Hollow Bend" is based in what New York city?'


def test_a_bridge_question_whose_second_hop_is_missing_is_not_found() -> None:
    # The follow-up for the director found only a passage that mentions her, none about her.
    mention = _titled("m", "Lucia, Lucia", "Lucia, Lucia is a novel by Delia Fontaine set in 1950.", 3.0)
    answer = synthesize_extractive(_asked(BRIDGE, "places"), _bridge_findings([mention]), ResearchLimits())
    assert not answer.found
    # The first hop is offered as the closest thing, never as the answer.
    assert all("Fontaine" not in s.text or "directed" in s.text for s in answer.closest)


def test_a_bridge_question_with_its_second_hop_is_answered() -> None:
    director = _titled(
        "d",
        "Delia Fontaine",
        "Delia Fontaine is an Italian American best-selling author of sixteen books, television "
        "writer, film director, and entrepreneur based in Greenwich Village, New York City.",
        3.0,
    )
    answer = synthesize_extractive(_asked(BRIDGE, "places"), _bridge_findings([director]), ResearchLimits())
    assert answer.found
    texts = " ".join(sentence.text for section in answer.sections for sentence in section.sentences)
    assert "Greenwich Village" in texts


SCREENWRITER = 'What screenwriter with credits for "Moonfall Harbor" co-wrote a film starring Dana Whitlow?'
FILM = _titled(
    "film",
    "The Lantern Keeper",
    "The Lantern Keeper is a 2001 American drama film directed by Ray Holt, written by Sam Ortiz "
    "and Peter Vance, and starring Dana Whitlow. It was shot in Maine.",
    9.0,
)
FILLER = [
    _titled(
        f"x{i}",
        f"Harbor Town {i}",
        f"Harbor Town {i} is a fishing village in Maine with a lighthouse and a small film festival.",
        4.0 - i,
    )
    for i in range(4)
]


def test_a_bridge_answered_across_two_linked_passages_is_found() -> None:
    # The question names the film's star and the writer's other work, never the film or the writer:
    # no passage is *about* what it names. The film's passage names the writer, whose passage
    # says the rest; together they answer.
    writer = _titled(
        "writer",
        "Peter Vance",
        'Peter Vance is an American screenwriter. His screenwriting credits include "Moonfall '
        'Harbor" (1998).',
        7.0,
    )
    answer = synthesize_extractive(
        _asked(SCREENWRITER, "places"), [_finding("places", [FILM, writer, *FILLER], [])], ResearchLimits()
    )
    assert answer.found
    texts = " ".join(sentence.text for section in answer.sections for sentence in section.sentences)
    assert "written by Sam Ortiz and Peter Vance" in texts
    assert 'credits include "Moonfall Harbor"' in texts


def test_the_second_link_of_a_bridge_stays_in_an_answer_cut_to_what_answers() -> None:
    """Read alone, the writer's sentence is far from the whole question, and the answer judge
    finds it unrelated; it stays, because the film's kept passage names the writer its passage is
    about: the second link of what was asked is no padding."""
    writer = _titled(
        "writer",
        "Peter Vance",
        'Peter Vance is an American screenwriter. His screenwriting credits include "Moonfall '
        'Harbor" (1998).',
        7.0,
    )
    passages = [FILM, writer, *FILLER]
    read = {(p.id, sentence): 0.1 for p, sentence in candidates(passages)}
    read[(FILM.id, FILM.text.split(". ")[0] + ".")] = 0.8
    judged = Closeness(cosines=read, question=np.zeros(2, dtype=np.float32))
    judges = judges_by({"cosine": 8.0}, bias=-4.0, answers=0.5, related=0.3)
    answer = synthesize_extractive(
        _asked(SCREENWRITER, "places"),
        [_finding("places", passages, [])],
        ResearchLimits(),
        judged_closeness=judged,
        judges=judges,
    )
    texts = " ".join(sentence.text for section in answer.sections for sentence in section.sentences)
    assert 'credits include "Moonfall Harbor"' in texts
    assert not any(
        "Harbor Town" in sentence.text for section in answer.sections for sentence in section.sentences
    )


def test_a_sentence_naming_another_of_the_questions_names_stays_in_an_answer_cut_to_what_answers() -> None:
    """Each genus is in its own passage; the judge reads the second one's sentence as unrelated, but
    it is the only one naming Bactris: it carries a part of the ask and stays."""
    epigaea = _titled(
        "epigaea", "Epigaea", "Epigaea is a genus comprising three species of flowering plants.", 9.0
    )
    bactris = _titled("bactris", "Bactris", "Bactris is a genus of spiny palms with 77 species.", 8.0)
    passages = [epigaea, bactris, *FILLER]
    read = {(p.id, sentence): 0.1 for p, sentence in candidates(passages)}
    read[(epigaea.id, epigaea.text)] = 0.8
    judged = Closeness(cosines=read, question=np.zeros(2, dtype=np.float32))
    answer = synthesize_extractive(
        _asked("Which genus has more species, Bactris or Epigaea?", "places"),
        [_finding("places", passages, [])],
        ResearchLimits(),
        judged_closeness=judged,
        judges=judges_by({"cosine": 8.0}, bias=-4.0, answers=0.5, related=0.3),
    )
    texts = " ".join(sentence.text for section in answer.sections for sentence in section.sentences)
    assert "three species" in texts and "77 species" in texts


def test_two_linked_passages_that_repeat_each_other_do_not_make_a_bridge() -> None:
    # The writer's own passage is gone: what is left is the film and a festival passage that names
    # the film and the words of the question without saying who wrote what. Their link adds
    # nothing to what the festival's passage carries alone.
    festival = _titled(
        "festival",
        "Maine Harbor Film Festival",
        "The 2001 Maine Harbor Film Festival screened The Lantern Keeper, a drama film starring "
        'Dana Whitlow, and honoured the screenwriting credits of "Moonfall Harbor".',
        7.0,
    )
    answer = synthesize_extractive(
        _asked(SCREENWRITER, "places"), [_finding("places", [FILM, festival, *FILLER], [])], ResearchLimits()
    )
    assert not answer.found


def test_once_a_sentence_names_the_question_entities_the_next_brings_the_rest_of_the_ask() -> None:
    # Many sentences repeat who created the series; only one says when the character came in.
    character = _titled(
        "k",
        "Vela Storm",
        'Vela Storm is a character in "Skyline Tales", created by Ana Ruiz and Tom Berg. '
        "Introduced in the second season, she becomes the main antagonist of the third season.",
        9.0,
    )
    echoes = [
        _titled(
            f"e{i}",
            f"Skyline Tales (season {i})",
            f"Season {i} of the animated series was created by Ana Ruiz and Tom Berg, "
            f"and aired on Channel {i} in 2010.",
            8.0 - i,
        )
        for i in range(1, 6)
    ]
    question = (
        "In what season was the character introduced who becomes the main antagonist of the "
        "animated series created by Ana Ruiz and Tom Berg?"
    )
    answer = synthesize_extractive(
        _asked(question, "places"), [_finding("places", [character, *echoes], [])], ResearchLimits()
    )
    assert answer.found
    texts = [sentence.text for section in answer.sections for sentence in section.sentences]
    introduced = next(i for i, t in enumerate(texts) if t.startswith("Introduced in the second season"))
    assert introduced <= 1, texts


def test_a_name_is_found_only_as_whole_words() -> None:
    # A kept sentence leads to another passage when it names that passage's subject as whole
    # words (case aside), read as the pattern (?<!\w)name(?!\w) reads it.
    import random
    import re

    from retrieval.names import mentions as _names

    assert _names("He is the brother of Bill Murray, an actor.", "bill murray")
    assert _names("Murray", "Murray")
    assert not _names("He played at Murrayfield.", "Murray")
    assert not _names("the_Murray show", "Murray")
    assert _names("aa a", "a")  # the second occurrence stands alone
    rng = random.Random(5)
    alphabet = "ab _.é1"
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
        expected = re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", text.lower()) is not None
        assert _names(text, name) == expected, (text, name)


def _scored(pid: str, collection: str, score: float) -> Passage:
    return Passage(id=pid, collection=collection, doc_id=pid, source=pid, title=pid, text="x", score=score)


def test_each_sub_query_leads_with_its_best_passage() -> None:
    people = Finding(
        collection="people",
        status="ok",
        passages=(_scored("both", "people", 9.0), _scored("a", "people", 5.0), _scored("b", "people", 4.0)),
        rankings=(
            QueryHits(slot=0, hits=(("both", 9.0),)),
            QueryHits(slot=1, hits=(("a", 5.0),)),
            QueryHits(slot=2, hits=(("b", 4.0),)),
        ),
    )
    film = Finding(
        collection="film",
        status="ok",
        passages=(_scored("b2", "film", 4.5),),
        rankings=(QueryHits(slot=2, hits=(("b2", 4.5),)),),
    )
    assert [p.id for p in merge_passages([people, film])] == ["a", "b2", "both", "b"]


def _answered(question: str, passages: list[Passage]) -> list[str]:
    answer = synthesize_extractive(
        _asked(question, "places"), [_finding("places", passages, [])], ResearchLimits()
    )
    return [sentence.text for section in answer.sections for sentence in section.sentences]


_FILLER = [
    _titled(
        f"o{i}", f"Town {i}", f"Town {i} is a market town with a railway station and {i} schools.", 4.0 - i
    )
    for i in range(4)
]


def test_a_question_spelling_a_name_with_diacritics_is_answered_from_a_passage_without_them() -> None:
    river = _titled(
        "r",
        "Tekeze River",
        "The Tekeze River rises in the Ethiopian Highlands near Lalibela. The Tekeze is 608 kilometres long.",
        9.0,
    )
    assert "The Tekeze is 608 kilometres long." in _answered(
        "How long is the Tekezé River?", [river, *_FILLER]
    )


def test_a_question_naming_an_entity_in_the_possessive_keeps_it_named() -> None:
    from graph.research.question import key_entities

    assert key_entities("When did the Confederation's congress first meet?") == ("Confederation",)
    assert key_entities("When did the Confederation’s congress first meet?") == ("Confederation",)
    congress = _titled(
        "c",
        "Congress of the Confederation",
        "The Congress of the Confederation first met on 2 March 1781. It sat in Philadelphia.",
        9.0,
    )
    texts = _answered("When did the Confederation's congress first meet?", [congress, *_FILLER])
    assert "The Congress of the Confederation first met on 2 March 1781." in texts


def test_the_sentence_that_continues_the_answer_follows_it() -> None:
    # "IT revokes the key …" shares no word with the question, but goes on about the answer's key.
    lost = _titled(
        "k1",
        "Lost keys",
        "Report a lost security key to the help desk within one hour. "
        "IT revokes the key and issues a temporary one that expires after seven days. "
        "The help desk is staffed from 8 to 18 on weekdays.",
        5.0,
    )
    plan = _asked("who do I tell about a lost security key", "places")
    selection = choose_claims(plan, [_finding("places", [lost], [])], ResearchLimits(), from_passages=True)
    claims = [c.text for c, _ in selection.claims]
    assert claims[:2] == [
        "Report a lost security key to the help desk within one hour.",
        "IT revokes the key and issues a temporary one that expires after seven days.",
    ]


def test_a_continuation_never_crosses_a_heading_or_a_question_nor_repeats_the_answer() -> None:
    faq = _titled(
        "f1",
        "Time off FAQ",
        "Can I carry over unused vacation days? Yes, up to five vacation days carry over to March. "
        "Do sick days expire? No, sick days are not limited and never expire.",
        5.0,
    )
    plan = _asked("can unused vacation days carry over", "places")
    selection = choose_claims(plan, [_finding("places", [faq], [])], ResearchLimits(), from_passages=True)
    assert "No, sick days are not limited and never expire." not in [c.text for c, _ in selection.claims]
    sections = _titled(
        "s1",
        "Sick leave",
        "For absences longer than five working days, a doctor's note is needed.\n\n"
        "Company days off\n\n"
        "The office closes between December 24 and January 1. These days are not taken from your leave.",
        5.0,
    )
    plan = _asked("do I need a doctor's note when I am off sick", "places")
    selection = choose_claims(
        plan, [_finding("places", [sections], [])], ResearchLimits(), from_passages=True
    )
    claims = [c.text for c, _ in selection.claims]
    assert claims[:1] == ["For absences longer than five working days, a doctor's note is needed."]
    assert "The office closes between December 24 and January 1." not in claims
