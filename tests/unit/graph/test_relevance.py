from graph.answer.relevance import assess_coverage, focus_of, term_coverage
from graph.research.question import comparison_sides, key_entities, key_terms
from retrieval.language import detect_language, foreign_stems
from retrieval.passages import Passage


def _p(pid: str, title: str, text: str) -> Passage:
    return Passage(id=pid, collection="c", doc_id=pid, source=f"{pid}.md", title=title, text=text, score=1.0)


def test_key_entities_are_names_not_question_words() -> None:
    assert key_entities("Who is the CEO of Kestrel Systems?") == ("CEO of Kestrel Systems",)
    assert key_entities('The director of "Big Hollow Bend" lives in what New York city?') == (
        "Big Hollow Bend",
        "New York",
    )
    assert key_entities("Considered the strongest cyclone, which one had a film?") == ()
    assert key_entities("Wie lange dauert die Elternzeit?", language="de") == ()


def test_key_terms_leave_out_the_shape_of_the_ask() -> None:
    assert key_terms("How many weeks of parental leave?") == ["weeks", "parental", "leave"]
    assert key_terms("Which is older, the product docs or the security policy?") == ["product", "security"]
    assert key_terms("the difference among Bronze, Silver and Gold plans") == [
        "bronze",
        "silver",
        "gold",
        "plans",
    ]
    # Asking what a thing means is the shape of the ask too.
    assert key_terms("what does SEV1 mean") == ["sev1"]
    assert key_terms("What is the mean salary?") == ["mean", "salary"]  # the average: what is asked
    assert key_terms("can you explain the definition of restricted data") == ["restricted", "data"]
    # Hedges and wishes are how people ask, not what about: no passage need write them.
    assert key_terms("pretty sure i pushed an aws key to a public repo") == [
        "pushed",
        "aws",
        "key",
        "public",
        "repo",
    ]
    assert key_terms("we want to try out a new saas tool, what am i supposed to do") == [
        "try",
        "saas",
        "tool",
    ]


def test_a_comparison_with_compared_to_has_two_sides() -> None:
    assert comparison_sides("What is the Beacon API rate limit compared to the webhook retry policy?") == (
        "Beacon API rate limit",
        "webhook retry policy",
    )


def test_languages_are_told_apart_by_their_function_words() -> None:
    assert detect_language("How long is parental leave?") == "en"
    assert detect_language("Wie lange dauert die Elternzeit?") == "de"
    assert detect_language("Combien de jours de congé ai-je?") == "fr"
    assert detect_language("Cuántos días de vacaciones tengo?") == "es"
    assert detect_language("SEV1") == "en"
    assert foreign_stems("Who approves production access?") == []
    assert "dienstreis" in foreign_stems("Wer genehmigt die Dienstreise?")


def test_english_contractions_and_words_inside_names_do_not_make_a_question_foreign() -> None:
    # "I'm" read without its apostrophe is German "im"; "Hat" in a name is German "hat"; "as" is
    # Portuguese too.
    assert detect_language("I'm asking more concrete info such as tele number.") == "en"
    assert detect_language("Red Hat OpenShift") == "en"
    assert detect_language("They sound more alike than different. Do they act together as a system?") == "en"
    # A sentence's first word and every lower-case word still count.
    assert detect_language("Hat die Firma ein Büro in Berlin?") == "de"
    assert detect_language("Quais são as regras de férias?") == "pt"


def test_stemming_in_the_questions_language_matches_other_word_forms() -> None:
    passages = [_p("a", "Access", "Every production session requires approval from a second person.")]
    focus = focus_of("Who approves production access?", passages)
    # "approves" and "approval" share the Snowball stem; the title carries "access" at half weight.
    assert term_coverage(focus, passages[0].text, passages[0].title) > 0.6


def test_evidence_that_misses_the_questions_entity_or_ask_is_not_found() -> None:
    office = _p("o", "Remote work", "Each employee receives a home office budget of 1,000 euros.")
    leave = _p("l", "Parental leave", "Every parent receives 20 weeks of fully paid parental leave.")
    for question, passage, found in [
        ("What is the dress code in the Berlin office?", office, False),
        ("How many weeks of parental leave do parents get?", office, False),
        ("How many weeks of parental leave do parents get?", leave, True),
    ]:
        focus = focus_of(question, [office, leave] if found else [office])
        coverage = assess_coverage(focus, [(passage.text, passage)], [passage])
        assert coverage.found is found, question


def test_passages_that_only_mention_the_questions_entity_in_passing_are_no_evidence_about_it() -> None:
    town = _p(
        "t",
        "Big Hollow Bend, Virginia",
        "Big Hollow Bend is a town in Wise County, Virginia. The town was the setting of the novel "
        "Big Hollow Bend, filmed there in 2014.",
    )
    film = _p(
        "f",
        "Big Hollow Bend (film)",
        "Big Hollow Bend is a 2014 American romantic comedy film directed by Delia Fontaine.",
    )
    mention = _p(
        "m", "Wise County, Virginia", "Wise County has several towns; among them is Big Hollow Bend."
    )
    question = "Who directed the 2014 romantic comedy film Big Hollow Bend?"
    with_film = focus_of(question, [film, mention])
    found = assess_coverage(with_film, [(film.text, film)], [film, mention])
    assert found.found and found.subject_share == 1.0
    # The film's passage is gone: what is left names the title only inside other sentences.
    without = focus_of(question, [mention])
    missing = assess_coverage(without, [(mention.text, mention)], [mention])
    assert not missing.found and missing.subject_share == 0.0
    # A comparison needs a passage about each side, not a passage naming both.
    sides = focus_of("Which is older, Big Hollow Bend or Wise County?", [town, mention])
    both = assess_coverage(sides, [(mention.text, mention)], [town, mention], comparison=True)
    assert both.found
    one = assess_coverage(sides, [(mention.text, mention)], [mention], comparison=True)
    assert one.subject_share < 1.0
