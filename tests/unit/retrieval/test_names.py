import random
import re

from retrieval.names import (
    acronyms_in,
    expansion_of,
    find_names,
    is_name_word,
    leading_name,
    mentions,
    name_words,
    names_in,
)


def test_names_are_capitalised_runs_with_the_small_words_inside_them() -> None:
    assert names_in("He banked with the Bank of America in Vincent van Gogh's town.") == [
        "Bank of America",
        "Vincent van Gogh",
    ]
    assert names_in("How many members did Letters to Cleo have?") == ["Letters to Cleo"]
    assert names_in("Starter plans, Growth and Enterprise plans") == ["Growth", "Enterprise"]


def test_a_possessive_names_its_owner() -> None:
    assert names_in("Who led the Confederation's army?") == ["Confederation"]
    assert names_in("Who was Akinoshu Kenji’s father?") == ["Akinoshu Kenji"]


def test_names_keep_their_diacritics_and_hyphens() -> None:
    assert names_in("Where does the Tekezé River rise?") == ["Tekezé River"]
    assert names_in("She met Émile Zola.") == ["Émile Zola"]
    assert names_in("Is Medi-Gel covered in a SEV-1?") == ["Medi-Gel", "SEV-1"]


def test_a_word_capitalised_for_its_place_is_no_name() -> None:
    assert names_in("Considered the best, it won.") == []
    assert names_in("What does Kestrel pay?") == ["Kestrel"]  # the question word opens it
    assert names_in("However, Smith left on Monday in March.") == ["Smith"]
    assert names_in("Heading\nParental leave is 20 weeks.") == []  # a line's first word
    assert is_name_word("Smith") and is_name_word("Monday")  # a guard still checks a changed day
    assert not is_name_word("However") and not is_name_word("The") and not is_name_word("smith")
    assert name_words("Smith founded Acme.", sentences=False) == {"smith", "acme"}


def test_german_nouns_are_capitalised_so_only_runs_and_acronyms_are_names() -> None:
    assert names_in("Wie lange dauert die Elternzeit?", language="de") == []
    assert names_in("Die Elternzeit bei Kestrel Systems dauert 20 Wochen.", language="de") == [
        "Kestrel Systems"
    ]
    assert [n.text for n in find_names("Gilt das für die IT?", language="de")] == ["IT"]


def test_quoted_titles_are_names() -> None:
    assert names_in('The director of "Big Hollow Bend" lives in what New York city?') == [
        "Big Hollow Bend",
        "New York",
    ]


def test_the_name_a_fragment_starts_with() -> None:
    assert leading_name("Screaming Trees, had more members") == "Screaming Trees"
    assert leading_name("The Beatles had more") == "The Beatles"
    assert leading_name('"Foo Bar" had more') == '"Foo Bar"'
    assert leading_name("had more members") == ""


def test_a_name_is_mentioned_only_as_whole_words_case_and_diacritics_aside() -> None:
    assert mentions("He is the brother of Bill Murray, an actor.", "bill murray")
    assert mentions("The Tekeze rises in the highlands.", "Tekezé")
    assert not mentions("He played at Murrayfield.", "Murray")
    assert not mentions("the_Murray show", "Murray")
    assert mentions("aa a", "a")  # the second occurrence stands alone
    rng = random.Random(5)
    alphabet = "ab _.1"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
        expected = re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", text.lower()) is not None
        assert mentions(text, name) == expected, (text, name)


def test_acronyms_are_the_words_written_in_capitals() -> None:
    assert acronyms_in("do MRs for the CMS need a QA sign-off before the 9 AM release?") == [
        "mr",
        "cms",
        "qa",
    ]
    # Common words written in capitals, a word of seven letters, or a shouted question: none.
    assert acronyms_in("Is it OK to use it in the US? A NATIONWIDE rule") == []
    assert acronyms_in("WHAT IS THE QA RULE") == []


def test_an_acronym_is_spelled_out_by_the_words_written_most_with_its_initials() -> None:
    texts = [
        "Each merge request needs one approval. Merge requests over 500 lines are split.",
        "Marketing. Requests for a logo go to design.",  # "marketing" ends a phrase
    ]
    assert expansion_of("mr", texts) == "merge request"
    assert (
        expansion_of("fbi", ["the Federal Bureau of Investigation said"]) == "federal bureau of investigation"
    )
    # Small words count as letters inside ("work from home") but never start one ("is on call").
    assert expansion_of("wfh", ["you may work from home on Fridays"]) == "work from home"
    assert expansion_of("ic", ["the engineer is on call in chat"]) == ""
    # Nor end one: "one of our" and "roll out in" spell nothing.
    assert expansion_of("ooo", ["one of our teams"]) == ""
    assert expansion_of("roi", ["we roll out in stages"]) == ""
    # A whole phrase, a title or a heading, may: "Paid time off" spells "PTO", inside a sentence not.
    assert expansion_of("pto", ["Paid time off. Everyone gets 27 days of paid time off"]) == "paid time off"
    assert expansion_of("pto", ["Everyone gets 27 days of paid time off per year"]) == ""
    assert expansion_of("ooo", ["Out of office › Auto-replies", "one of our teams"]) == "out of office"
    # A content word at the ends goes first: "of" ends no run where "operations" can.
    assert expansion_of("fbo", ["Federal bureau of operations"]) == "federal bureau of operations"
    # Two spellings written as often: none is the one meant ...
    assert expansion_of("mr", ["a merge request", "the monthly report"]) == ""
    # ... unless the texts that say more of the question weigh more.
    assert expansion_of("mr", ["a merge request", "the monthly report"], [2.0, 1.0]) == "merge request"
