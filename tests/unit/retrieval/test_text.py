from pathlib import Path

from retrieval.text import list_items, repair_encoding, split_sentences, stem, stems, terms, words


def test_sentences_respect_abbreviations_and_list_items() -> None:
    text = "Use e.g. the bot. Dr. Smith approves it! Then deploy.\n- first item\n- second item"
    assert split_sentences(text) == [
        "Use e.g. the bot.",
        "Dr. Smith approves it!",
        "Then deploy.",
        "first item",
        "second item",
    ]


def test_a_dotted_acronym_ends_no_sentence() -> None:
    assert split_sentences("He served in the U.S. Army for ten years. He retired in Washington, D.C.") == [
        "He served in the U.S. Army for ten years.",
        "He retired in Washington, D.C.",
    ]


def test_titles_company_forms_and_months_end_no_sentence() -> None:
    text = "KKR & Co. L.P. is owned by partners. Martin Luther King Jr. was born on Jan. 15, 1929. He spoke."
    assert split_sentences(text) == [
        "KKR & Co. L.P. is owned by partners.",
        "Martin Luther King Jr. was born on Jan. 15, 1929.",
        "He spoke.",
    ]
    # Also after an opening bracket or quote.
    assert split_sentences("About 3% of the population (est. 2.3 billion) died. It ended.") == [
        "About 3% of the population (est. 2.3 billion) died.",
        "It ended.",
    ]


def test_terms_drop_stopwords_and_keep_order() -> None:
    assert terms("What is the on-call policy for our engineers?") == ["call", "policy", "engineers"]


def test_a_contraction_is_no_term_with_or_without_its_apostrophe() -> None:
    # "whats the hotel limit" had "what" for a key term that no passage writes, and was "not found".
    assert terms("whats the hotel limit") == terms("what's the hotel limit") == ["hotel", "limit"]
    assert terms("I'm new and I can't log in, it isn't working") == ["new", "log", "working"]
    assert terms("dont you use sandboxes? thats odd") == ["use", "sandboxes", "odd"]


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


def test_words_read_ascii_text_as_the_word_pattern_does() -> None:
    # ASCII text without apostrophes is split without the regular expression: it must give the
    # very words the pattern gives (letters and digits; underscores and punctuation separate).
    import random
    import re

    from retrieval.text import words

    pattern = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
    rng = random.Random(3)
    alphabet = 'aZ9_ .,;:-!?()[]"/\\\t\n\x1c\x7f#'
    texts = ["Foo_bar baz-qux 3.5 SEV-1", "under_score_ end_", "tab\tsep\x1cx", "", "  "]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    for text in texts:
        assert words(text) == pattern.findall(text.lower()), text
    assert words("Foo_bar baz-qux 3.5 SEV-1") == ["foo", "bar", "baz", "qux", "3", "5", "sev", "1"]
    assert words("It's Dana’s café") == ["it", "dana", "cafe"]  # possessives and diacritics folded


def test_stems_of_a_text_are_the_stems_of_its_words() -> None:
    # Texts' stems are read through per-word tables filled in batches: whatever the order texts
    # come in, a text's stems are its content words' stems, word by word.
    from retrieval.language import content_words, stem_in, stems_in
    from retrieval.text import STOPWORDS, stems, words

    texts = [path.read_text() for path in sorted(Path(__file__).parents[3].glob("samples/*/*.md"))]
    texts += ["Die Elternzeit dauert 36 Monate.", "I a 7 x of the policies reviewed", "Ça coûte 12 €."]
    for text in [*texts, *reversed(texts)]:
        expected = {stem(w) for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())}
        assert stems(text) == expected
        for language in ("en", "de", "fr"):
            assert stems_in(text, language) == {stem_in(w, language) for w in content_words(text, language)}


def test_words_fold_diacritics_so_a_name_matches_its_unaccented_spelling() -> None:
    assert words("The Tekezé flows north") == words("The Tekeze flows north")
    assert words("Émile Zola, naïve café") == ["emile", "zola", "naive", "cafe"]
    assert stems("Tekezé River") == stems("Tekeze river")


def test_words_read_a_possessive_as_its_owner_with_either_apostrophe() -> None:
    assert words("the Confederation's army") == ["the", "confederation", "army"]
    assert words("the Confederation’s army") == ["the", "confederation", "army"]
    assert words("Akinoshu Kenji's father") == ["akinoshu", "kenji", "father"]
    assert words("two weeks' notice") == ["two", "weeks", "notice"]
    assert words("O'Brien won't") == ["obrien", "wont"]  # other apostrophes are dropped


