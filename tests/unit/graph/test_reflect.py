"""Reflection between rounds: which names are followed up, how model proposals are checked, and
where a follow-up's passage ranks."""

import time

from graph.answer.evidence import merge_passages
from graph.models import Finding, Question
from graph.research.reflect import (
    ProposedFollowUp,
    ReflectOutput,
    bridge_entities,
    heuristic_leads,
    is_about,
    keep_second,
    validate_proposals,
)
from retrieval.names import names_in
from retrieval.passages import Passage


def _p(pid: str, title: str, text: str, score: float = 1.0, collection: str = "c") -> Passage:
    return Passage(
        id=pid, collection=collection, doc_id=pid, source=f"{pid}.jsonl", title=title, text=text, score=score
    )


FILM = _p(
    "f1",
    "Big Hollow Bend (film)",
    "Big Hollow Bend is a 2014 American romantic comedy film written and directed by Delia Fontaine. "
    "It was shot in Virginia and released by Picturehouse.",
    9.0,
)
OTHER = _p("f2", "Tidewater (film)", "Tidewater is a 1990 comedy starring Solenne and Maren Vale.", 4.0)
DIRECTOR = _p("p1", "Delia Fontaine", "Delia Fontaine is a novelist from Virginia.", 6.0, "people")
QUESTION = Question(
    text="Which state is the director of the romantic comedy Big Hollow Bend from?",
    allowed=("c", "people"),
)


def test_names_are_capitalised_runs_and_titles_not_sentence_openers_or_numbers() -> None:
    text = (
        "Allowances are paid monthly. Waimea Bay and Sunset Beach host 25-foot waves in 1969, "
        'says the "Kingdom of the Isles" guide by Van Artsdalen.'
    )
    assert names_in(text) == ["Kingdom of the Isles", "Waimea Bay", "Sunset Beach", "Van Artsdalen"]
    assert names_in('He said "reddish water" in March.') == []


def test_the_bridge_entity_is_the_name_in_the_sentence_that_covers_the_question() -> None:
    leads = bridge_entities(QUESTION, [FILM, OTHER], limit=3)
    assert leads[0].entity == "Delia Fontaine" and leads[0].origin == "f1"
    # The question's own subject is never a lead, nor is a passage's own title.
    assert all(lead.entity != "Big Hollow Bend" for lead in leads)


def test_a_name_already_among_the_best_two_passages_is_not_followed_up() -> None:
    assert all(lead.entity != "Delia Fontaine" for lead in bridge_entities(QUESTION, [FILM, DIRECTOR], 3))


def test_a_comparison_follows_up_only_the_side_without_a_passage() -> None:
    question = Question(text="Who is older, Solenne or Delia Fontaine?", allowed=("c",))
    leads = heuristic_leads(question, "comparative", ("Solenne", "Delia Fontaine"), [DIRECTOR, FILM], 3)
    assert [lead.entity for lead in leads] == ["Solenne"]


def test_heuristic_reflection_takes_a_few_milliseconds() -> None:
    passages = [FILM, OTHER, DIRECTOR] * 3
    started = time.process_time()
    for _ in range(50):
        heuristic_leads(QUESTION, "factual", (), passages, 3)
    per_round = (time.process_time() - started) / 50
    assert per_round < 0.05  # generous: a few ms on a shared machine


def test_is_about_compares_the_name_with_the_title() -> None:
    assert is_about(FILM, "Big Hollow Bend") and is_about(DIRECTOR, "Delia Fontaine")
    assert not is_about(FILM, "Delia Fontaine")


def test_model_proposals_are_kept_only_within_the_rules() -> None:
    output = ReflectOutput(
        follow_ups=[
            ProposedFollowUp(entity="Delia Fontaine", query="Delia Fontaine", collection="secret"),
            ProposedFollowUp(entity="A", query="   ", collection="people"),
            ProposedFollowUp(
                entity="Delia Fontaine", query=" Delia  Fontaine ", collection="people", source=1
            ),
            ProposedFollowUp(entity="Delia Fontaine", query="delia fontaine", collection="people"),
            ProposedFollowUp(entity="Solenne", query="Solenne", collection="c", source=9),
            ProposedFollowUp(entity="Maren Vale", query="Maren Vale", collection="c"),
        ]
    )
    kept = validate_proposals(output, ("c", "people"), ["f1"], "f0", limit=2)
    assert kept is not None
    assert [(p.lead.query, p.collection, p.lead.origin) for p in kept] == [
        ("Delia Fontaine", "people", "f1"),
        ("Solenne", "c", "f0"),  # an out-of-range source falls back to the top passage
    ]
    bad = ReflectOutput(follow_ups=[ProposedFollowUp(entity="x", query="x", collection="secret")])
    assert validate_proposals(bad, ("c",), [], "f0", limit=3) is None  # none usable: use the heuristic
    assert validate_proposals(ReflectOutput(), ("c",), [], "f0", limit=3) == []  # nothing missing


