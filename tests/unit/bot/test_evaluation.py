from bot.evaluation import f1, normalize_answer
from graph.models import Finding, QueryHits
from graph.synthesis import merge_passages
from retrieval.passages import Passage


def test_answer_normalization_follows_hotpotqa() -> None:
    assert normalize_answer("The  Beatles!") == "beatles"
    assert f1("the Terry Richardson", "Terry Richardson") == 1.0
    assert 0 < f1("Terry", "Terry Richardson") < 1
    assert f1("nothing", "Terry Richardson") == 0.0


def _p(pid: str, collection: str, score: float) -> Passage:
    return Passage(id=pid, collection=collection, doc_id=pid, source=pid, title=pid, text="x", score=score)


def test_each_sub_query_leads_with_its_best_passage() -> None:
    people = Finding(
        collection="people",
        status="ok",
        passages=(_p("both", "people", 9.0), _p("a", "people", 5.0), _p("b", "people", 4.0)),
        rankings=(
            QueryHits(slot=0, hits=(("both", 9.0),)),
            QueryHits(slot=1, hits=(("a", 5.0),)),
            QueryHits(slot=2, hits=(("b", 4.0),)),
        ),
    )
    film = Finding(
        collection="film",
        status="ok",
        passages=(_p("b2", "film", 4.5),),
        rankings=(QueryHits(slot=2, hits=(("b2", 4.5),)),),
    )
    assert [p.id for p in merge_passages([people, film])] == ["a", "b2", "both", "b"]
