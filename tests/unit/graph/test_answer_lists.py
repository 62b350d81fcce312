"""A sentence that introduces a list is said with the list's items (graph.answer.compose.with_lists)."""

from graph.answer.compose import with_lists
from graph.models import Claim
from retrieval.passages import Passage

FIREWALL = Passage(
    id="p1",
    collection="net",
    doc_id="d",
    source="firewall.md",
    title="Firewall",
    text=(
        "If your machine has a local firewall, open the following ports:\n\n"
        "- Port 22000/TCP: sync over TCP\n"
        "- Port 22000/UDP: sync over QUIC. Needs 1.20.\n"
        "- Port 21027/UDP: discovery\n\n"
        "A custom listen port needs its own rule.\n\nThe relays are these:\n\n"
        + "".join(f"- relay{n}.example.net\n" for n in range(1, 9))
    ),
)


def _claim(text: str) -> tuple[Claim, str]:
    return Claim(text=text, passage_ids=("p1",), coverage=0.5), "net"


def test_a_list_follows_its_sentence_whole_and_in_order_and_an_item_said_elsewhere_moves_to_it() -> None:
    claims = [
        _claim("Port 22000/UDP: sync over QUIC."),
        _claim("If your machine has a local firewall, open the following ports:"),
        _claim("A custom listen port needs its own rule."),
    ]
    said = with_lists(claims, [FIREWALL], most=6)
    assert [(c.text, c.item) for c, _ in said] == [
        ("If your machine has a local firewall, open the following ports:", False),
        ("Port 22000/TCP: sync over TCP", True),
        ("Port 22000/UDP: sync over QUIC. Needs 1.20.", True),  # an item of two sentences is one
        ("Port 21027/UDP: discovery", True),
        ("A custom listen port needs its own rule.", False),
    ]
    assert all(c.passage_ids == ("p1",) for c, _ in said)


def test_a_list_too_long_to_say_whole_and_a_colon_before_prose_add_nothing() -> None:
    long_list = [_claim("The relays are these:")]
    assert with_lists(long_list, [FIREWALL], most=6) == long_list
    prose = FIREWALL.model_copy(update={"text": "Note the following: ports change.\n\nSee the guide."})
    claims = [_claim("Note the following:")]
    assert with_lists(claims, [prose], most=6) == claims