def _follow_up(passages: list[Passage], entity: str, origin: str) -> Finding:
    return Finding(
        collection="people", status="ok", passages=tuple(passages), round=2, entity=entity, origin=origin
    )


def test_a_followed_entity_ranks_right_after_the_passage_that_named_it() -> None:
    third = _p("f3", "Ivo Marsh (film)", "Ivo Marsh is a 1994 film directed by Rafe Calder.", 5.0)
    first = Finding(collection="c", status="ok", passages=(FILM, OTHER, third))
    later = _follow_up(
        [DIRECTOR, _p("p9", "Solenne", "Solenne sings.", 8.0, "people")], "Delia Fontaine", "f1"
    )
    ranked = [p.id for p in merge_passages([first, later])]
    assert ranked == [
        "f1",
        "p1",
        "f3",
        "f2",
        "p9",
    ]  # the first round by score, the rest of the follow-up last


def test_two_passages_that_name_each_other_keep_the_first_two_places() -> None:
    named = _p("f2", "Picturehouse", "Picturehouse released Big Hollow Bend in 2015.", 4.0)
    first = Finding(collection="c", status="ok", passages=(FILM, named))
    later = _follow_up([DIRECTOR], "Delia Fontaine", "f1")
    assert [p.id for p in merge_passages([first, later])] == ["f1", "f2", "p1"]


def test_a_failed_follow_up_changes_nothing_in_the_ranking() -> None:
    first = Finding(collection="c", status="ok", passages=(FILM, OTHER))
    failed = Finding(collection="people", status="failed", reason="search unavailable", round=2)
    assert merge_passages([first, failed]) == merge_passages([first])


def test_a_short_name_inside_a_longer_title_is_not_what_the_passage_is_about() -> None:
    pipeline = _p("x1", "Sichuan–Shanghai gas pipeline", "A pipeline from Sichuan to Shanghai.")
    assert not is_about(pipeline, "Shanghai")
    assert is_about(_p("x2", "Shanghai", "Shanghai is a city."), "Shanghai")


def test_leads_wait_behind_a_second_passage_about_something_else_the_question_names() -> None:
    question = Question(
        text="What occupation did Big Hollow Bend's director share with Solenne?", allowed=("c",)
    )
    cher = _p("p9", "Solenne", "Solenne is a singer and actress.", 5.0)
    leads = bridge_entities(question, [FILM, cher], limit=3)
    assert leads and leads[0].origin == "f1"
    moved = keep_second(question, (), [FILM, cher], leads)
    assert all(lead.origin == "p9" for lead in moved if lead.origin in ("f1", "p9"))
    # A second passage about the same thing as the first does not hold the leads back.
    again = _p("f9", "Big Hollow Bend (novel)", "Big Hollow Bend is a novel.", 5.0)
    assert keep_second(question, (), [FILM, again], leads) == leads


def test_a_name_most_passages_of_several_documents_mention_is_background_not_a_bridge() -> None:
    passages = [
        _p("d1", "Parental leave", "Every parent at Acme Widgets gets 20 weeks of parental leave.", 9.0),
        _p("d2", "Time off", "Staff at Acme Widgets accrue 25 days of leave a year.", 5.0),
        _p(
            "d3",
            "Remote work",
            "Acme Widgets staff back from parental leave may work remotely with Jo Pike approving.",
            4.0,
        ),
    ]
    question = Question(text="How long is parental leave under the Family Act?", allowed=("c",))
    entities = [lead.entity for lead in bridge_entities(question, passages, 3)]
    assert "Acme Widgets" not in entities
    assert "Jo Pike" in entities  # named once: still a possible bridge


def test_a_question_that_names_nothing_has_no_bridge_to_follow() -> None:
    """A chain starts at something the question names: "how many vacation days do we get" asks
    about what the collections hold, and the names its passages mention (the company, the HR
    system) are their setting, not a step it needs."""
    time_off = _p(
        "t1",
        "Paid time off",
        "Everyone at Kestrel Systems gets 27 days of paid time off per year. "
        "Book vacation days in Workday two weeks ahead.",
        9.0,
    )
    question = Question(text="how many vacation days do we get a year", allowed=("c",))
    assert bridge_entities(question, [time_off], 3) == []
    assert heuristic_leads(question, "factual", (), [time_off], 3) == []
    # Named, the same evidence leads on.
    named = Question(text="how many vacation days do we get a year under the Nordic plan", allowed=("c",))
    assert bridge_entities(named, [time_off], 3)


