from graph.answer.extractive import draft_claims
from retrieval.passages import Passage


def _p(pid: str, text: str, score: float = 1.0, title: str = "T") -> Passage:
    return Passage(id=pid, collection="c", doc_id=pid, source=pid, title=title, text=text, score=score)


def test_picks_the_sentence_that_covers_the_question_verbatim() -> None:
    passages = [
        _p(
            "a",
            "The office is in Lyon. Parental leave lasts twenty weeks for every parent. Lunch is free.",
            5.0,
        ),
        _p("b", "Holidays accrue monthly and carry over.", 4.0),
    ]
    [first, *_] = draft_claims("how many weeks of parental leave", passages, limit=2)
    assert first.text == "Parental leave lasts twenty weeks for every parent."
    assert first.passage_ids == ("a",)


def test_diverse_claims_and_no_near_repeats() -> None:
    passages = [
        _p(
            "a",
            "Production access lasts four hours at most. Production access lasts four hours at most, always.",
            5.0,
        ),
        _p("b", "Access reviews happen every quarter for production systems.", 4.0),
    ]
    claims = draft_claims("production access hours reviews", passages, limit=3)
    texts = [c.text for c in claims]
    assert len(texts) == len(set(texts)) == 2
    assert any("quarter" in t for t in texts)


def test_sentences_without_question_words_are_never_claims() -> None:
    assert draft_claims("parental leave", [_p("a", "Lunch is served at noon every day.")], limit=3) == []


def test_sentences_about_the_document_itself_rank_below_facts() -> None:
    passages = [
        _p(
            "a",
            "This page explains how engineers request production access. "
            "Engineers request production access with the access bot for four hours.",
            5.0,
        )
    ]
    [first, *_] = draft_claims("how do engineers request production access", passages, limit=2)
    assert first.text.startswith("Engineers request production access with the access bot")


def test_no_two_claims_are_near_repeats_whatever_the_order_of_picks() -> None:
    # Near-repeats are tested when a sentence would be picked, against every claim chosen so far.
    import random

    from graph.answer.extractive import REDUNDANCY, jaccard
    from retrieval.text import stems

    rng = random.Random(3)
    vocab = "leave weeks parental policy approve manager employee salary review deploy access laptop".split()
    picked_near_repeats = 0
    for _ in range(500):
        base = [" ".join(rng.choices(vocab, k=rng.randint(5, 12))).capitalize() + "." for _ in range(4)]
        passages = [
            _p(f"p{i}", " ".join(rng.choice(base) for _ in range(rng.randint(1, 5))), rng.choice([1.0, 3.0]))
            for i in range(rng.randint(1, 6))
        ]
        claims = draft_claims(" ".join(rng.sample(vocab, 4)), passages, limit=4)
        own = [stems(c.text) for c in claims]
        picked_near_repeats += sum(
            jaccard(a, b) >= REDUNDANCY for i, a in enumerate(own) for b in own[i + 1 :]
        )
    assert picked_near_repeats == 0


def test_a_question_in_the_text_is_never_a_claim() -> None:
    passage = _p("a", "How many weeks of parental leave do I get? Every parent gets twenty weeks of leave.")
    claims = draft_claims("how many weeks of parental leave", [passage], limit=3)
    assert [c.text for c in claims] == ["Every parent gets twenty weeks of leave."]
    marked = _p(
        "b", "Q: I am not a citizen of the parental leave scheme. A: Every parent gets twenty weeks of leave."
    )
    assert [c.text for c in draft_claims("parental leave citizen", [marked], limit=3)] == [
        "A: Every parent gets twenty weeks of leave."
    ]


def test_a_line_written_as_a_heading_or_a_link_is_never_a_claim() -> None:
    """Scraped pages keep their section headings and navigation links as lines of their own:
    without end punctuation and with every longer word capitalised, they say nothing."""
    page = _p(
        "a",
        "Boat Launch Permits and Fees\n\n"
        "Places to Launch Your Boat\n\n"
        "Boat launch permits cost 40 dollars a season at the marina office.\n\n"
        "Residence in the county for at least one year",
        title="Marina",
    )
    claims = draft_claims("where can I launch my boat, permits", [page], limit=4)
    assert [c.text for c in claims] == ["Boat launch permits cost 40 dollars a season at the marina office."]
    # Nor is a line of links and nothing else, whatever their words.
    links = _p(
        "b",
        "[Boat launch permits](https://example.org/permits) [Marina fees](https://example.org/fees)\n\n"
        "See [the permit office](https://example.org/office) for boat launch permits.",
        title="Marina",
    )
    assert [c.text for c in draft_claims("boat launch permits", [links], limit=4)] == [
        "See [the permit office](https://example.org/office) for boat launch permits."
    ]
    # A list item is no heading: its words are not all capitalised.
    assert [c.text for c in draft_claims("residence county year", [page], limit=4)] == [
        "Residence in the county for at least one year"
    ]
    # A row of links with a word or two in lower case among many capitalised ones is a menu; a
    # sentence without its full stop that names a few places is not.
    menu = _p(
        "m",
        "All categories Boat Permits Capital Projects Marina Careers Civic Permits Community Spaces "
        "Emergency Information Ferry Fields Filming\n\n"
        "Pay the launch fee at the Marina Office in Alameda or Oakland before launching\n\n"
        "Boat launch permits cost 40 dollars a season.",
        title="Marina",
    )
    assert [c.text for c in draft_claims("boat permits marina", [menu], limit=4)] == [
        "Boat launch permits cost 40 dollars a season.",
        "Pay the launch fee at the Marina Office in Alameda or Oakland before launching",
    ]
    # A line that lists names between commas is a sentence without its full stop.
    line = "Permits sold at Alameda, Oakland, Berkeley, Richmond, Emeryville and Hayward Marina"
    listed = _p("l", line, title="M")
    assert [c.text for c in draft_claims("where are permits sold", [listed], limit=4)] == [line]
    # A page's title line with its site's name is one too.
    titled = _p(
        "t", "Kolb House | Dublin, CA - Official Website\n\nKolb House tours run on Sundays.", title="Kolb"
    )
    assert [c.text for c in draft_claims("kolb house dublin", [titled], limit=4)] == [
        "Kolb House tours run on Sundays."
    ]
    # Nor is a key with a number for its value, nor a table row, in Title Case or not.
    values = _p(
        "c", "Annual Leave Allowance: 25 Days\n\n| Annual Leave Carry Over | Five Days |", title="Leave"
    )
    assert [c.text for c in draft_claims("annual leave allowance carry over", [values], limit=4)] == [
        "Annual Leave Allowance: 25 Days",
        "| Annual Leave Carry Over | Five Days |",
    ]
    # German capitalises every noun: a line of capitalised words is no heading there.
    german = _p(
        "d",
        "Der Urlaub wird vom Team geplant und ist bei der Personalabteilung zu beantragen.\n\n"
        "Urlaubsanspruch Jahresurlaub Vollzeit Dreißig Arbeitstage",
        title="Urlaub",
    )
    assert "Urlaubsanspruch Jahresurlaub Vollzeit Dreißig Arbeitstage" in [
        c.text for c in draft_claims("Urlaubsanspruch Arbeitstage", [german], limit=4)
    ]
