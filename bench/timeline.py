"""When a question's progress events arrived: the plan, the last branch, the answer."""

import time
from dataclasses import dataclass, field

from graph.events import AnswerReady, BranchFinished, PlanReady, ProgressEvent


@dataclass
class Timeline:
    started: float = field(default_factory=time.perf_counter)
    plan: float = 0.0
    last_branch: float = 0.0
    answer: float = 0.0
    slowest_branch: float = 0.0  # the longest branch's own duration, in seconds

    async def record(self, event: ProgressEvent) -> None:
        now = time.perf_counter()
        if isinstance(event, PlanReady):
            self.plan = now
        elif isinstance(event, BranchFinished):
            self.slowest_branch = max(self.slowest_branch, event.seconds)
            self.last_branch = now
        elif isinstance(event, AnswerReady):
            self.answer = now

    @property
    def synthesis(self) -> float:
        return self.answer - self.last_branch

    @property
    def planning(self) -> float:
        return self.plan - self.started
