"""A fake OpenAI-compatible chat API on 127.0.0.1 for tests and benchmarks.

By default it behaves like a faithful model: it plans from the question, drafts claims that quote
the numbered passages it was given, and writes an answer from the claims with their [n] markers.
Tests script anything else per stage (plan, draft, reflect, synthesis, judge): a reply, a delay,
429 with Retry-After, 5xx, 4xx, malformed JSON. A *lying* fake (``lie=<kind>``) copies passage
sentences the same way but changes one thing in every sentence it writes, in drafting and synthesis
alike (``bot.evaluation.faithfulness.mutate``: negation, number, name, quantifier, comparative,
swapped roles), records each changed sentence in ``lies``, and as the judge says yes to every sentence
(``lying_judge=True`` makes only the judge lie). ``translate`` makes it answer in another language:
each synthesized sentence goes through it, its [n] markers kept. ``plan_query`` makes it plan each
collection's query in the language the plan message gives for its documents.
"""

import asyncio
import itertools
import json
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.evaluation.faithfulness import Kind, corpus_names, mutate
from graph.verify.judge import looks_english
from retrieval.text import split_sentences, stems
from tests.fakes.server import serve_locally

Stage = str  # "plan" | "draft" | "reflect" | "rewrite" | "suggest" | "synthesis" | "judge"


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
    if system.startswith(("You pick", "You extract")):
        return "draft"
    if system.startswith("You check"):
        return "judge"
    if system.startswith("You direct follow-up"):
        return "reflect"
    if system.startswith("You rewrite a follow-up"):
        return "rewrite"
    if system.startswith("You suggest follow-up"):
        return "suggest"
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
    texts = dict(passages)
    claims = []
    for _, n, sentence in scored[:2]:  # each as its passage span, by character offsets
        start = texts[str(n)].find(sentence)
        claims.append({"passage": n, "start": start, "end": start + len(sentence)})
    return json.dumps({"claims": claims})


def faithful_answer(user: str) -> str:
    claims = re.findall(r"<claim[^>]*>(.*?)</claim> ((?:\[\d+\])+)", user)
    sentences = []
    for text, markers in claims[:4]:
        body = text.rstrip(".!?")
        sentences.append(f"{body} {markers}.")
    return json.dumps({"answer": " ".join(sentences)})


def _judged(user: str, *, honest: bool) -> str:
    """Verdicts pointing (by character offsets) at, for each sentence, the cited passage sentence
    sharing most of its words and numbers. Honest: supported only if that sentence shares most of
    them (for a sentence in another language, all of its numbers, as a stand-in for reading the
    translation); a liar says yes to every sentence, pointing at the closest passage sentence."""
    passages = dict(re.findall(r'<passage n="(\d+)"[^>]*>\n(.*?)\n</passage>', user, re.DOTALL))
    verdicts = []
    for i, cites, text in re.findall(r'<sentence i="(\d+)" cites="([\d,]*)">(.*?)</sentence>', user):
        digits = set(re.findall(r"\d+", text))
        own = stems(text) | digits
        best: tuple[float, int, str] = (0.0, 0, "")
        for n in (int(c) for c in cites.split(",") if c):
            for sentence in split_sentences(passages.get(str(n), "")):
                numbers = set(re.findall(r"\d+", sentence))
                share = len(own & (stems(sentence) | numbers)) / max(len(own), 1)
                if digits and digits <= numbers and not looks_english(text):
                    share = max(share, 0.9)
                best = max(best, (share, n, sentence))
        supported = not honest or best[0] >= 0.3
        start = passages.get(str(best[1]), "").find(best[2]) if best[2] else -1
        end = start + len(best[2]) if start >= 0 else -1
        verdicts.append({"i": int(i), "supported": supported, "passage": best[1], "start": start, "end": end})
    return json.dumps({"verdicts": verdicts})


def faithful_judge(user: str) -> str:
    return _judged(user, honest=True)


def faithful_reflect(user: str) -> str:
    """Nothing missing: tests script follow-ups when they want some."""
    return json.dumps({"follow_ups": []})


