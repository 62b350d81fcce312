"""The ``ChatModel`` for any OpenAI-compatible endpoint: OpenAI, Azure OpenAI, vLLM, Ollama,
LiteLLM. Imported only when a model is configured (the ``openai`` package takes most of a second to
import)."""

import asyncio
import json
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletionChunk
from pydantic import ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.stop import stop_base

from graph.llm.port import LLMError, LLMObserver, LocalBreaker, ModelBreaker, SchemaT, extract_json
from graph.spans import model_call_span
from graph.trace import calling, current_purpose, note_model_call, purpose_of

logger = logging.getLogger(__name__)


class _NoObserver:
    def request_finished(
        self, *, outcome: str, seconds: float, prompt_tokens: int, completion_tokens: int
    ) -> None:
        return None

    def breaker_tripped(self, *, reason: str, seconds: float) -> None:
        return None

    def request_skipped(self, *, reason: str) -> None:
        return None


def _retry_after(error: openai.APIStatusError) -> float | None:
    value = error.response.headers.get("retry-after") if error.response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# A call whose first token has not come within its budget (or ``stall_seconds``) is a stall when
# it waited at least this long; a shorter wait is only a budget the question's deadline cut short.
MIN_STALL_WAIT = 1.0


class _StalledError(Exception):
    """No first token in time: the model accepted the request and said nothing."""


class _RetryableError(Exception):
    """An attempt that failed before its first token in a way worth another (``reason``), after
    ``wait`` seconds when the provider said so."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait


class _StopBefore(stop_base):
    """Stop when the pause before the next attempt would pass the question's deadline (tenacity's
    ``stop_before_delay`` counts from the first attempt, not to a monotonic deadline)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return time.monotonic() + (retry_state.upcoming_sleep or 0.0) >= self.deadline


# A request sent: its stream, the stream's iterator and the first chunk with content (or usage).
_Opened = tuple[
    AsyncStream[ChatCompletionChunk], AsyncIterator[ChatCompletionChunk], ChatCompletionChunk | None
]


