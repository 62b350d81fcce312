"""A fake OpenAI-compatible chat API on 127.0.0.1 for tests and benchmarks.

By default it behaves like a faithful model: it plans from the question, drafts claims that quote
the numbered passages it was given, and writes an answer from the claims with their [n] markers.
Tests script anything else per stage (plan, draft, reflect, synthesis): a reply, a delay, 429 with
Retry-After, 5xx, 4xx, malformed JSON.
"""

import asyncio
import itertools
import json
import re
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from retrieval.text import split_sentences, stems
from tests.fakes.server import serve_locally

Stage = str  # "plan" | "draft" | "reflect" | "synthesis"


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # None: the faithful default
    delay: float = 0.0
    retry_after: int | None = None
    when: Callable[[str], bool] | None = None  # only for requests whose user message matches


def stage_of(system: str) -> Stage:
    if system.startswith("You plan"):
        return "plan"
    if system.startswith("You extract"):
        return "draft"
    if system.startswith("You direct follow-up"):
        return "reflect"
    return "synthesis"


def faithful_plan(user: str) -> str:
    names = re.findall(r"^- ([a-z0-9_-]+): (.*)$", user, re.MULTILINE)
    question = re.search(r"^Question: (.*)$", user, re.MULTILINE)
    text = question.group(1) if question else ""
    q = stems(text)
    named = [n for n, _ in names if stems(n.replace("_", " ")) & q]  # collections the question names
    chosen = named or [n for n, desc in names if stems(desc) & q] or [n for n, _ in names]
    kind = "comparative" if re.search(r"\b(differ|compare|versus|vs)\b", text, re.I) else "factual"
    return json.dumps(
        {"kind": kind, "collections": [{"name": n, "query": text, "subquestion": ""} for n in chosen[:4]]}
    )


def faithful_draft(user: str) -> str:
    question = stems(re.search(r"^Question: (.*)$", user, re.MULTILINE).group(1))  # type: ignore[union-attr]
    passages = re.findall(r'<passage n="(\d+)"[^>]*>\n(.*?)\n</passage>', user, re.DOTALL)
    scored = []
    for number, text in passages:
        for sentence in split_sentences(text):
            overlap = len(stems(sentence) & question)
            if overlap and len(sentence.split()) >= 5:
                scored.append((overlap, int(number), sentence))
    scored.sort(key=lambda item: (-item[0], item[1]))
    claims = [{"text": s, "passages": [n]} for _, n, s in scored[:2]]
    return json.dumps({"claims": claims})


def faithful_answer(user: str) -> str:
    claims = re.findall(r"<claim[^>]*>(.*?)</claim> ((?:\[\d+\])+)", user)
    sentences = []
    for text, markers in claims[:4]:
        body = text.rstrip(".!?")
        sentences.append(f"{body} {markers}.")
    return json.dumps({"answer": " ".join(sentences)})


def faithful_reflect(user: str) -> str:
    """Nothing missing: tests script follow-ups when they want some."""
    return json.dumps({"follow_ups": []})


_DEFAULTS: dict[Stage, Callable[[str], str]] = {
    "plan": faithful_plan,
    "draft": faithful_draft,
    "reflect": faithful_reflect,
    "synthesis": faithful_answer,
}


@dataclass
class FakeLLM:
    requests: list[dict[str, Any]] = field(default_factory=list)
    scripts: dict[Stage, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    latency: float = 0.0  # added to every request
    url: str = ""
    _runner: web.AppRunner | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def script(self, stage: Stage, reply: Reply, times: int = 1) -> None:
        for _ in range(times):
            self.scripts[stage].append(reply)

    def stages(self) -> list[Stage]:
        return [stage_of(r["messages"][0]["content"]) for r in self.requests]

    async def start(self) -> "FakeLLM":
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner, port = await serve_locally(app)
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _next_script(self, stage: Stage, user: str) -> Reply | None:
        queue = self.scripts[stage]
        for reply in list(queue):
            if reply.when is None or reply.when(user):
                queue.remove(reply)
                return reply
        return None

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        stage = stage_of(system)
        reply = self._next_script(stage, user) or Reply()
        await asyncio.sleep(self.latency + reply.delay)
        if reply.status == 429:
            return web.json_response(
                {"error": {"message": "rate limited", "type": "rate_limit"}},
                status=429,
                headers={"Retry-After": str(reply.retry_after or 1)},
            )
        if reply.status != 200:
            return web.json_response(
                {"error": {"message": "failure", "type": "server_error"}}, status=reply.status
            )
        content = reply.content if reply.content is not None else _DEFAULTS[stage](user)
        return web.json_response(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(user) // 4,
                    "completion_tokens": len(content) // 4,
                    "total_tokens": (len(user) + len(content)) // 4,
                },
            }
        )
