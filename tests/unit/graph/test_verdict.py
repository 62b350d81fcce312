"""Yes/no comparison verdicts: stated only when each side's own cited sentence decides them."""

from graph.guards import check
from graph.models import Answer, AnswerSection, AnswerSentence, Citation, Plan
from graph.question import classify_question, comparison_sides
from graph.verdict import choose, derive, nationality, with_verdict, year_of
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
        and verdict.sentence.text == "Yes: both Moonvine and Tarweed are native to Africa."
    )
    # An "It" sentence of another passage is not about the side.
    other = ("Tarweed", "Tarweed is a genus of shrubs in the daisy family.")
    elsewhere = ("Daisy family", "It is native to Africa and Arabia.")
    assert _verdict(question, moon, other, elsewhere) is None


def test_a_narrower_kind_says_the_predicate() -> None:
    question = "Are Lena Orsk and Tom Vail both musicians?"
    orsk = ("Lena Orsk", "Lena Orsk is a Norwegian drummer and songwriter.")
    vail = ("Tom Vail", "Tom Vail (born 1970) is an American pianist and composer.")
    assert _verdict(question, orsk, vail) == "Yes: both Lena Orsk and Tom Vail are musicians."
    writers = "Are Lena Orsk and Tom Vail both writers?"
    orsk_poet = ("Lena Orsk", "Lena Orsk is a Norwegian poet.")
    vail_novelist = ("Tom Vail", "Tom Vail is an American novelist and critic.")
    assert _verdict(writers, orsk_poet, vail_novelist) == "Yes: both Lena Orsk and Tom Vail are writers."
    # A drummer is a musician, not a writer: undecided.
    assert _verdict(writers, orsk, vail_novelist) is None


def test_a_film_directed_by_a_side_makes_it_a_film_director() -> None:
    question = "Are both Ada Kern and Piet Mol film directors?"
    kern = ("Ada Kern", "Ada Kern (born 1950) is a Dutch film director and editor.")
    mol = ("Piet Mol", "Piet Mol (1901 – 1970) was a Belgian screenwriter, director and producer.")
    work = ("Harbour Lights", "Harbour Lights is a 1948 Belgian drama film written and directed by Piet Mol.")
    assert _verdict(question, kern, mol, work) == "Yes: both Ada Kern and Piet Mol are film directors."
    # Only the makers after "by" are credited, and only a film makes a film director.
    starring = ("Harbour Lights", "Harbour Lights is a 1948 film directed by Jan Raes, starring Piet Mol.")
    play = ("Harbour Lights", "Harbour Lights is a 1948 stage play directed by Piet Mol.")
    assert _verdict(question, kern, mol, starring) is None
    assert _verdict(question, kern, mol, play) is None


def test_a_us_state_is_in_america_and_regions_are_not_countries() -> None:
    question = "Are both Brant College and Hollis University located in America?"
    brant = ("Brant College", "Brant College is a private liberal arts college in Akron, Ohio.")
    hollis = ("Hollis University", "Hollis University is an American public research university.")
    assert (
        _verdict(question, brant, hollis)
        == "Yes: both Brant College and Hollis University are located in America."
    )
    assert nationality("Solidago rugosa is a North American species of goldenrod.") == set()
    south = ("Hollis University", "Hollis University is a public university in South America.")
    assert _verdict(question, brant, south) is None


def test_kind_words_before_a_name_are_not_part_of_it() -> None:
    question = "Are the documentaries Salt Roads and Iron Bells both American films?"
    salt = ("Salt Roads", "Salt Roads is a 2004 American documentary film about trade routes.")
    bells = ("Iron Bells", "Iron Bells is a 2011 American documentary film by Ann Voss.")
    assert _verdict(question, salt, bells) == "Yes: both Salt Roads and Iron Bells are American films."


def test_same_director_read_after_directed_by() -> None:
    question = "Were the films Cold Orchard and Paper Moons directed by the same person?"
    orchard = ("Cold Orchard", "Cold Orchard is a 2008 drama film directed by Irish director Nora Quill.")
    moons = ("Paper Moons", "Paper Moons is a 2012 documentary film by Tomas Ek, about lunar maps.")
    assert (
        _verdict(question, orchard, moons)
        == "No: Cold Orchard was directed by Nora Quill, Paper Moons by Tomas Ek."
    )
    same = ("Paper Moons", "Paper Moons is a 2012 comedy film written and directed by Nora Quill.")
    assert (
        _verdict(question, orchard, same)
        == "Yes: Cold Orchard and Paper Moons were both directed by Nora Quill."
    )
    # A name sharing a word may be the same person written another way; not a list of names: nothing.
    quill = ("Paper Moons", "Paper Moons is a 2012 comedy film directed by N. Quill.")
    studio = ("Paper Moons", "Paper Moons is a 2012 comedy film directed by the studio's founder.")
    assert _verdict(question, orchard, quill) is None
    assert _verdict(question, orchard, studio) is None


def test_same_family_read_by_its_latin_name() -> None:
    question = "Are the plants Bellwort and Saltbush in the same family?"
    bell = ("Bellwort", "Bellwort is a genus of flowering plants in the family Colchicaceae.")
    salt = ("Saltbush", "Saltbush is a genus of shrubs in the amaranth family Amaranthaceae.")
    assert (
        _verdict(question, bell, salt)
        == "No: Bellwort is in the family Colchicaceae, Saltbush in the family Amaranthaceae."
    )
    lily = ("Saltbush", "Saltbush is a genus of herbs in the family Colchicaceae.")
    assert _verdict(question, bell, lily) == "Yes: Bellwort and Saltbush are both in the family Colchicaceae."
    two = ("Saltbush", "Saltbush, once put in the family Chenopodiaceae, is in the family Amaranthaceae.")
    assert _verdict(question, bell, two) is None


