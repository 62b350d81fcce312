"""Yes/no comparison verdicts: stated only when each side's own cited sentence decides them."""

from graph.guards import check
from graph.models import Answer, AnswerSection, AnswerSentence, Citation, Plan
from graph.question import classify_question, comparison_sides
from graph.verdict import derive, nationality, with_verdict, year_of
from retrieval.passages import Passage


def _plan(question: str) -> Plan:
    return Plan(kind=classify_question(question), routing="all", tasks=(), sides=comparison_sides(question))


def _answer(*sides: tuple[str, str]) -> Answer:
    """One quoted sentence per (title, sentence), each citing its own passage."""
    citations = []
    sentences = []
    for n, (title, text) in enumerate(sides, 1):
        passage = Passage(id=f"p{n}", collection="c", doc_id=f"d{n}", source="s", title=title, text=text)
        citations.append(Citation(n=n, passage=passage, quote=text))
        sentences.append(AnswerSentence(text=text, citations=(n,)))
    return Answer(
        mode="extractive",
        kind="comparative",
        sections=(AnswerSection(collection="c", sentences=tuple(sentences)),),
        citations=tuple(citations),
    )


def _verdict(question: str, *sides: tuple[str, str]) -> str | None:
    verdict = derive(question, _plan(question), _answer(*sides))
    return None if verdict is None else verdict.sentence.text


DERRICKSON = (
    "Scott Derrickson",
    "Scott Derrickson (born July 16, 1966) is an American director and producer.",
)
WOOD = ("Ed Wood", "Edward Davis Wood Jr. (1924 – 1978) was an American filmmaker, actor and writer.")
MCGRATH = ("Joseph McGrath (film director)", "Joseph McGrath (born 1930) is a Scottish film director.")


def test_same_nationality_yes_cites_both_sides() -> None:
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    verdict = derive(question, _plan(question), _answer(DERRICKSON, WOOD))
    assert verdict is not None and verdict.yes
    assert verdict.sentence.text == "Yes: Scott Derrickson and Ed Wood are both American."
    assert verdict.sentence.citations == (1, 2)


def test_same_nationality_no_names_each_side() -> None:
    question = "Were Scott Derrickson and Joseph McGrath of the same nationality?"
    assert (
        _verdict(question, DERRICKSON, MCGRATH)
        == "No: Scott Derrickson is American, Joseph McGrath is British."
    )


def test_no_verdict_when_one_side_has_no_sentence() -> None:
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert _verdict(question, DERRICKSON) is None


def test_no_verdict_when_a_side_does_not_state_the_attribute() -> None:
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    vague = ("Ed Wood", "Ed Wood was a filmmaker known for low-budget films.")
    assert _verdict(question, DERRICKSON, vague) is None


def test_no_verdict_from_a_negated_sentence() -> None:
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    negated = ("Ed Wood", "Ed Wood was not an American citizen by birth.")
    assert _verdict(question, DERRICKSON, negated) is None


def test_overlapping_but_different_nationalities_decide_nothing() -> None:
    question = "Do Czesław Miłosz and Scott Derrickson have the same nationality?"
    milosz = ("Czesław Miłosz", "Czesław Miłosz was a Polish-American poet and diplomat.")
    assert nationality(milosz[1]) == {"pl", "us"}
    assert _verdict(question, milosz, DERRICKSON) is None


def test_birthplace_is_not_nationality() -> None:
    assert nationality("Mauritz Stiller was a Russian-born Swedish film director.") == {"se"}
    assert nationality("Tony Gatlif is a French film director of Romani ethnicity.") == {"fr"}
    assert nationality("The band was formed in 1990.") == set()


def test_both_predicate_yes_needs_every_word_on_each_side() -> None:
    question = "Are Daryl Hall and Gerry Marsden both musicians?"
    hall = ("Daryl Hall", "Daryl Hall is an American rock singer, keyboardist and musician.")
    marsden = ("Gerry Marsden", "Gerry Marsden was an English musician and television personality.")
    singer = ("Gerry Marsden", "Gerry Marsden was an English singer and television personality.")
    assert _verdict(question, hall, marsden) == "Yes: both Daryl Hall and Gerry Marsden are musicians."
    # A singer is not said to be a musician: undecided, not "no".
    assert _verdict(question, hall, singer) is None


def test_both_with_a_place_says_no_for_another_place_of_its_kind() -> None:
    question = "Are both Elko Regional Airport and Gerald R. Ford International Airport located in Michigan?"
    elko = ("Elko Regional Airport", "Elko Regional Airport is a public airport in Elko, Nevada.")
    ford = (
        "Gerald R. Ford International Airport",
        "Gerald R. Ford International Airport is a commercial airport in Kent County, Michigan.",
    )
    assert _verdict(question, elko, ford) == "No: Elko Regional Airport is given as Nevada, not Michigan."


