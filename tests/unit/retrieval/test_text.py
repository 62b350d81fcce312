from pathlib import Path

from retrieval.text import split_sentences, stem, terms


def test_sentences_respect_abbreviations_and_list_items() -> None:
    text = "Use e.g. the bot. Dr. Smith approves it! Then deploy.\n- first item\n- second item"
    assert split_sentences(text) == [
        "Use e.g. the bot.",
        "Dr. Smith approves it!",
        "Then deploy.",
        "first item",
        "second item",
    ]


def test_terms_drop_stopwords_and_keep_order() -> None:
    assert terms("What is the on-call policy for our engineers?") == ["call", "policy", "engineers"]


def test_stem_folds_common_variants() -> None:
    assert stem("policies") == stem("policy") == "policy"
    assert stem("deploys") == stem("deploy") == "deploy"
    assert stem("reviewed") == stem("reviewing") == stem("reviews") == "review"
    assert stem("2024") == "2024"


def test_sentence_stems_match_stemming_each_sentence_and_the_whole_text() -> None:
    from retrieval.text import sentence_stems, stems

    texts = [
        "Use e.g. the bot. Dr. Smith approves it! Then deploy.\n- first item\n- second item",
        "Steps:\n1. Open a ticket.\n2) Page the on-call engineer.\n\n10. Write the review. Done",
        "He said ‘don’t’ and ‘it's fine.’ Then (3.5 hours later) it wasn't.\n\n\n• 42 tests passed",
        "",
        "1.",
    ]
    texts += [path.read_text() for path in sorted(Path(__file__).parents[3].glob("samples/*/*.md"))]
    assert len(texts) > 20
    for text in texts:
        sentences, everything = sentence_stems(text)
        assert [s for s, _ in sentences] == split_sentences(text)
        assert all(own == stems(s) for s, own in sentences)
        assert everything == stems(text)


def test_cached_text_work_hands_every_caller_its_own_copy() -> None:
    from retrieval.language import stems_in
    from retrieval.text import stems, words

    text = "Parental leave lasts sixteen weeks for every employee."
    first_words, first_stems, first_german = words(text), stems(text), stems_in(text, "de")
    first_words.append("injected")
    first_stems.add("injected")
    first_german.add("injected")
    sentences = split_sentences(text)
    sentences.append("Injected.")
    assert "injected" not in words(text)
    assert "injected" not in stems(text)
    assert "injected" not in stems_in(text, "de")
    assert split_sentences(text) == ["Parental leave lasts sixteen weeks for every employee."]
    assert stems(text) == {"parental", "leave", "last", "sixteen", "week", "every", "employee"}
