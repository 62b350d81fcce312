"""The ``ChatModel`` for any OpenAI-compatible endpoint: OpenAI, Azure OpenAI, vLLM, Ollama,
LiteLLM. Imported only when a model is configured (the ``openai`` package takes most of a second to
import)."""

import asyncio
import json
import random
import time

import openai
from pydantic import ValidationError

from graph.llm import LLMError, LLMObserver, SchemaT, extract_json


class _NoObserver:
    def request_finished(
        self, *, outcome: str, seconds: float, prompt_tokens: int, completion_tokens: int
    ) -> None:
        return None


def _retry_after(error: openai.APIStatusError) -> float | None:
    value = error.response.headers.get("retry-after") if error.response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class OpenAIChatModel:
    """``complete_json`` over ``/v1/chat/completions`` with JSON output, timeouts, and retries
    with exponential backoff and jitter on 429 (honouring ``Retry-After``), 5xx, timeouts and
    connection errors; never on other 4xx."""

    def __init__(
        self,
        *,
        client: openai.AsyncOpenAI,
        model: str,
        observer: LLMObserver | None = None,
        max_attempts: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
    ) -> None:
        self._client = client
        self._model = model
        self._observer = observer or _NoObserver()
        self._max_attempts = max_attempts
        self._backoff = backoff
        self._max_backoff = max_backoff

    async def complete_json(
        self, *, system: str, user: str, schema: type[SchemaT], time_budget: float
    ) -> SchemaT:
        deadline = time.monotonic() + time_budget
        last = "no attempt"
        for attempt in range(self._max_attempts):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LLMError(reason="timeout")
            started = time.monotonic()
            wait: float | None = None
            try:
                async with asyncio.timeout(remaining):
                    response = await self._client.chat.completions.create(
                        model=self._model,
                        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                        temperature=0,
                        response_format={"type": "json_object"},
                        timeout=remaining,
                    )
            except (TimeoutError, openai.APITimeoutError):
                self._report("timeout", started)
                last = "timeout"
            except openai.RateLimitError as error:
                self._report("rate_limited", started)
                last, wait = "rate_limited", _retry_after(error)
            except openai.APIStatusError as error:
                if error.status_code < 500:
                    self._report("rejected", started)
                    raise LLMError(reason=f"http_{error.status_code}") from None
                self._report("server_error", started)
                last, wait = "server_error", _retry_after(error)
            except openai.APIConnectionError:
                self._report("connection_error", started)
                last = "connection_error"
            else:
                usage = response.usage
                self._report(
                    "ok",
                    started,
                    usage.prompt_tokens if usage else 0,
                    usage.completion_tokens if usage else 0,
                )
                content = response.choices[0].message.content if response.choices else None
                try:
                    return schema.model_validate(json.loads(extract_json(content or "")))
                except (ValueError, ValidationError):
                    raise LLMError(reason="invalid_output") from None
            if attempt + 1 < self._max_attempts:
                delay = wait if wait is not None else min(self._max_backoff, self._backoff * 2**attempt)
                delay *= 1 if wait is not None else 0.5 + random.random()
                if time.monotonic() + delay >= deadline:
                    raise LLMError(reason="timeout")
                await asyncio.sleep(delay)
        raise LLMError(reason=last)

    async def close(self) -> None:
        await self._client.close()

    def _report(self, outcome: str, started: float, prompt: int = 0, completion: int = 0) -> None:
        self._observer.request_finished(
            outcome=outcome,
            seconds=time.monotonic() - started,
            prompt_tokens=prompt,
            completion_tokens=completion,
        )


def build_chat_model(
    *,
    base_url: str | None,
    api_key: str | None,
    model: str,
    observer: LLMObserver | None = None,
    request_timeout: float = 60.0,
) -> OpenAIChatModel:
    """Build the client (nothing connects until the first request). Retries are ours, not the
    client's, so that each attempt is measured and the question's time budget is respected."""
    client = openai.AsyncOpenAI(
        base_url=base_url, api_key=api_key or "not-needed", max_retries=0, timeout=request_timeout
    )
    return OpenAIChatModel(client=client, model=model, observer=observer)
