"""Structured output the model must return (validated with pydantic)."""

from typing import Literal

from pydantic import BaseModel, Field


class PlannedCollection(BaseModel):
    name: str
    query: str = ""
    subquestion: str = ""


class PlanOutput(BaseModel):
    kind: Literal["factual", "comparative", "exploratory"]
    collections: list[PlannedCollection] = Field(default_factory=list)


class DraftClaim(BaseModel):
    """A claim as the span of one passage (``passage``, ``start``, ``end``: character offsets in its
    text), which Confer quotes; or, from a model that writes one, a sentence citing ``passages``."""

    text: str = ""
    passages: list[int] = Field(default_factory=list)
    passage: int = 0
    start: int = -1
    end: int = -1


class DraftOutput(BaseModel):
    claims: list[DraftClaim] = Field(default_factory=list)


class AnswerOutput(BaseModel):
    answer: str


class JudgeVerdict(BaseModel):
    i: int
    supported: bool = False
    passage: int = 0
    start: int = -1  # the supporting span: character offsets in that passage's text, end exclusive
    end: int = -1


class JudgeOutput(BaseModel):
    verdicts: list[JudgeVerdict] = Field(default_factory=list)
