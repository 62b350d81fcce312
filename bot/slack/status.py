"""One status message per question, with exactly one writer.

Callers change the state and return at once; the writer sends the latest full state at most about
once a second, waits out 429 answers, and shares the workspace's ``chat.update`` budget. Because
every edit carries the whole latest state and only the writer sends, a late or retried edit can
never overwrite a newer one.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from bot.slack.blocks import StatusState, status_text
from bot.slack.gateway import RateLimitedError, SlackCallError, SlackGateway
from retrieval.collections import CollectionsConfig

logger = logging.getLogger(__name__)


class StatusMessage:
    def __init__(
        self,
        *,
        gateway: SlackGateway,
        config: CollectionsConfig,
        team: str,
        channel: str,
        thread_ts: str,
        min_interval: float = 1.0,
    ) -> None:
        self.state = StatusState()
        self._gateway = gateway
        self._config = config
        self._team = team
        self._channel = channel
        self._thread_ts = thread_ts
        self._min_interval = min_interval
        self._ts: str | None = None
        self._version = 0
        self._sent_version = 0
        self._last_sent = 0.0
        self._changed = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def ts(self) -> str | None:
        return self._ts

    async def post(self) -> None:
        """Post the first version in the thread and start the writer."""
        text = status_text(self.state, self._config)
        response = await self._gateway.call(
            "chat.postMessage",
            channel=self._channel,
            thread_ts=self._thread_ts,
            text=text,
            unfurl_links=False,
            unfurl_media=False,
        )
        self._ts = str(response.get("ts", ""))
        self._last_sent = time.monotonic()
        self._writer = asyncio.create_task(self._write_loop(), name="confer-status-writer")

    def update(self, change: Callable[[StatusState], None]) -> None:
        """Change the state; the writer will send it (coalesced with other changes)."""
        change(self.state)
        self._version += 1
        self._changed.set()

    async def close(self, *, wait: float = 600.0) -> None:
        """Let the writer send the final state, then stop it. Under load the workspace budget (about
        50 edits a minute) decides when that is, so the wait is long; shutdown cancels it sooner."""
        self._closing = True
        self._changed.set()
        if self._writer is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._writer), wait)
        except TimeoutError:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer

    async def _write_loop(self) -> None:
        while True:
            if self._sent_version == self._version:
                if self._closing:
                    return
                self._changed.clear()
                await self._changed.wait()
                continue
            wait = self._last_sent + self._min_interval - time.monotonic()
            if wait > 0 and not self._closing:
                await asyncio.sleep(wait)
            await self._gateway.update_budget.acquire(self._team)
            version = self._version
            text = status_text(self.state, self._config)
            try:
                await self._gateway.call(
                    "chat.update", retry_rate_limited=False, channel=self._channel, ts=self._ts, text=text
                )
            except RateLimitedError as limited:
                self._gateway.update_budget.pause(self._team, limited.retry_after)
                self._last_sent = time.monotonic() + limited.retry_after - self._min_interval
                continue  # the next attempt sends whatever is latest by then
            except SlackCallError as error:
                logger.warning("status edit failed", extra={"error": error.error})
                if self._closing:
                    return
            self._last_sent = time.monotonic()
            self._sent_version = version