def test_words_split_at_hyphens_and_dashes_alike() -> None:
    assert words("Medi-Gel and SEV‑1 – on-call") == ["medi", "gel", "and", "sev", "1", "on", "call"]


def test_mojibake_is_repaired_and_real_text_left_as_written() -> None:
    # UTF-8 read as Latin-1 (with its invisible C1 controls), and as Mac Roman.
    assert repair_encoding("call the clerk\u00e2\u0080\u0099s office") == "call the clerk’s office"
    assert repair_encoding("the goal of NASA‚Äôs Europa Clipper") == "the goal of NASA’s Europa Clipper"
    assert words(repair_encoding("NASA‚Äôs Europa Clipper")) == ["nasa", "europa", "clipper"]
    for written in (
        "Tekezé, naïve café — “quoted”",
        "Straße",
        "日本語のテキスト",
        "Привет",
        "plain ASCII",
        "",
    ):
        assert repair_encoding(written) == written


def test_sentences_go_on_after_abbreviations_written_with_or_without_inner_dots() -> None:
    text = (
        "Keep receipts for approx. 7 years, eg. 30 days for meals, i.e. all of them. "
        "Use the portal vs. email, ie. Concur. Ask Dr. Okafor. Room No. 5 is free. No. It is not."
    )
    assert split_sentences(text) == [
        "Keep receipts for approx. 7 years, eg. 30 days for meals, i.e. all of them.",
        "Use the portal vs. email, ie. Concur.",
        "Ask Dr. Okafor.",
        "Room No. 5 is free.",
        "No.",
        "It is not.",
    ]


def test_versions_decimals_names_from_code_urls_and_file_names_end_no_sentence() -> None:
    text = (
        "Node.js v18.4.0 added it in 2022. It needs Python 3.11. The path.extname() method and "
        "os.path.join() read config.yaml at https://docs.example.com/a.b/c?x=1.5 in 0.5 seconds. "
        "It uses DNS for lookups. dns.lookup() uses the system. Must be 4, 6, or 0. The value 0 is "
        "the default. Vacation expires am 31. März des Folgejahres."
    )
    assert split_sentences(text) == [
        "Node.js v18.4.0 added it in 2022.",
        "It needs Python 3.11.",
        "The path.extname() method and os.path.join() read config.yaml at "
        "https://docs.example.com/a.b/c?x=1.5 in 0.5 seconds.",
        "It uses DNS for lookups.",
        "dns.lookup() uses the system.",
        "Must be 4, 6, or 0.",
        "The value 0 is the default.",
        "Vacation expires am 31. März des Folgejahres.",
    ]


def test_sentences_glued_where_a_page_lost_its_line_breaks_are_read_apart() -> None:
    text = (
        "Keep the paper dry.Do I need a tarp? See the examples.This option works. Stay dry.Don't "
        "wait. The Client.Timeout exceeded error needs a time.Duration value, etc.The end. "
        "Use errors.Is to compare, call http.Get(url) once and wrap it in sync.Once for safety."
    )
    assert split_sentences(text) == [
        "Keep the paper dry.",
        "Do I need a tarp?",
        "See the examples.",
        "This option works.",
        "Stay dry.",
        "Don't wait.",
        "The Client.Timeout exceeded error needs a time.Duration value, etc.The end.",
        "Use errors.Is to compare, call http.Get(url) once and wrap it in sync.Once for safety.",
    ]


def test_a_code_block_is_never_a_sentence_and_its_words_still_count() -> None:
    from retrieval.text import code_block, code_blocks, sentence_stems

    code = code_block("deploy:\n\n  - run: make release\n", "yaml")
    assert code == "```yaml\ndeploy:\n  - run: make release\n```"
    text = f"Add this step.\n\n{code}\n\nThen push."
    assert split_sentences(text) == ["Add this step.", "Then push."]
    assert code_blocks(text) == ["deploy:\n  - run: make release"]
    _, everything = sentence_stems(text)
    assert {"release", "make", "deploy"} <= everything


def test_a_list_paragraph_reads_as_its_items_whole_and_any_other_as_none() -> None:
    assert list_items("- Port 22000/TCP: sync\n- Port 22000/UDP: sync. Needs 1.20.\n  2. Discovery") == [
        "Port 22000/TCP: sync",
        "Port 22000/UDP: sync. Needs 1.20.",
        "Discovery",
    ]
    assert list_items("- Restore with the tool,\n  which checks the snapshot first") == [
        "Restore with the tool, which checks the snapshot first"  # a wrapped item is one
    ]
    assert list_items("Note the following: ports change.") == []
    assert list_items("- first\nthen prose") == ["first then prose"]  # as split_sentences reads it
    assert list_items("") == []
