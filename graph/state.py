"""The graph's state: a TypedDict of frozen values; branches append findings via a reducer."""

import operator
from typing import Annotated, TypedDict

from graph.models import Answer, Finding, Plan, Question


class ResearchState(TypedDict, total=False):
    question: Question
    plan: Plan
    findings: Annotated[list[Finding], operator.add]
    answer: Answer
