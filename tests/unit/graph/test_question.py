import pytest

from graph.research.question import classify_question, comparison_sides, extract_targets


def test_in_targets_are_taken_out_anywhere_in_the_text() -> None:
    assert extract_targets("in:eng,Security how do deploys work? in:hr") == (
        "how do deploys work?",
        ("eng", "security", "hr"),
    )
    assert extract_targets("what is login:admin about") == ("what is login:admin about", ())


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        # A courtesy before what is asked is no key term: "thank" made the question "not found".
        ("thanks, how many vacation days do we get?", "how many vacation days do we get?"),
        ("ok great, thanks! in:people is it paid?", "is it paid?"),
        ("Hello Confer, what is the pension match", "what is the pension match"),
        ("Thanks for the details. How do I renew a parking permit?", "How do I renew a parking permit?"),
        ("thank you so much! and for a medium one?", "and for a medium one?"),
        ("Thanks in advance, what is the expense limit?", "what is the expense limit?"),
        ("Hi Confer, thanks! What is the pension match?", "What is the pension match?"),
        ("hey what is the wifi password", "what is the wifi password"),
        ("hey guys, where is the form?", "where is the form?"),
        # An apology or an aside before what is asked is no part of it either.
        ("I’m sorry, what is the deadline?", "what is the deadline?"),
        ("sorry to bother you, but how do I reset it?", "but how do I reset it?"),
        ("I'm sorry. I want to know if the pension is matched", "I want to know if the pension is matched"),
        ("I meant can I switch plans mid-month?", "can I switch plans mid-month?"),
        ("so, are you saying it is not covered?", "are you saying it is not covered?"),
        ("ok, so what is the limit", "what is the limit"),
        ("By the way, who signs off on travel?", "who signs off on travel?"),
        # An aside runs into a question only when what follows asks; else its words are the text's.
        ("I see the error when I deploy", "I see the error when I deploy"),
        ("well water testing rules", "well water testing rules"),
        ("hi-vis jackets: who pays for them?", "hi-vis jackets: who pays for them?"),
        ("thanks for the help, how do I submit the form", "how do I submit the form"),
        ("thanks, I have another question: how do I book leave?", "how do I book leave?"),
        ("one more question: is it paid?", "is it paid?"),
        ("I have a question about leave: is it paid?", "I have a question about leave: is it paid?"),
        # Courtesies before a thank-you or greeting leave it, to be answered as one.
        ("hi Confer, thanks!", "thanks!"),
        ("ok, got it, thanks!", "ok, got it, thanks!"),  # a thank-you as a whole (see below)
        # Praise before a question is a courtesy too.
        ("thanks, that was really helpful! how do I book time off?", "how do I book time off?"),
        ("Perfect, that makes sense. And for contractors?", "And for contractors?"),
        ("awesome! whats the hotel limit", "whats the hotel limit"),
        ("thanks a ton, how long is parental leave?", "how long is parental leave?"),
        ("hello, good morning", "good morning"),
        # A courtesy with nothing asked after it stays whole, to be answered or read as written.
        ("thanks!", "thanks!"),
        ("Thank you! I will do that.", "Thank you! I will do that."),
        ("thank you, that was really helpful!", "thank you, that was really helpful!"),
        ("Yes, Thank you.", "Yes, Thank you."),
        # Without a punctuation mark after it, the word is the question's own.
        ("hey there's a test that fails randomly", "hey there's a test that fails randomly"),
        ("thanks to whom was the award given", "thanks to whom was the award given"),
    ],
)
def test_a_courtesy_before_the_question_is_not_asked(text: str, asked: str) -> None:
    assert extract_targets(text)[0] == asked


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("hi", "greeting"),
        ("hey guys", "greeting"),  # the words of address a thank-you takes, a greeting takes too
        ("Hello there!", "greeting"),
        ("thanks!", "thanks"),
        ("Yes, Thank you.", "thanks"),
        ("Yes - Thank you.", "thanks"),
        ("Hi! Thanks so much for your help!", "thanks"),
        ("thanks, that's great 🙏", "thanks"),
        # A thank-you and then a question without its question mark: the question.
        ("thanks for the help, how do I submit the form", "factual"),
        ("Thanks for the info! Is it the same for contractors", "factual"),
        ("thank you so much for all the info, really helpful", "thanks"),
        # Praise of an answer, however long, with or without a thank-you, is one; a thank-you
        # followed by anything else is read as written.
        ("thank you, that was really helpful!", "thanks"),
        ("great, that helps a lot", "thanks"),
        ("Perfect, that makes sense.", "thanks"),
        ("ok, got it", "thanks"),
        ("understood, thanks", "thanks"),
        ("thank you, that was really helpful! :pray:", "thanks"),
        ("Thank you, that was really helpful 🙏", "thanks"),
        ("that's clear", "thanks"),
        ("ok that makes sense", "thanks"),
        ("that really helps", "thanks"),
        ("Thanks, that helps. Have a good day!", "thanks"),
        ("is it clear?", "factual"),
        # A bare acknowledgement is answered as a thank-you, not searched for.
        ("ok", "thanks"),
        ("sure", "thanks"),
        ("is it ok to work from spain?", "factual"),
        # After a thank-you, what the asker will do, a goodbye or a word of address keep it one;
        # a report of a problem is read as written, however short.
        ("thanks, will do", "thanks"),
        ("thanks mate", "thanks"),
        ("thanks for everything, bye", "thanks"),
        ("Thank you! I will do that.", "thanks"),
        ("thanks, the form is broken", "factual"),
        ("thanks but the link is dead", "factual"),
        ("clear the cache", "factual"),
        ("thanks, the vpn is not working for me on linux", "factual"),
        ("that was helpful but what about contractors?", "factual"),
        ("it was useful to read the policy on travel", "factual"),
        ("the office is great", "factual"),
        ("help", "help"),
        ("can you please help me?", "help"),
        # A question announced is none asked: after a thank-you it is one, alone a call for help.
        ("Yes, Thank you. I do have couple more questions please", "thanks"),
        ("thanks! I have a few more questions", "thanks"),
        ("ok thanks, one more question", "thanks"),
        ("I have a question", "help"),
        ("hey team, I have a quick question", "help"),
        ("Can I ask you something?", "help"),
        ("I have a question about parental leave", "factual"),
        ("I have two kids, how much leave do I get?", "factual"),
        ("can i ask for a raise", "factual"),
        ("can you help me with the vpn?", "factual"),
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


def test_a_message_of_nothing_but_openings_is_read_quickly_and_whole() -> None:
    for opening in ("ok ", "hey ", "so ", "ok great ", "thanks for the "):
        text = opening * 1700  # 5,000 characters or more: openings are read a few at a time
        assert extract_targets(text)[0] == " ".join(text.split())


def test_a_long_paste_is_read_for_no_comparison() -> None:
    # A pasted key or log is no two-sided question; the sides' patterns, whose lazy runs try every
    # split of a long word, never read it.
    from graph.research.question import MAX_COMPARISON_CHARS

    key = "A" * (MAX_COMPARISON_CHARS + 1)
    assert comparison_sides(f"Is {key} and Bb older?") == ()
    assert classify_question("Aa1 " * 10_000) == "factual"
    assert comparison_sides("Which is older, the Eiffel Tower or Big Ben?") == ("Eiffel Tower", "Big Ben")
