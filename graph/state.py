"""The graph's state: a TypedDict of frozen values; branches append findings via a reducer."""

import operator
from typing import Annotated, TypedDict

from graph.models import Answer, Finding, Plan, Question, ResearchRound, ResearchTask


class ResearchState(TypedDict, total=False):
    question: Question
    plan: Plan
    findings: Annotated[list[Finding], operator.add]
    answer: Answer
    round: int  # the round whose branches are running (1: the plan's)
    round_started: float  # time.monotonic() when that round was sent
    follow_ups: tuple[ResearchTask, ...]  # what ``reflect`` sends next; empty: synthesize
    rounds: Annotated[list[ResearchRound], operator.add]
    join: bool  # with a model: the round being sent gets a ``join_model`` branch for its late work