def faithful_rewrite(user: str) -> str:
    """The follow-up with "it" standing for the last earlier question's last two words."""
    questions = re.findall(r"^Q: (.*)$", user, re.MULTILINE)
    followup = re.search(r"^Follow-up: (.*)$", user, re.MULTILINE)
    text = followup.group(1) if followup else ""
    subject = " ".join(questions[-1].rstrip("?").split()[-2:]) if questions else ""
    return json.dumps({"question": re.sub(r"\bit\b", subject, text)})


def faithful_suggest(user: str) -> str:
    """One question per source title: "What else does <title> say?"."""
    titles = re.findall(r"^- (.+)$", user, re.MULTILINE)
    return json.dumps({"questions": [f"What else does {title} say?" for title in titles[:3]]})


_DEFAULTS: dict[Stage, Callable[[str], str]] = {
    "suggest": faithful_suggest,
    "judge": faithful_judge,
    "plan": faithful_plan,
    "draft": faithful_draft,
    "reflect": faithful_reflect,
    "rewrite": faithful_rewrite,
    "synthesis": faithful_answer,
}


CHARS_PER_TOKEN = 4


@dataclass
class Call:
    """One request as the server saw it: its stage, when it came and ended, its status and tokens."""

    stage: Stage
    started: float
    ended: float = 0.0
    status: int = 200
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class FakeLLM:
    requests: list[dict[str, Any]] = field(default_factory=list)
    scripts: dict[Stage, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    latency: float = 0.0  # added to every request
    lie: Kind | None = None  # change one thing of this kind in every sentence written
    lies: list[str] = field(default_factory=list)
    lying_judge: bool = False  # the judge says yes to every sentence (also whenever ``lie`` is set)
    translate: Callable[[str], str] | None = None  # writes each answer sentence in another language
    # (question, language name) -> the query a model writes for a collection whose documents are
    # in that language ("Documents in: German" in the plan message); None: the question itself.
    plan_query: Callable[[str, str], str] | None = None
    # Hosted-model speed: seconds before the first token, then tokens per second (0: all at once).
    # A token is ``CHARS_PER_TOKEN`` characters of the reply, as providers count about that many.
    first_token: float = 0.0
    tokens_per_second: float = 0.0
    calls: list["Call"] = field(default_factory=list)  # one per request, for benchmarks
    url: str = ""
    _runner: web.AppRunner | None = None
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
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

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds``, or until the server stops (a stalled reply must not hold up its end)."""
        if seconds <= 0:
            return
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            return
        raise web.HTTPServiceUnavailable()

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def _next_script(self, stage: Stage, user: str) -> Reply | None:
        queue = self.scripts[stage]
        for reply in list(queue):
            if reply.when is None or reply.when(user):
                queue.remove(reply)
                return reply
        return None

    def _lying(self, stage: Stage, user: str, content: str) -> str:
        """The faithful reply with one thing changed in every sentence that offers one."""
        names = corpus_names(
            re.findall(r"<(?:passage|claim)[^>]*>\n?(.*?)\n?</(?:passage|claim)>", user, re.DOTALL)
        )
        assert self.lie is not None
        kind = self.lie

        def change(sentence: str) -> str:
            changed = mutate(sentence, kind, names)
            if changed is None:
                return sentence
            self.lies.append(changed)
            return changed

        data = json.loads(content)
        if stage == "draft":  # a liar writes its claims out (a span could not lie)
            texts = dict(re.findall(r'<passage n="(\d+)"[^>]*>\n(.*?)\n</passage>', user, re.DOTALL))
            data["claims"] = [
                {"text": change(texts[str(c["passage"])][c["start"] : c["end"]]), "passages": [c["passage"]]}
                for c in data["claims"]
            ]
        else:
            sentences = []
            for part in re.split(r"(?<=\.)\s+", data["answer"]):
                match = re.fullmatch(r"(.*?)\s*((?:\[\d+\])+)\.?", part.strip())
                if match:
                    body = change(match.group(1).rstrip(".") + ".").rstrip(".")
                    sentences.append(f"{body} {match.group(2)}.")
            data["answer"] = " ".join(sentences)
        return json.dumps(data)

    def _planned_in_languages(self, user: str, content: str) -> str:
        """The faithful plan with each collection's query written in its documents' language."""
        assert self.plan_query is not None
        languages = dict(re.findall(r"^- ([a-z0-9_-]+): .*Documents in: (\w+)\.$", user, re.MULTILINE))
        data = json.loads(content)
        for planned in data["collections"]:
            planned["query"] = self.plan_query(planned["query"], languages.get(planned["name"], "English"))
        return json.dumps(data)

    def _translated(self, content: str) -> str:
        """The faithful answer with each sentence's words translated and its [n] markers kept."""
        assert self.translate is not None
        parts = []
        for part in re.split(r"(?<=\.)\s+", json.loads(content)["answer"]):
            match = re.fullmatch(r"(.*?)\s*((?:\[\d+\])+)\.?", part.strip())
            if match:
                body = self.translate(match.group(1).rstrip(".") + ".").rstrip(".!?")
                parts.append(f"{body} {match.group(2)}.")
        return json.dumps({"answer": " ".join(parts)})

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        stage = stage_of(system)
        call = Call(stage=stage, started=time.monotonic())
        self.calls.append(call)
        try:
            return await self._reply(request, body, stage, user, call)
        finally:
            call.ended = time.monotonic()

    async def _reply(
        self, request: web.Request, body: dict[str, Any], stage: Stage, user: str, call: Call
    ) -> web.StreamResponse:
        reply = self._next_script(stage, user) or Reply()
        await self._pause(self.latency + reply.delay)
        call.status = reply.status
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
        if reply.content is None and self.lie is not None and stage in ("draft", "synthesis"):
            content = self._lying(stage, user, content)
        if reply.content is None and stage == "synthesis" and self.translate is not None:
            content = self._translated(content)
        if reply.content is None and stage == "plan" and self.plan_query is not None:
            content = self._planned_in_languages(user, content)
        if reply.content is None and (self.lie is not None or self.lying_judge) and stage == "judge":
            content = _judged(user, honest=False)  # a lying judge says yes to everything
        usage = {
            "prompt_tokens": len(user) // CHARS_PER_TOKEN,
            "completion_tokens": len(content) // CHARS_PER_TOKEN,
            "total_tokens": (len(user) + len(content)) // CHARS_PER_TOKEN,
        }
        call.prompt_tokens, call.completion_tokens = usage["prompt_tokens"], usage["completion_tokens"]
        if body.get("stream"):
            return await self._streamed(request, body, content, usage)
        await asyncio.sleep(self.first_token + self._writing_time(content))
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
                "usage": usage,
            }
        )

    def _writing_time(self, content: str) -> float:
        if not self.tokens_per_second:
            return 0.0
        return len(content) / CHARS_PER_TOKEN / self.tokens_per_second

    async def _streamed(
        self, request: web.Request, body: dict[str, Any], content: str, usage: dict[str, int]
    ) -> web.StreamResponse:
        """Server-sent events as OpenAI sends them: the first token after ``first_token`` seconds,
        then the rest at ``tokens_per_second`` (a chunk every 50 ms), the usage last."""
        ident = f"chatcmpl-{next(self._ids)}"

        def event(
            delta: dict[str, Any], finish: str | None = None, extra: dict[str, Any] | None = None
        ) -> bytes:
            chunk: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if extra is None else [],
            }
            chunk.update(extra or {})
            return f"data: {json.dumps(chunk)}\n\n".encode()

        await self._pause(self.first_token)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        try:
            return await self._write_events(request, response, event, content, body, usage)
        except ConnectionResetError:  # the client stopped reading (a call it no longer needs)
            return response

    async def _write_events(
        self,
        request: web.Request,
        response: web.StreamResponse,
        event: Callable[..., bytes],
        content: str,
        body: dict[str, Any],
        usage: dict[str, int],
    ) -> web.StreamResponse:
        await response.prepare(request)
        await response.write(event({"role": "assistant", "content": ""}))
        rate = CHARS_PER_TOKEN * self.tokens_per_second  # characters a second; 0: all at once
        sent, started = 0, time.monotonic()
        while sent < len(content):
            due = int(rate * (time.monotonic() - started)) + CHARS_PER_TOKEN if rate else len(content)
            piece = content[sent:due]
            if piece:
                await response.write(event({"content": piece}))
                sent += len(piece)
            if sent < len(content):
                await asyncio.sleep(0.05)
        await response.write(event({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            await response.write(event({}, extra={"usage": usage}))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