def test_both_with_a_nationality_adjective() -> None:
    question = "Are Freakonomics and In the Realm of the Hackers both American documentaries?"
    freak = ("Freakonomics (film)", "Freakonomics is a 2010 American documentary film.")
    realm = (
        "In the Realm of the Hackers",
        "In the Realm of the Hackers is a 2003 Australian documentary film.",
    )
    verdict = _verdict(question, freak, realm)
    assert verdict is not None and verdict.startswith(
        "No: In the Realm of the Hackers is given as Australian"
    )


def test_country_name_matches_its_demonym() -> None:
    question = "Are Goo Goo Dolls and Echosmith both from the United States?"
    dolls = ("Goo Goo Dolls", "Goo Goo Dolls is an American rock band formed in 1986 in Buffalo, New York.")
    echo = ("Echosmith", "Echosmith is an American indie pop band formed in 2009 in Chino, California.")
    assert (
        _verdict(question, dolls, echo) == "Yes: both Goo Goo Dolls and Echosmith are from the United States."
    )


def test_a_demonym_after_the_names_is_the_predicate() -> None:
    question = "Are both Cynthia Mort and George Archainbaud American?"
    mort = ("Cynthia Mort", "Cynthia Mort (born June 18, 1956) is an American director and producer.")
    archainbaud = (
        "George Archainbaud",
        "George Archainbaud (1890 – 1959) was a French-born American film and television director.",
    )
    assert (
        _verdict(question, mort, archainbaud) == "Yes: both Cynthia Mort and George Archainbaud are American."
    )


def test_years_compared_exactly() -> None:
    question = "Were Sound Team and Echosmith both formed before 2010?"
    team = ("Sound Team", "Sound Team was an American rock band formed in 2000 in Austin, Texas.")
    echo = ("Echosmith", "Echosmith is an American indie pop band formed in 2009 in Chino, California.")
    assert _verdict(question, team, echo) == "Yes: 2000 for Sound Team, 2009 for Echosmith."
    later = ("Echosmith", "Echosmith is an American indie pop band formed in 2011 in Chino, California.")
    assert _verdict(question, team, later) == "No: 2000 for Sound Team, 2011 for Echosmith."
    same = "Were The Bomb and Rolling Papers released in the same year?"
    bomb = ("The Bomb (film)", "The Bomb is a documentary film released in 2015 by PBS.")
    papers = ("Rolling Papers", "Rolling Papers is an album by Wiz Khalifa, released in 2011.")
    assert _verdict(same, bomb, papers) == "No: 2015 for Bomb, 2011 for Rolling Papers."
    assert year_of("It ran from 1990 to 1995.", "") is None  # two years: unclear


def test_a_name_read_short_decides_nothing() -> None:
    # The question's reading stops at "Dead": a sentence about "Dead" must not be compared.
    question = "Were Sound Team and Dead by Sunrise both formed before 2010?"
    team = ("Sound Team", "Sound Team was an American rock band formed in 2000 in Austin, Texas.")
    dead = ("Dead by Sunrise", "Dead by Sunrise was an American rock band formed in 2005.")
    assert _verdict(question, team, dead) is None


def test_a_sentence_only_naming_a_side_is_not_about_it() -> None:
    question = "Are both Cypress and Ajuga genera?"
    pine = (
        "Cypress-pine",
        "Cypress-pine is the common name used for three closely related genera of conifers.",
    )
    ajuga = (
        "Ajuga",
        "Ajuga is a genus of 40 species of flowering plants; botanists group such genera by family.",
    )
    assert _verdict(question, pine, ajuga) is None


def test_a_longer_name_is_another_subject() -> None:
    question = "Are both Duke Energy and Affiliated Managers Group based in Massachusetts?"
    florida = (
        "Duke Energy Florida",
        "Duke Energy Florida, formerly Florida Power, was a utility in Florida.",
    )
    amg = (
        "Affiliated Managers Group",
        "Affiliated Managers Group is a company headquartered in Massachusetts.",
    )
    assert _verdict(question, florida, amg) is None


def test_predicates_the_rules_cannot_read_get_no_verdict() -> None:
    question = (
        "Were both the Battle of Stones River and the Battle of Chancellorsville fought in the 19th century?"
    )
    stones = ("Battle of Stones River", "The Battle of Stones River was fought in 1862 in Tennessee.")
    chance = ("Battle of Chancellorsville", "The Battle of Chancellorsville was fought in 1863 in Virginia.")
    assert _verdict(question, stones, chance) is None
    open_question = "Which is older, Scott Derrickson or Ed Wood?"
    assert _verdict(open_question, DERRICKSON, WOOD) is None


def test_with_verdict_opens_the_answer() -> None:
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    answer = with_verdict(question, _plan(question), _answer(DERRICKSON, WOOD))
    assert answer.verdict is True
    assert answer.sections[0].collection == ""
    assert answer.sections[0].sentences[0].text.startswith("Yes:")
    assert answer.sections[1].sentences[0].text == DERRICKSON[1]


def test_a_model_written_verdict_is_never_admitted() -> None:
    texts = [DERRICKSON[1], WOOD[1]]
    assert check("Yes, Scott Derrickson and Ed Wood are both American.", texts) == "unsupported"
    assert check("No: they are of different nationalities.", texts) == "unsupported"
