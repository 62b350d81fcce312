"""Reading the extractive answer again by meaning: what an answer quotes is read, what a "not
found" only offers as the closest is not (read, a sentence offered because the answer judge ranks
it first could turn into the answer by meaning alone: a list item "Benefits (only applies to
US-based teammates)" answered a question about a UK pension)."""

from graph.answer.reading import _quoted
from graph.models import Answer, AnswerSection, AnswerSentence, Citation
from tests.unit.graph.test_synthesis import _p

PAY = _p(
    "pay", "benefits", "Equity vests over four years. Benefits (only applies to US-based teammates).", 0.0
)


def test_what_an_answer_quotes_is_read_again_and_what_it_offers_as_the_closest_is_not() -> None:
    citation = (Citation(n=1, passage=PAY, quote=""),)
    quoted = AnswerSentence(text="Equity vests over four years.", citations=(1,))
    offered = AnswerSentence(text="Benefits (only applies to US-based teammates).", citations=(1,))
    answer = Answer(
        mode="extractive",
        kind="factual",
        sections=(AnswerSection(collection="benefits", sentences=(quoted,)),),
        citations=citation,
    )
    assert _quoted(answer) == [(PAY, "Equity vests over four years.")]
    not_found = Answer(mode="extractive", kind="factual", citations=citation, closest=(offered,))
    assert _quoted(not_found) == []
