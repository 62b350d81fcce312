"""A sentence that introduces what follows it is said with it: a list's items, a code block
(graph.answer.compose.with_introduced)."""

from graph.answer.compose import with_introduced
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
    said = with_introduced(claims, [FIREWALL], most=6)
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
    assert with_introduced(long_list, [FIREWALL], most=6) == long_list
    prose = FIREWALL.model_copy(update={"text": "Note the following: ports change.\n\nSee the guide."})
    claims = [_claim("Note the following:")]
    assert with_introduced(claims, [prose], most=6) == claims


UFW = Passage(
    id="p2",
    collection="net",
    doc_id="u",
    source="ufw.rst",
    title="Uncomplicated Firewall",
    text=(
        "If you use ufw, you can allow the ports by running:\n\n"
        "```\nsudo ufw allow syncthing\n```\n\n"
        "To see every rule ufw applies, print its configuration:\n\n"
        "```\n"
        + "".join(f"rule {n}: allow port {n} from anywhere on any interface\n" for n in range(12))
        + "```\n\n"
        "Reset it in eight steps:\n\n```\n" + "".join(f"step{n}\n" for n in range(8)) + "```\n\n"
        "To check the rules, run the following:\n\n"
        "Then read what it prints.\n\n```\nsudo ufw status verbose\n```"
    ),
)


def _ufw(text: str) -> tuple[Claim, str]:
    return Claim(text=text, passage_ids=("p2",), coverage=0.5), "net"


def _codes(claims: list[tuple[Claim, str]], most: int = 6) -> list[str]:
    return [claim.code for claim, _ in with_introduced(claims, [UFW], most=most)]


def test_a_code_block_follows_its_sentence_unless_it_is_longer_than_a_list_or_a_sentence_may_be() -> None:
    running = _ufw("If you use ufw, you can allow the ports by running:")
    rules = _ufw("To see every rule ufw applies, print its configuration:")  # 12 lines, 120 words
    steps = _ufw("Reset it in eight steps:")  # 8 lines of a word each
    said = with_introduced([running, rules, steps], [UFW], most=6)
    assert [(c.text, c.item) for c, _ in said] == [(c.text, False) for c, _ in (running, rules, steps)]
    assert [c.code for c, _ in said] == ["sudo ufw allow syncthing", "", ""]  # 12 and 8 lines > 6
    assert _codes([rules, steps], most=20) == ["", "\n".join(f"step{n}" for n in range(8))]  # 120 words


def test_a_code_block_not_right_after_its_sentence_is_not_shown() -> None:
    apart = _ufw("To check the rules, run the following:")  # a paragraph between
    assert _codes([_ufw("If you use ufw, you can allow the ports by running:"), apart]) == [
        "sudo ufw allow syncthing",
        "",
    ]
