"""Readers and audiences (retrieval/audience.py): what a passage's readers let each audience read."""

from retrieval.audience import EVERYONE, Audience, both_allow, person_principals, readers_key, readers_of


def test_a_person_is_their_names_their_domains_and_everyone() -> None:
    assert person_principals([" Ana@Example.COM ", "ana.b@corp.example.com"]) == (
        EVERYONE,
        "ana.b@corp.example.com",
        "ana@example.com",
        "domain:corp.example.com",
        "domain:example.com",
    )


def test_what_each_audience_may_read() -> None:
    ana, cy = Audience.person(["ana@example.com"]), Audience.person(["cy@other.org"])
    hr = ("ana@example.com", "bo@example.com")
    assert ana.may_read(hr) and not cy.may_read(hr)
    assert ana.may_read(None) and cy.may_read(None) and Audience.anyone().may_read(None)  # files
    assert Audience.anyone().may_read((EVERYONE,)) and not Audience.anyone().may_read(hr)
    assert ana.may_read(("domain:example.com",)) and not cy.may_read(("domain:example.com",))
    assert Audience.everything().may_read(hr) and Audience.everything().constraints is None
    both = Audience.together([ana, cy])
    assert not both.may_read(hr) and both.may_read(("ana@example.com", "cy@other.org"))


def test_an_audience_is_reduced_to_the_constraints_that_matter() -> None:
    ana = Audience.person(["ana@example.com"])
    # Someone unnamed there: only what everyone may read, whoever else is there.
    assert Audience.together([ana, Audience.anyone()]).constraints == ((EVERYONE,),)
    assert Audience.together([ana, Audience.anyone()]).key == Audience.anyone().key
    # The same person twice is one constraint; the operator adds none.
    assert Audience.together([ana, ana, Audience.everything()]).key == ana.key
    assert Audience.together([Audience.everything()]).unrestricted
    assert len({ana.key, Audience.anyone().key, Audience.everything().key}) == 3


def test_two_rules_allow_only_whom_both_allow() -> None:
    assert both_allow(None, None) is None
    assert both_allow(("a@x.com", "b@x.com"), None) == ("a@x.com", "b@x.com")
    assert both_allow(("a@x.com", "b@x.com"), ("B@X.com", "c@x.com")) == ("b@x.com",)
    assert both_allow((EVERYONE,), ("c@x.com",)) == ("c@x.com",)  # a public space, a restricted page
    assert both_allow(("a@x.com",), (EVERYONE,)) == ("a@x.com",)
    assert both_allow(("a@x.com",), ("c@x.com",)) == ()  # nobody
    assert readers_of(["b@x.com", "A@x.com", EVERYONE]) == (EVERYONE,)
    assert readers_key(("b@x.com", "a@x.com")) == readers_key(("A@x.com", "b@x.com")) != readers_key(())
    assert readers_key(None) is None