class OpenAIChatModel:
    """``complete_json`` and ``stream_text`` over ``/v1/chat/completions`` with JSON output, every
    request streamed. No first token within ``stall_seconds`` or the call's budget is a stall: the
    breaker opens for ``cooldown`` seconds; a 429 with ``Retry-After`` opens it for that long; both
    fail the call at once. Retries with exponential backoff and jitter on 429 without
    ``Retry-After``, 5xx and connection errors, before the first token only; never on other 4xx.
    While the breaker is open no request is sent (``breaker_open``)."""

    def __init__(
        self,
        *,
        client: openai.AsyncOpenAI,
        model: str,
        observer: LLMObserver | None = None,
        breaker: ModelBreaker | None = None,
        max_attempts: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        stall_seconds: float = 5.0,
        cooldown: float = 30.0,
    ) -> None:
        self._client = client
        self._model = model
        self._observer = observer or _NoObserver()
        self.breaker: ModelBreaker = breaker or LocalBreaker()
        self._max_attempts = max_attempts
        self._backoff = backoff
        self._max_backoff = max_backoff
        self.stall_seconds = stall_seconds
        self.cooldown = cooldown

    async def complete_json(
        self, *, system: str, user: str, schema: type[SchemaT], time_budget: float
    ) -> SchemaT:
        with calling(purpose_of(schema.__name__)):
            content = "".join(
                [piece async for piece in self.stream_text(system=system, user=user, time_budget=time_budget)]
            )
        try:
            return schema.model_validate(json.loads(extract_json(content)))
        except (ValueError, ValidationError):
            raise LLMError(reason="invalid_output") from None

    async def stream_text(self, *, system: str, user: str, time_budget: float) -> AsyncGenerator[str, None]:
        deadline = time.monotonic() + time_budget

        def give_up(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            if state.attempt_number < self._max_attempts:  # the next pause would pass the deadline
                raise LLMError(reason="timeout")
            raise LLMError(reason=error.reason if isinstance(error, _RetryableError) else "no attempt")

        # Tenacity runs the attempts; each one is measured here (``_attempt``), and only what fails
        # before the first token is retried. The openai client's own retries stay off: it would
        # wait out a 429's Retry-After (Confer opens the breaker and answers without the model
        # instead), it cannot stop at the question's deadline, and it reports no attempt but the last.
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._max_attempts) | _StopBefore(deadline),
            wait=self._pause,
            retry=retry_if_exception_type(_RetryableError),
            retry_error_callback=give_up,
        )
        opened: tuple[_Opened, float] | None = None
        async for attempt in retrying:
            with attempt:
                opened = await self._attempt(system, user, deadline)
        assert opened is not None  # tenacity returns only after a successful attempt
        (stream, pieces, first), started = opened
        await self.breaker.reset()
        async for piece in self._rest(stream, pieces, first, started, deadline):
            yield piece

    def _pause(self, state: RetryCallState) -> float:
        """The provider's ``Retry-After`` on a 5xx, else exponential backoff with jitter."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, _RetryableError) and error.wait is not None:
            return error.wait
        return min(self._max_backoff, self._backoff * 2.0 ** (state.attempt_number - 1)) * (
            0.5 + random.random()
        )

    async def _attempt(self, system: str, user: str, deadline: float) -> "tuple[_Opened, float]":
        """One request, measured: opened, or a final ``LLMError``, or a ``_RetryableError``."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LLMError(reason="timeout")
        if not await self.breaker.allows():
            self._observer.request_skipped(reason="breaker_open")
            raise LLMError(reason="breaker_open")
        started = time.monotonic()
        try:
            return await self._open(system, user, remaining), started
        except _StalledError:
            self._report("timeout", started)
            await self._trip("stalled", self.cooldown)
            raise LLMError(reason="stalled") from None
        except (TimeoutError, openai.APITimeoutError):
            self._report("timeout", started)
            raise _RetryableError("timeout") from None
        except openai.RateLimitError as error:
            self._report("rate_limited", started)
            wait = _retry_after(error)
            if wait is not None:  # the provider said when: nothing is sent before then
                await self._trip("rate_limited", wait)
                raise LLMError(reason="rate_limited") from None
            raise _RetryableError("rate_limited") from None
        except openai.APIStatusError as error:
            if error.status_code < 500:
                self._report("rejected", started)
                raise LLMError(reason=f"http_{error.status_code}") from None
            self._report("server_error", started)
            raise _RetryableError("server_error", _retry_after(error)) from None
        except openai.APIConnectionError:
            self._report("connection_error", started)
            raise _RetryableError("connection_error") from None

    async def _open(self, system: str, user: str, remaining: float) -> "_Opened":
        """The request sent and its first chunk with content read, within the stall time."""
        stall = min(remaining, self.stall_seconds)
        stream: AsyncStream[ChatCompletionChunk] | None = None
        try:
            async with asyncio.timeout(stall):
                stream = await self._client.chat.completions.create(
                    model=self._model,
                    messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                    temperature=0,
                    response_format={"type": "json_object"},
                    stream=True,
                    stream_options={"include_usage": True},
                    timeout=remaining,
                )
                pieces = stream.__aiter__()
                async for chunk in pieces:
                    if _content(chunk) or chunk.usage is not None:
                        return stream, pieces, chunk
                return stream, pieces, None
        except TimeoutError:
            if stream is not None:
                await stream.close()
            if stall >= min(MIN_STALL_WAIT, self.stall_seconds):  # not a budget the deadline cut short
                raise _StalledError from None
            raise
        except BaseException:
            if stream is not None:
                await stream.close()
            raise

    async def _rest(
        self,
        stream: AsyncStream[ChatCompletionChunk],
        pieces: AsyncIterator[ChatCompletionChunk],
        first: ChatCompletionChunk | None,
        started: float,
        deadline: float,
    ) -> AsyncIterator[str]:
        """The content as it comes, each chunk awaited only until the call's deadline."""
        prompt = completion = 0
        outcome = "ok"
        try:
            chunk = first
            while chunk is not None:
                if chunk.usage is not None:
                    prompt, completion = chunk.usage.prompt_tokens, chunk.usage.completion_tokens
                text = _content(chunk)
                if text:
                    yield text
                try:
                    chunk = await asyncio.wait_for(anext(pieces, None), deadline - time.monotonic())
                except (TimeoutError, openai.APITimeoutError):
                    outcome = "timeout"
                    raise LLMError(reason="timeout") from None
                except openai.APIError:
                    outcome = "connection_error"
                    raise LLMError(reason="connection_error") from None
        finally:
            self._report(outcome, started, prompt, completion)
            await stream.close()

    async def _trip(self, reason: str, seconds: float) -> None:
        if await self.breaker.trip(seconds=seconds, reason=reason):
            logger.warning(
                "model %s: not asked for %.0f s; answers are extractive meanwhile",
                reason,
                seconds,
                extra={"reason": reason, "seconds": seconds},
            )
            self._observer.breaker_tripped(reason=reason, seconds=seconds)

    async def close(self) -> None:
        await self._client.close()
        await self.breaker.close()

    def _report(self, outcome: str, started: float, prompt: int = 0, completion: int = 0) -> None:
        seconds = time.monotonic() - started
        self._observer.request_finished(
            outcome=outcome, seconds=seconds, prompt_tokens=prompt, completion_tokens=completion
        )
        model_call_span(
            model=self._model,
            purpose=current_purpose(),
            outcome=outcome,
            seconds=seconds,
            prompt_tokens=prompt,
            completion_tokens=completion,
        )
        note_model_call(
            model=self._model,
            outcome=outcome,
            seconds=seconds,
            prompt_tokens=prompt,
            completion_tokens=completion,
        )


def _content(chunk: ChatCompletionChunk) -> str:
    return (chunk.choices[0].delta.content or "") if chunk.choices else ""


def build_chat_model(
    *,
    base_url: str | None,
    api_key: str | None,
    model: str,
    observer: LLMObserver | None = None,
    breaker: ModelBreaker | None = None,
    request_timeout: float = 60.0,
    stall_seconds: float = 5.0,
    cooldown: float = 30.0,
) -> OpenAIChatModel:
    """Build the client (nothing connects until the first request). The client's own retries are
    off (``max_retries=0``): tenacity resends in ``OpenAIChatModel.stream_text``, so that each
    attempt is measured, a 429's Retry-After opens the breaker instead of being waited out, and the
    question's time budget is respected."""
    client = openai.AsyncOpenAI(
        base_url=base_url, api_key=api_key or "not-needed", max_retries=0, timeout=request_timeout
    )
    return OpenAIChatModel(
        client=client,
        model=model,
        observer=observer,
        breaker=breaker,
        stall_seconds=stall_seconds,
        cooldown=cooldown,
    )
