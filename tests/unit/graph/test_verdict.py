"""Yes/no comparison verdicts: stated only when each side's own cited sentence decides them."""

from bot.messages import derived_sentence
from graph.answer.verdict import choose, derive, with_verdict, year_of
from graph.models import Answer, AnswerSection, AnswerSentence, Citation, Plan
from graph.research.question import classify_question, comparison_sides
from graph.verify.guards import check
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
    return None if verdict is None else _words(verdict.sentence)


def _words(sentence: AnswerSentence) -> str:
    """What people read: the graph derives the sentence as data, ``bot/messages.py`` words it."""
    assert sentence.text == "" and sentence.derived is not None
    return derived_sentence(sentence.derived)


DERRICKSON = (
    "Arlo Penrose",
    "Arlo Penrose (born July 16, 1966) is an American director and producer.",
)
WOOD = ("Ivo Marsh", "Edward Davis Wood Jr. (1924 – 1978) was an American filmmaker, actor and writer.")
MCGRATH = ("Tomas Reyne (film director)", "Tomas Reyne (born 1930) is a Scottish film director.")


def test_no_verdict_when_one_side_has_no_sentence() -> None:
    question = "Were Arlo Penrose and Ivo Marsh of the same nationality?"
    assert _verdict(question, DERRICKSON) is None


def test_no_verdict_when_a_side_does_not_state_the_attribute() -> None:
    question = "Were Arlo Penrose and Ivo Marsh of the same nationality?"
    vague = ("Ivo Marsh", "Ivo Marsh was a filmmaker known for low-budget films.")
    assert _verdict(question, DERRICKSON, vague) is None


def test_no_verdict_from_a_negated_sentence() -> None:
    question = "Were Arlo Penrose and Ivo Marsh of the same nationality?"
    negated = ("Ivo Marsh", "Ivo Marsh was not an American citizen by birth.")
    assert _verdict(question, DERRICKSON, negated) is None


def test_both_predicate_yes_needs_every_word_on_each_side() -> None:
    question = "Are Daryl Hall and Gerry Marsden both musicians?"
    hall = ("Daryl Hall", "Daryl Hall is an American rock singer, keyboardist and musician.")
    marsden = ("Gerry Marsden", "Gerry Marsden was an English musician and television personality.")
    singer = ("Gerry Marsden", "Gerry Marsden was an English singer and television personality.")
    assert _verdict(question, hall, marsden) == "Yes: both Daryl Hall and Gerry Marsden are musicians."
    # A singer is not said to be a musician: undecided, not "no".
    assert _verdict(question, hall, singer) is None


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


def test_a_name_read_short_is_read_up_to_both() -> None:
    # The question's reading stops at "Owls": in "X and Y both …" the name runs up to "both".
    question = "Were Glass Harbor and Owls by Night both formed before 2010?"
    harbor = ("Glass Harbor", "Glass Harbor was a Canadian folk band formed in 2001 in Halifax.")
    owls = ("Owls by Night", "Owls by Night was a Danish synth-pop duo formed in 2007.")
    assert _verdict(question, harbor, owls) == "Yes: 2001 for Glass Harbor, 2007 for Owls by Night."
    # Without "both" the rest of the name is unknown: a sentence about "Owls" must not be compared.
    short = "Were Glass Harbor and Owls by Night formed before 2010?"
    assert _verdict(short, harbor, owls) is None


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
    open_question = "Which is older, Arlo Penrose or Ivo Marsh?"
    assert _verdict(open_question, DERRICKSON, WOOD) is None


def test_a_model_written_verdict_is_never_admitted() -> None:
    texts = [DERRICKSON[1], WOOD[1]]
    assert check("Yes, Arlo Penrose and Ivo Marsh are both American.", texts) == "unsupported"
    assert check("No: they are of different nationalities.", texts) == "unsupported"


def test_the_opening_sentence_of_a_sides_passage_decides_without_is() -> None:
    question = "Are both Quillwort and Marsh Fern described as genera?"
    quill = (
        "Quillwort",
        "The genus Quillwort (family Isoetaceae) includes aquatic plants described as genera in 1753.",
    )
    fern = ("Marsh Fern", "Marsh Fern is one of the genera of ferns found in wet meadows.")
    assert _verdict(question, quill, fern) == "Yes: both Quillwort and Marsh Fern are described as genera."


