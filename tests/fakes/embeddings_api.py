"""A fake OpenAI-compatible ``/v1/embeddings`` endpoint on 127.0.0.1.

Each text's vector is its words hashed into ``dimensions`` buckets (a bag of words: texts that share
words point the same way), so tests can tell which passage a query is closest to. ``fail`` makes
every request answer that status; ``calls`` records the inputs of each request.
"""

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.server import serve_locally


def bag_of_words(text: str, dimensions: int) -> list[float]:
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        bucket = int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % dimensions
        vector[bucket] += 1.0
    if not any(vector):
        vector[0] = 1.0
    return vector


@dataclass
class FakeEmbeddingsAPI:
    dimensions: int = 64
    fail: int | None = None
    calls: list[list[str]] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    async def _embeddings(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.calls.append(list(texts))
        if self.fail is not None:
            return web.json_response({"error": {"message": "unavailable"}}, status=self.fail)
        size = int(body.get("dimensions") or self.dimensions)
        data = [
            {"object": "embedding", "index": i, "embedding": bag_of_words(t, size)}
            for i, t in enumerate(texts)
        ]
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return web.json_response({"object": "list", "data": data, "model": body["model"], "usage": usage})

    async def start(self) -> "FakeEmbeddingsAPI":
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner, port = await serve_locally(app)
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
