from bot.slack.mrkdwn import ZERO_WIDTH, escape, neutralize, plain_label, safe_link


def test_escape_the_three_mrkdwn_characters() -> None:
    assert escape("a & b < c > d") == "a &amp; b &lt; c &gt; d"


def test_neutralize_breaks_every_notification_and_link() -> None:
    text = neutralize(
        "<!channel> <!here> <!everyone> <@U123> <#C1> @here @Channel <http://x|y> see https://evil.example"
    )
    for live in ("<!", "<@", "<#", "<http", "@here", "@Channel", "https://"):
        assert live not in text
    assert f"@{ZERO_WIDTH}here" in text and f"https{ZERO_WIDTH}://evil{ZERO_WIDTH}.example" in text


def test_safe_link_only_links_http_urls() -> None:
    assert (
        safe_link("https://docs.example/a?b=1&c=2", "Guide <v2>")
        == "<https://docs.example/a?b=1&amp;c=2|Guide &lt;v2&gt;>"
    )
    assert safe_link("javascript:alert(1)", "Click") == "Click"
    assert safe_link("https://x.example/a|b", "T") == "T"
    assert "|" not in safe_link("https://x.example", "a|b").split("|", 1)[1]


def test_bare_domains_emails_and_ip_addresses_cannot_be_auto_linked() -> None:
    text = neutralize("Log in at www.evil.example/login, mail attacker@evil.example or use 10.0.0.1:8080.")
    for live in ("www.evil", "evil.example", "attacker@evil.example", "10.0.0.1"):
        assert live not in text, live
    assert text.replace(ZERO_WIDTH, "") == (
        "Log in at www.evil.example/login, mail attacker@evil.example or use 10.0.0.1:8080."
    )
    assert neutralize("It grew 3.5% in v2.1, i.e. a lot.") == "It grew 3.5% in v2.1, i.e. a lot."


def test_plain_label_is_inert_one_line_and_within_the_limit() -> None:
    label = plain_label("Tell me about <!here> &amp; https://evil.example\nnow @channel " + "word " * 30, 75)
    assert len(label) <= 75 and label.endswith("…")
    assert not any(c in label for c in "<>&\n")
    assert "@channel" not in label and "https:" not in label and "evil.example" not in label
    assert plain_label("Tell me about Delia Fontaine", 75) == "Tell me about Delia Fontaine"