def test_a_later_it_sentence_of_the_sides_own_passage_can_say_yes() -> None:
    question = "Are Moonvine and Tarweed both native to Africa?"
    moon = ("Moonvine", "Moonvine is a genus of climbing plants native to tropical Africa.")
    tar = ("Tarweed", "Tarweed is a genus of shrubs in the daisy family. It is native to Africa and Arabia.")
    answer = _answer(moon, tar)
    # The passage's two sentences quoted as two answer sentences, as the extractive answer does.
    opening, later = tar[1].split(". ")
    sentences = (
        answer.sections[0].sentences[0],
        AnswerSentence(text=opening + ".", citations=(2,)),
        AnswerSentence(text=later, citations=(2,)),
    )
    answer = answer.model_copy(update={"sections": (AnswerSection(collection="c", sentences=sentences),)})
    verdict = derive(question, _plan(question), answer)
    assert (
        verdict is not None
        and _words(verdict.sentence) == "Yes: both Moonvine and Tarweed are native to Africa."
    )
    # An "It" sentence of another passage is not about the side.
    other = ("Tarweed", "Tarweed is a genus of shrubs in the daisy family.")
    elsewhere = ("Daisy family", "It is native to Africa and Arabia.")
    assert _verdict(question, moon, other, elsewhere) is None


def test_kind_words_before_a_name_are_not_part_of_it() -> None:
    question = "Are the documentaries Salt Roads and Iron Bells both American films?"
    salt = ("Salt Roads", "Salt Roads is a 2004 American documentary film about trade routes.")
    bells = ("Iron Bells", "Iron Bells is a 2011 American documentary film by Ann Voss.")
    assert _verdict(question, salt, bells) == "Yes: both Salt Roads and Iron Bells are American films."


def test_which_came_first_names_the_earlier_side_from_each_sides_year() -> None:
    question = "Who was born first, Mara Holt or Jonas Veld?"
    holt = ("Mara Holt", "Mara Holt (born 12 May 1948) is an English novelist.")
    veld = ("Jonas Veld", "Jonas Veld (3 March 1921 – 9 June 1990) was a Dutch painter.")
    answer = with_verdict(question, _plan(question), _answer(holt, veld))
    assert answer.choice == "Jonas Veld" and answer.verdict is None
    opening = answer.sections[0].sentences[0]
    assert _words(opening) == "Jonas Veld was born first: 1948 for Mara Holt, 1921 for Jonas Veld."
    assert opening.citations == (1, 2)
    younger = "Who is younger, Mara Holt or Jonas Veld?"
    choice = choose(younger, _plan(younger), _answer(holt, veld))
    assert choice is not None and _words(choice.sentence).startswith("Mara Holt is younger: ")
    films = "Which film was released first, Grey Wharf or Tin Bell?"
    wharf = ("Grey Wharf", "Grey Wharf is a 1971 British drama film.")
    bell = ("Tin Bell", "Tin Bell is a comedy film released in 1968 by Ardent Pictures.")
    choice = choose(films, _plan(films), _answer(wharf, bell))
    assert choice is not None and _words(choice.sentence) == (
        "Tin Bell was released first: 1971 for Grey Wharf, 1968 for Tin Bell."
    )


def test_no_choice_when_the_years_are_unclear_equal_or_not_the_order_asked() -> None:
    question = "Which film was released first, Grey Wharf or Tin Bell?"
    wharf = ("Grey Wharf", "Grey Wharf is a 1971 British drama film.")
    unclear = ("Tin Bell", "Tin Bell is a comedy film shot in 1969 and shown on television in 1972.")
    same = ("Tin Bell", "Tin Bell is a 1971 comedy film.")
    undated = ("Tin Bell", "Tin Bell is a comedy film by Ardent Pictures.")
    for bell in (unclear, same, undated):
        assert choose(question, _plan(question), _answer(wharf, bell)) is None
    # "first" before a name or a verb is the order in time; before a noun it is a rank.
    named = "which was founded first Grey Wharf or Tin Bell?"
    founded = ("Tin Bell", "Tin Bell is a theatre company founded in 1968.")
    opened = ("Grey Wharf", "Grey Wharf is a theatre company founded in 1971.")
    choice = choose(named, _plan(named), _answer(opened, founded))
    assert choice is not None and choice.side == "Tin Bell"
    ranked = "Who was the first Danish composer to tour abroad, Mara Holt or Jonas Veld?"
    holt = ("Mara Holt", "Mara Holt (born 12 May 1948) is a Danish composer.")
    veld = ("Jonas Veld", "Jonas Veld (3 March 1921 – 9 June 1990) was a Danish composer.")
    assert choose(ranked, _plan(ranked), _answer(holt, veld)) is None
    # "later" of another event is no order of the two sides.
    event = "Which later became a musical, Grey Wharf or Tin Bell?"
    dated = ("Tin Bell", "Tin Bell is a comedy film from 1968.")
    assert choose(event, _plan(event), _answer(wharf, dated)) is None
    published = "Which was first published, Grey Wharf or Tin Bell?"
    assert choose(published, _plan(published), _answer(wharf, same)) is None  # the same year

    rank = "Which band had the first album to chart, Owl Shore or Tin Bell?"
    shore = ("Owl Shore", "Owl Shore is a 1990 rock band.")
    assert choose(rank, _plan(rank), _answer(shore, same)) is None


