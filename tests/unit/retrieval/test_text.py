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
