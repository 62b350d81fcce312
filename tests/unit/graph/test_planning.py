import pytest

from graph.context import ResearchLimits
from graph.models import Question
from graph.research.planning import CollectionAccessError, check_requested, plan_research, route_collections
from retrieval.collections import Collection


def _collections(*names: str, **keywords: tuple[str, ...]) -> dict[str, Collection]:
    return {
        n: Collection(name=n, title=f"{n.title()} handbook", sources=("x",), keywords=keywords.get(n, ()))
        for n in names
    }


COLLECTIONS = _collections("engineering", "security", "people", "product")
ALL = tuple(COLLECTIONS)


def test_explicit_targets_win_and_are_checked() -> None:
    q = Question(text="deploys", allowed=ALL, requested=("security",), defaults=("people",))
    assert route_collections(q, COLLECTIONS, {"engineering": 9.0}, ResearchLimits()) == (
        ("security",),
        "explicit",
    )
    with pytest.raises(CollectionAccessError) as caught:
        check_requested(Question(text="x", allowed=("people",), requested=("nope", "security")), COLLECTIONS)
    assert caught.value.unknown == ("nope",)
    assert caught.value.forbidden == ("security",)
    assert caught.value.allowed == ("people",)


def test_channel_defaults_come_before_routing() -> None:
    q = Question(text="deploys", allowed=ALL, defaults=("people",))
    assert route_collections(q, COLLECTIONS, {"engineering": 9.0}, ResearchLimits()) == (
        ("people",),
        "channel_default",
    )


def test_automatic_routing_keeps_collections_near_the_best_score() -> None:
    q = Question(text="laptop encryption rules", allowed=ALL)
    scores = {"security": 10.0, "people": 6.0, "product": 2.0}
    names, routing = route_collections(q, COLLECTIONS, scores, ResearchLimits(routing_ratio=0.5))
    assert (names, routing) == (("security", "people"), "automatic")
    names, _ = route_collections(q, COLLECTIONS, scores, ResearchLimits(routing_ratio=0.5, max_fanout=1))
    assert names == ("security",)


def test_routing_never_leaves_the_allowed_collections() -> None:
    q = Question(text="laptop encryption rules", allowed=("people", "product"))
    names, _ = route_collections(q, COLLECTIONS, {"security": 10.0, "people": 1.0}, ResearchLimits())
    assert names == ("people",)


def test_nothing_matches_means_all_allowed_up_to_the_fanout() -> None:
    q = Question(text="zzz qqq", allowed=ALL)
    assert route_collections(q, COLLECTIONS, {}, ResearchLimits(max_fanout=3)) == (ALL[:3], "all")


def test_named_collections_are_always_kept() -> None:
    q = Question(text="what does the people handbook say about laptops", allowed=ALL)
    names, _ = route_collections(q, COLLECTIONS, {"security": 10.0}, ResearchLimits())
    assert names == ("people", "security")


def test_comparison_of_collections_gets_one_side_each_plus_the_aspect() -> None:
    q = Question(
        text="How do the engineering and security policies differ on production access?", allowed=ALL
    )
    plan = plan_research(q, "comparative", COLLECTIONS, {"product": 5.0}, ResearchLimits())
    assert [t.collection for t in plan.tasks] == ["engineering", "security"]
    engineering, security = plan.tasks
    assert engineering.focus == "engineering" and security.focus == "security policies"
    assert "security" not in engineering.queries[0] and "production access" in engineering.queries[0]
    assert "engineering" not in security.queries[0]


def test_comparison_of_two_things_gets_a_sub_query_per_thing() -> None:
    q = Question(text="Which is older, the Eiffel Tower or Big Ben?", allowed=ALL)
    plan = plan_research(q, "comparative", COLLECTIONS, {"people": 3.0}, ResearchLimits())
    [task] = plan.tasks
    assert task.queries == (q.text, "Eiffel Tower older", "Big Ben older")


def test_focus_keywords_that_share_a_word_with_the_question_refine_the_query() -> None:
    collections = _collections("engineering", engineering=("code review", "deploy"))
    q = Question(text="who must review a change?", allowed=("engineering",))
    plan = plan_research(q, "factual", collections, {"engineering": 1.0}, ResearchLimits())
    assert plan.tasks[0].queries == ("who must review a change? code review",)


def test_a_word_with_a_capital_inside_is_searched_written_apart_too() -> None:
    collections = _collections("engineering", engineering=())
    q = Question(text="how do I apply for MediCal?", allowed=("engineering",))
    plan = plan_research(q, "factual", collections, {"engineering": 1.0}, ResearchLimits())
    assert plan.tasks[0].queries == ("how do I apply for MediCal? Medi Cal",)


def test_the_model_may_add_collections_but_never_drop_what_routing_found() -> None:
    from graph.llm.schemas import PlannedCollection, PlanOutput
    from graph.research.planning import plan_from_model

    q = Question(text="laptop encryption rules", allowed=ALL)
    heuristic = plan_research(q, "factual", COLLECTIONS, {"security": 10.0, "people": 6.0}, ResearchLimits())
    output = PlanOutput(
        kind="factual",
        collections=[
            PlannedCollection(name="product", query="disk encryption"),
            PlannedCollection(name="secret-hr"),
        ],
    )
    planned = plan_from_model(output, q, heuristic, COLLECTIONS, ResearchLimits())
    assert planned is not None
    assert [t.collection for t in planned.tasks] == ["security", "people", "product"]
    assert planned.tasks[2].queries[0] == "disk encryption"
    nothing = PlanOutput(kind="factual", collections=[PlannedCollection(name="secret-hr")])
    assert plan_from_model(nothing, q, heuristic, COLLECTIONS, ResearchLimits()) is None