def test_each_side_with_its_own_kind() -> None:
    question = "Is Brenna Col a mountain pass and Tor Ulla a mountain peak?"
    col = ("Brenna Col", "Brenna Col is a high mountain pass in the Alps.")
    tor = ("Tor Ulla", "Tor Ulla is a mountain peak in the Pamirs.")
    verdict = derive(question, _plan(question), _answer(col, tor))
    assert verdict is not None and verdict.yes
    assert _words(verdict.sentence) == "Yes: Brenna Col is a mountain pass and Tor Ulla is a mountain peak."
    assert verdict.sentence.citations == (1, 2)
    lake = ("Tor Ulla", "Tor Ulla is a lake in the Pamirs.")
    assert _verdict(question, col, lake) is None


def test_a_superlative_predicate_decides_nothing() -> None:
    # "the largest city" needs a ranking, not words present in the sentence ("third largest").
    question = "Is Velmar the capital and Ostra the largest city of Norland?"
    velmar = ("Velmar", "Velmar is the capital of Norland.")
    ostra = ("Ostra", "Ostra is the third largest city of Norland.")
    assert _verdict(question, velmar, ostra) is None


def test_another_things_year_dates_nothing() -> None:
    assert year_of("Dark Harbor is an American film based on the 1960 novel by Ann Lee.", "") is None
    assert year_of("Dark Harbor is an American film first shown in 1962.", "") == 1962
    question = "Which film is older, Dark Harbor or Salt Bay?"
    dark = ("Dark Harbor", "Dark Harbor is an American film based on the 1960 novel by Ann Lee.")
    salt = ("Salt Bay", "Salt Bay is a 1955 British drama film.")
    assert choose(question, _plan(question), _answer(dark, salt)) is None
    # With the question's verb, a sentence without it gives only the subject's own year.
    same = "Were Dark Harbor and Salt Bay released in the same year?"
    born = ("Dark Harbor", "Dark Harbor (born 1955) is a Welsh poet.")
    assert _verdict(same, dark, salt) is None
    assert _verdict(same, ("Dark Harbor", "Dark Harbor is a 1955 American film."), salt) == (
        "Yes: 1955 for Dark Harbor, 1955 for Salt Bay."
    )
    assert _verdict(same, born, salt) is None  # a birth is not a release


def test_with_verdict_opens_the_answer() -> None:
    question = "Are Arlo Penrose and Ivo Marsh both American?"
    answer = with_verdict(question, _plan(question), _answer(DERRICKSON, WOOD))
    assert answer.verdict is True
    assert answer.sections[0].collection == ""
    assert _words(answer.sections[0].sentences[0]) == "Yes: both Arlo Penrose and Ivo Marsh are American."
    assert answer.sections[0].sentences[0].citations == (1, 2)
    assert answer.sections[1].sentences[0].text == DERRICKSON[1]


def test_a_shared_predicate_never_says_no_and_two_nationalities_are_not_one() -> None:
    """ "Both Serbian" is yes only when both sentences say Serbian: a Croatian engineer's sentence
    decides nothing (no table maps nationalities to countries)."""
    question = "Are Nikola Petrović and Ivan Horvat both Serbian?"
    serbian = ("Nikola Petrović", "Nikola Petrović (born 1950) is a Serbian civil engineer.")
    croatian = ("Ivan Horvat", "Ivan Horvat (born 1948) is a Croatian civil engineer.")
    assert _verdict(question, serbian, croatian) is None
    assert _verdict("Are Arlo Penrose and Tomas Reyne both American?", DERRICKSON, MCGRATH) is None


def test_a_predicate_of_place_or_relation_gives_no_verdict() -> None:
    question = "Are Arlo Penrose and Ivo Marsh both from the United States?"
    assert _verdict(question, DERRICKSON, WOOD) is None


def test_who_died_first_reads_deaths_not_births() -> None:
    question = "Who died first, George Archainbaud or Ralph Murphy?"
    archainbaud = (
        "George Archainbaud",
        "George Archainbaud (May 7, 1890 – February 20, 1959) was a French-born director.",
    )
    murphy = ("Ralph Murphy", "Ralph Murphy (May 1, 1895 – February 10, 1967) was an American director.")
    choice = choose(question, _plan(question), _answer(archainbaud, murphy))
    assert choice is not None and choice.side == "George Archainbaud"
    assert (
        _words(choice.sentence)
        == "George Archainbaud died first: 1959 for George Archainbaud, 1967 for Ralph Murphy."
    )
    # Births alone do not say who died first.
    born = ("Ralph Murphy", "Ralph Murphy (born May 1, 1895) was an American director.")
    assert choose(question, _plan(question), _answer(archainbaud, born)) is None