def test_a_question_about_the_names_it_gives_has_no_bridge_to_follow() -> None:
    """ "What is Kubernetes?" is answered by the passage about Kubernetes; the names that passage
    mentions (the platforms built on it) are what it says, not a next link of the question."""
    kubernetes = _p(
        "k1",
        "Kubernetes",
        "Kubernetes is an open source platform for managing containerized workloads. "
        "The Harbor Ledger Platform provisions its components into your Kubernetes cluster.",
        9.0,
    )
    for text in ("What is Kubernetes?", "could you please explain what Kubernetes is"):
        question = Question(text=text, allowed=("c",))
        assert bridge_entities(question, [kubernetes], 3) == []
        assert heuristic_leads(question, "factual", (), [kubernetes], 3) == []
    # Asked for something beyond the name, the same evidence leads on.
    asked = Question(text="Which company maintains the platform that runs on Kubernetes?", allowed=("c",))
    assert [lead.entity for lead in bridge_entities(asked, [kubernetes], 3)] == ["Harbor Ledger Platform"]
    # A name with small words is still a name ("the Department of Veterans Affairs")...
    department = Question(text="What is the Department of Veterans Affairs?", allowed=("c",))
    affairs = _p(
        "v1", "Veterans Affairs", "The Department of Veterans Affairs runs the Harbor Ledger Platform."
    )
    assert bridge_entities(department, [affairs], 3) == []
    # ...but a question whose one name holds the ask ("the Owner of the Kubernetes Cluster") leads on.
    held = Question(text="Who is the Owner of the Kubernetes Cluster?", allowed=("c",))
    assert [lead.entity for lead in bridge_entities(held, [kubernetes], 3)] == ["Harbor Ledger Platform"]


def test_a_name_the_question_gives_that_a_best_passage_mentions_is_not_missing() -> None:
    passages = [
        _p("r1", "API rate limits", "The Beacon API limits each account to 50 requests per second.", 9.0),
        _p("w1", "Webhooks", "Failed webhook deliveries are retried for 24 hours.", 8.0),
    ]
    question = Question(
        text="What is the Beacon API rate limit compared to the webhook retry policy?", allowed=("c",)
    )
    assert [lead.entity for lead in heuristic_leads(question, "comparative", (), passages, 3)] == []
    unnamed = [_p("r2", "API rate limits", "Each account may send 50 requests per second.", 9.0), passages[1]]
    assert [lead.entity for lead in heuristic_leads(question, "comparative", (), unnamed, 3)] == [
        "Beacon API"
    ]


def test_the_bridge_is_the_name_whose_own_words_carry_what_the_question_still_asks() -> None:
    # The opening sentence shares the album's title with the question and names two actors; the
    # name the question leads to is the one "performed by" points at, further on.
    soundtrack = _p(
        "s1",
        "Moonlight Diner (soundtrack)",
        'Moonlight Diner is the soundtrack to the 1989 movie "Moonlight Diner" starring Bill Crane '
        "and Meg Rowe. The songs are performed by singer and pianist Harry Conway, with a big band.",
        9.0,
    )
    film = _p("m1", "Moonlight Diner", "Moonlight Diner is a 1989 romantic comedy film.", 5.0)
    question = Question(
        text='The songs from the soundtrack to "Moonlight Diner" are performed by a singer that has had '
        "how many top 20 albums?",
        allowed=("c",),
    )
    leads = bridge_entities(question, [soundtrack, film], limit=3)
    assert leads[0].entity == "Harry Conway" and leads[0].origin == "s1"


def test_names_the_question_gives_leave_a_follow_up_for_the_best_bridge() -> None:
    # Three names of the question have no passage about them among the best two; the film's
    # director, which the evidence leads to, still gets one of the three follow-ups.
    question = Question(
        text="Which state is the director of Big Hollow Bend, shown at Rome Film Fest, Berlin Film Fest "
        "and Oslo Film Fest, from?",
        allowed=("c",),
    )
    leads = heuristic_leads(question, "factual", (), [FILM, OTHER], 3)
    assert len(leads) == 3
    assert "Delia Fontaine" in [lead.entity for lead in leads]


def test_names_in_a_sentence_that_answers_by_itself_are_not_followed_up() -> None:
    question = Question(text="How long is parental leave under the Family Act?", allowed=("c",))
    answered = _p(
        "l1",
        "Parental leave",
        "Under the Family Act every parent at Acme Widgets receives 20 weeks of parental leave.",
    )
    assert bridge_entities(question, [answered], 3) == []
    # Without the number it asks for, the sentence leaves the question open: its name may lead on.
    open_ = _p("l2", "Parental leave", "Parental leave under the Family Act follows the Leave Handbook.")
    assert "Leave Handbook" in [lead.entity for lead in bridge_entities(question, [open_], 3)]


def test_a_name_in_a_sentence_sharing_nothing_with_the_question_is_no_lead() -> None:
    """A follow-up chases what the question's chain needs: not the company a passage's unrelated
    sentence names ("Kestrel Systems" for a question about pension)."""
    leave = _p(
        "l1",
        "Time off",
        "Everyone at Kestrel Systems gets 27 days of paid time off per year. "
        "Parental leave is handled by Harbor Payroll.",
        5.0,
    )
    question = Question(text="How many days of paid time off do we get per year?", allowed=("c",))
    leads = [lead.entity for lead in bridge_entities(question, [leave], limit=5)]
    assert "Harbor Payroll" not in leads  # its sentence shares no word with the question
