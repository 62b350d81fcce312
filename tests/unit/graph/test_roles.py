"""The roles guard: names moved into each other's places are refused; paraphrases that keep every
name in its role (voice, appositions, lists, shorter names, repeated names) are kept."""

import pytest

from bot.evaluation.faithfulness import mutate
from graph.verify.guards import check
from graph.verify.roles import placement, roles_ok

PASSAGE = (
    "In 1990, John Smith succeeded Mary Jones as chairman of Acme. "
    "Smith, the son of Paul Brown, founded Zenith in 1985. "
    "Customer data is stored in Frankfurt and Dublin. "
    "The band was led by Lesley Woods, who was once described as one of the most striking women in "
    "British rock. "
    "No deploys happen during the freeze, from December 20 to January 3, except fixes. "
    "It was renamed the Susan Thompson Buffett Foundation in honor of his wife Susan Buffett when she "
    "died in 2004. "
    "Zenith was acquired by Acme in 2001. Smith married Jones in 1992. "
    "The film was directed by Nora Ephron and produced by Lynda Obst. "
    "The plans are Starter, Growth and Enterprise."
)


@pytest.mark.parametrize(
    "sentence",
    [
        "Mary Jones succeeded John Smith as chairman of Acme.",
        "In 1990, Mary Jones succeeded John Smith as chairman of Acme.",
        "Jones succeeded Smith as chairman of Acme.",  # the swap with the names said shorter
        "Brown, the son of Smith, founded Zenith in 1985.",
        "The band was led by British, who was once described as one of the most striking women in "
        "Lesley Woods rock.",
        "No deploys happen during the freeze, from January 20 to December 3, except fixes.",
        "It was renamed the Susan Buffett in honor of his wife Susan Thompson Buffett Foundation when "
        "she died in 2004.",
        "Acme was acquired by Zenith in 2001.",
        "The film was directed by Lynda Obst and produced by Nora Ephron.",
        "John Smith was succeeded by Mary Jones as chairman of Acme.",  # swapped while made passive
        "Zenith acquired Acme in 2001.",  # swapped while made active
    ],
)
def test_roles_swapped_names_are_refused(sentence: str) -> None:
    assert check(sentence, [PASSAGE]) == "roles"


@pytest.mark.parametrize(
    "sentence",
    [
        "John Smith succeeded Mary Jones as chairman of Acme.",
        "Smith succeeded Jones as chairman of Acme.",  # names said shorter
        "Mary Jones was succeeded by John Smith as chairman of Acme.",  # passive voice
        "Acme acquired Zenith in 2001.",  # active voice
        "Smith founded Zenith in 1985.",  # the apposition left out
        "Customer data is stored in Dublin and Frankfurt.",  # a list in another order
        "The plans are Enterprise, Starter and Growth.",
        "Jones married Smith in 1992.",  # married, met, with: either way round
        "The film was produced by Lynda Obst and directed by Nora Ephron.",  # clauses reordered
        "The band was led by Lesley Woods, once described as one of the most striking women in British rock.",
    ],
)
def test_roles_paraphrases_keeping_every_name_in_its_role_pass(sentence: str) -> None:
    assert check(sentence, [PASSAGE]) is None


def test_roles_a_second_anchor_stating_the_arrangement_keeps_the_sentence() -> None:
    passage = "Arsenal beat Chelsea in the cup final. Chelsea beat Arsenal in the league."
    assert check("Chelsea beat Arsenal in the cup final.", [passage]) == "roles"
    assert check("Chelsea beat Arsenal in the league.", [passage]) is None
    assert roles_ok(
        "Chelsea beat Arsenal.", ["Arsenal beat Chelsea in the cup final.", "Chelsea beat Arsenal."]
    )


def test_roles_a_repeated_name_between_the_same_words_is_not_a_swap() -> None:
    anchor = "Smith met Jones in Paris, and Jones later hired Smith as his deputy."
    assert placement("Jones later hired Smith as his deputy.", anchor) != "swapped"
    assert placement("Smith later hired Jones as his deputy.", anchor) == "swapped"


def test_roles_the_suites_swap_is_caught_unless_it_only_reorders_a_list() -> None:
    sentence = "The award went to Ann Lee, the niece of Tom Hale, in 2001."
    swapped = mutate(sentence, "roles")
    assert swapped == "The award went to Tom Hale, the niece of Ann Lee, in 2001."
    assert check(swapped, [sentence]) == "roles"
    listed = "The award went to Ann Lee and Tom Hale in 2001."
    assert mutate(listed, "roles") is None  # the suite no longer counts a reordered list as a swap
    assert check("The award went to Tom Hale and Ann Lee in 2001.", [listed]) is None


def test_roles_a_list_of_agents_keeps_its_roles_in_either_voice() -> None:
    assert (
        check("Acme was founded by Smith and Jones in 1990.", ["Smith and Jones founded Acme in 1990."])
        is None
    )
    assert (
        check("Jones and Smith founded Acme in 1990.", ["Acme was founded by Smith and Jones in 1990."])
        is None
    )
    assert check("Acme founded Smith in 1990.", ["Acme was founded by Smith in 1990."]) == "roles"


def test_roles_sentences_with_fewer_than_two_names_are_left_alone() -> None:
    assert placement("Smith founded it in 1985.", "Smith founded Zenith in 1985.") == "neutral"
    assert placement("It was founded in 1985.", "Smith founded Zenith in 1985.") == "neutral"
