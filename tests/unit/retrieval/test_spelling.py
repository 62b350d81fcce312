"""A question's misspelt names and long words are read as the passages found write them."""

from retrieval.spelling import respell, spelled_apart

MEMORIAL = (
    "Livesey Hall War Memorial",
    "The Livesey Hall War Memorial commemorates the fallen of World War I and World War II.",
)


def test_a_mistyped_name_is_spelled_as_the_passages_write_it() -> None:
    assert respell("The Livesey Hal War Memorial commemorates which war?", MEMORIAL) == (
        "The Livesey Hall War Memorial commemorates which war?"
    )
    assert respell('Who sang "Withing You Without You"?', ["Within You Without You is a song."]) == (
        'Who sang "Within You Without You"?'
    )
    # Two neighbouring letters swapped, in capitals.
    assert respell("When did the AMRY leave?", ["The ARMY left in May."]) == "When did the ARMY leave?"


def test_a_long_word_is_corrected_outside_names_too() -> None:
    assert respell("which WB supernatrual drama series", ["Charmed is a supernatural drama series."]) == (
        "which WB supernatural drama series"
    )


def test_nothing_changes_without_an_unmistakable_correction() -> None:
    # A short common word is more often another word than a typo.
    assert respell("on the south side of the bay", ["The castle site on the south site."]) == (
        "on the south side of the bay"
    )
    # A word written with another ending is no typo ("procedures", "procedure").
    assert respell("the procedures for a claim", ["The procedure for a claim is simple."]) == (
        "the procedures for a claim"
    )
    # The correction must stand where the word stands: next to the same word as in the question.
    assert respell("The Livesey Hal memorial", ["Hall of fame", "Livesey is a village"]) == (
        "The Livesey Hal memorial"
    )
    # Two candidates one edit away: no guess.
    assert respell("Where is Lake Mara?", ["Lake Mary and Lake Maya are near."]) == "Where is Lake Mara?"
    # Nothing to correct when every word is written.
    assert respell("Livesey Hall War Memorial", MEMORIAL) == "Livesey Hall War Memorial"


def test_a_word_with_a_capital_inside_is_searched_and_read_as_the_passages_write_it_apart() -> None:
    # "MediCal" is read as "medical", another word: the documents write "Medi-Cal".
    assert spelled_apart("How do I apply for MediCal or PayPal?") == ["Medi Cal", "Pay Pal"]
    # A name's short prefix is no part of its own ("McCartney", "DeVito", "iPhone").
    assert spelled_apart("McCartney, DeVito and an iPhone") == []
    passages = ["You can apply for Medi-Cal through your county's office."]
    assert respell("How do I apply for MediCal?", passages) == "How do I apply for Medi-Cal?"
    # Its words in a sentence are not its name written apart.
    assert respell("Is OneDrive allowed?", ["Files live on more than one drive."]) == "Is OneDrive allowed?"
    # Written joined in the passages, it stays as typed.
    assert respell("Is JavaScript allowed?", ["JavaScript is allowed; so is Java Script."]) == (
        "Is JavaScript allowed?"
    )
