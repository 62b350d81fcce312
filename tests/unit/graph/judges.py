"""Answer judges made for a test: a sentence stage with the weights given (by signal name), and an
answerability stage that reads the best sentence's probability alone (so it equals it)."""

from graph.answer.judge import FEATURES, JudgeModel, Judges, Logistic


def logistic(weights: dict[str, float], *, bias: float = 0.0, width: int = len(FEATURES)) -> Logistic:
    values = [weights.get(name, 0.0) for name in FEATURES] + [0.0] * (width - len(FEATURES))
    return Logistic(weights=tuple(values), bias=bias, means=(0.0,) * width, scales=(1.0,) * width)


def judges_by(
    weights: dict[str, float],
    *,
    bias: float = 0.0,
    answers: float = 0.6,
    related: float = 0.3,
    quotes: float = 0.3,
) -> Judges:
    question = Logistic(
        weights=(1.0,) + (0.0,) * (len(FEATURES) + 1),
        bias=0.0,
        means=(0.0,) * (len(FEATURES) + 2),
        scales=(1.0,) * (len(FEATURES) + 2),
    )
    model = JudgeModel(
        sentence=logistic(weights, bias=bias),
        question=question,
        answers=answers,
        related=related,
        quotes=quotes,
    )
    return Judges(meaning=model, words=model)