def test_same_city_province_and_state() -> None:
    city = "Were Rust Parade and The Low Tides formed in the same city?"
    rust = ("Rust Parade", "Rust Parade is a punk band formed in 1994 in Dayton, Ohio.")
    tides = ("The Low Tides", "The Low Tides are a surf band formed in 2003 in Tulsa, Oklahoma.")
    assert _verdict(city, rust, tides) == "No: Dayton, Ohio for Rust Parade, Tulsa, Oklahoma for Low Tides."
    also = ("The Low Tides", "The Low Tides are a surf band formed in 2003 in Dayton, Ohio.")
    assert _verdict(city, rust, also) == "Yes: Dayton, Ohio for both Rust Parade and Low Tides."
    county = ("The Low Tides", "The Low Tides are a surf band formed in 2003 in Greene County, Ohio.")
    assert _verdict(city, rust, county) is None  # a county is not a city
    province = "Are Linfeng and Tuoshan in the same province?"
    lin = ("Linfeng", "Linfeng is a county-level city in Hunan province, China.")
    tuo = ("Tuoshan", "Tuoshan is a town in the south of Yunnan province, China.")
    assert _verdict(province, lin, tuo) == "No: Hunan province for Linfeng, Yunnan province for Tuoshan."
    state = "Are Marrow Lake and Pine Knob in the same state?"
    lake = ("Marrow Lake", "Marrow Lake is a reservoir in Kent County, Michigan.")
    knob = ("Pine Knob", "Pine Knob is a ski area in Clarkston, Michigan.")
    assert _verdict(state, lake, knob) == "Yes: Michigan for both Marrow Lake and Pine Knob."


def test_same_or_different_genre() -> None:
    different = "Do Tin Harvest and North Light belong to different film genres?"
    tin = ("Tin Harvest", "Tin Harvest is a 2006 Canadian documentary film about mining towns.")
    north = ("North Light", "North Light is a 2011 documentary film directed by Ole Brandt.")
    assert (
        _verdict(different, tin, north)
        == "No: Tin Harvest is a documentary film, North Light is a documentary film."
    )
    same = "Are Tin Harvest and North Light of the same genre?"
    horror = ("North Light", "North Light is a 2011 horror film directed by Ole Brandt.")
    assert (
        _verdict(same, tin, north)
        == "Yes: Tin Harvest is a documentary film, North Light is a documentary film."
    )
    # Different words need not be different genres (a film can be both): nothing.
    assert _verdict(same, tin, horror) is None


def test_which_came_first_names_the_earlier_side_from_each_sides_year() -> None:
    question = "Who was born first, Mara Holt or Jonas Veld?"
    holt = ("Mara Holt", "Mara Holt (born 12 May 1948) is an English novelist.")
    veld = ("Jonas Veld", "Jonas Veld (3 March 1921 – 9 June 1990) was a Dutch painter.")
    answer = with_verdict(question, _plan(question), _answer(holt, veld))
    assert answer.choice == "Jonas Veld" and answer.verdict is None
    assert answer.sections[0].sentences[0] == AnswerSentence(
        text="Jonas Veld was born first: 1948 for Mara Holt, 1921 for Jonas Veld.", citations=(1, 2)
    )
    younger = "Who is younger, Mara Holt or Jonas Veld?"
    choice = choose(younger, _plan(younger), _answer(holt, veld))
    assert choice is not None and choice.sentence.text.startswith("Mara Holt is younger: ")
    films = "Which film was released first, Grey Wharf or Tin Bell?"
    wharf = ("Grey Wharf", "Grey Wharf is a 1971 British drama film.")
    bell = ("Tin Bell", "Tin Bell is a comedy film released in 1968 by Ardent Pictures.")
    choice = choose(films, _plan(films), _answer(wharf, bell))
    assert choice is not None and choice.sentence.text == (
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
    assert verdict.sentence.text == "Yes: Brenna Col is a mountain pass and Tor Ulla is a mountain peak."
    assert verdict.sentence.citations == (1, 2)
    lake = ("Tor Ulla", "Tor Ulla is a lake in the Pamirs.")
    assert _verdict(question, col, lake) is None


def test_a_superlative_predicate_decides_nothing() -> None:
    # "the largest city" needs a ranking, not words present in the sentence ("third largest").
    question = "Is Velmar the capital and Ostra the largest city of Norland?"
    velmar = ("Velmar", "Velmar is the capital of Norland.")
    ostra = ("Ostra", "Ostra is the third largest city of Norland.")
    assert _verdict(question, velmar, ostra) is None


def test_each_side_with_its_own_place() -> None:
    question = "Is Alder Field an airport in Ohio and Birch Port a harbour in Maine?"
    alder = ("Alder Field", "Alder Field is a public airport in Dayton, Ohio.")
    birch = ("Birch Port", "Birch Port is a fishing harbour in Newport, Oregon.")
    assert _verdict(question, alder, birch) == "No: Birch Port is given as Oregon, not Maine."


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
