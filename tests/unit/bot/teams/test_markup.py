import re

from bot.teams.markup import ZERO_WIDTH, neutralize, safe_link, safe_url


def test_mentions_links_and_formatting_from_documents_are_escaped() -> None:
    text = neutralize("Ping <at>Everyone</at>: see [here](https://evil.example) **now** _x_ ~y~ `z`")
    assert not re.search(r"(?<!\\)[<>\[\]*_~`]", text)
    assert "https://" not in text and "https" + ZERO_WIDTH + "://evil.example" in text


def test_line_breaks_lists_bare_domains_and_card_functions_are_neutralized() -> None:
    text = neutralize("- first\n1. second\nwww.evil.example {{DATE(2026-01-01T00:00:00Z)}}")
    assert "\n" not in text
    assert text.startswith("\\- first")
    assert "www" + ZERO_WIDTH + ".evil" in text and "{{" not in text


def test_plain_prose_is_unchanged() -> None:
    sentence = "Parental leave is 20 weeks, paid in full (see the policy)."
    assert neutralize(sentence) == sentence


def test_only_http_urls_become_links_and_their_brackets_are_encoded() -> None:
    assert (
        safe_link("https://docs.example/a_(b)", "Title [1]")
        == "[Title \\[1\\]](https://docs.example/a_%28b%29)"
    )
    assert safe_link("javascript:alert(1)", "Bad") == "Bad"
    assert safe_link("https://docs.example/a b", "Spaced") == "Spaced"
    assert safe_url("ftp://files.example/x") is None
