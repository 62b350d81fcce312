import pytest

from graph.research.question import classify_question, comparison_sides, extract_targets


def test_in_targets_are_taken_out_anywhere_in_the_text() -> None:
    assert extract_targets("in:eng,Security how do deploys work? in:hr") == (
        "how do deploys work?",
        ("eng", "security", "hr"),
    )
    assert extract_targets("what is login:admin about") == ("what is login:admin about", ())


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("hi", "greeting"),
        ("Hello there!", "greeting"),
        ("thanks!", "thanks"),
        ("help", "help"),
        ("   ", "help"),
        ("How do the engineering and security policies differ on production access?", "comparative"),
        ("Which is older, the Eiffel Tower or Big Ben?", "comparative"),
        ("Tell me about on-call", "exploratory"),
        ("How long is parental leave?", "factual"),
        ("hi, how long is parental leave?", "factual"),
        # "between … and …" is a span here, and "is/can … and …" joins two things asked about.
        ("is the office open between christmas and new year", "factual"),
        ("Can I then change my birth and marriage certificate?", "factual"),
        ("In between Liberty and MIT Technology Review which has a larger circulation?", "comparative"),
    ],
)
def test_classify_question(text: str, kind: str) -> None:
    assert classify_question(text) == kind


@pytest.mark.parametrize(
    ("text", "sides"),
    [
        (
            "How do the engineering and security policies differ on production access?",
            ("engineering", "security policies"),
        ),
        ("Which is older, the Eiffel Tower or Big Ben?", ("Eiffel Tower", "Big Ben")),
        ("What is the difference between API keys and single sign-on?", ("API keys", "single sign-on")),
        ("Compare time off with sick leave", ("time off", "sick leave")),
        ("Are Winner and History both boy groups?", ("Winner", "History")),
        (
            "Are the flowering plants Ecballium and Elatostema in the same family?",
            ("flowering plants Ecballium", "Elatostema"),
        ),
        (
            "What is the shared country of ancestry between Art Laboe and Scout Tufankjian?",
            ("Art Laboe", "Scout Tufankjian"),
        ),
        ("is there a budget for books and online courses", ()),
        ("What ended the conflict between the British Raj and the Emirate of Afghanistan?", ()),
        ("How long is parental leave?", ()),
    ],
)
def test_comparison_sides(text: str, sides: tuple[str, ...]) -> None:
    assert comparison_sides(text) == sides
