import asyncio

from bot.chat.progress import Row, StatusState, StatusWriter
from bot.chat.ratelimit import RetryLaterError
from bot.errors import ChatCallError


class RecordingSink:
    """Records what a person would see: each posted or edited version of the status."""

    def __init__(self, *, edit_failures: list[Exception] | None = None) -> None:
        self.shown: list[tuple[str, str, dict[str, Row]]] = []
        self.failures = list(edit_failures or [])
        self.edited = asyncio.Event()
        self.refused = asyncio.Event()
        self.posted = asyncio.Event()

    async def post_status(self, state: StatusState) -> None:
        self.shown.append(("post", state.phase, dict(state.rows)))
        self.posted.set()

    async def edit_status(self, state: StatusState) -> None:
        if self.failures:
            failure = self.failures.pop(0)
            if not self.failures:
                self.refused.set()
            raise failure
        self.shown.append(("edit", state.phase, dict(state.rows)))
        self.edited.set()


async def test_nothing_is_posted_for_a_question_that_never_researches() -> None:
    sink = RecordingSink()
    writer = StatusWriter(sink, min_interval=0.01)
    writer.start()
    writer.update(lambda s: setattr(s, "phase", "researching"))
    writer.update(lambda s: setattr(s, "summary", "done"))
    await writer.close(wait=2)
    assert sink.shown == []


async def test_rapid_changes_are_coalesced_and_the_last_state_always_lands() -> None:
    sink = RecordingSink()
    writer = StatusWriter(sink, min_interval=0.2)
    writer.start()
    writer.update(lambda s: s.rows.update({"a": Row(), "b": Row()}))
    for name in ("a", "b"):
        writer.update(lambda s, n=name: s.rows.__setitem__(n, Row(status="ok", sources=1)))  # type: ignore[misc]
    writer.update(lambda s: setattr(s, "phase", "done"))
    await writer.close(wait=5)
    assert sink.shown[0][0] == "post"
    assert len(sink.shown) <= 3  # five changes, at most a post and two edits
    assert sink.shown[-1][1] == "done" and all(r.status == "ok" for r in sink.shown[-1][2].values())


async def test_retry_later_is_waited_out_and_a_failed_edit_does_not_stop_the_writer() -> None:
    later = RetryLaterError(method="update", retry_after=0.2)
    sink = RecordingSink(edit_failures=[later, ChatCallError(method="update", error="bad_request")])
    writer = StatusWriter(sink, min_interval=0.01)
    writer.start()
    writer.update(lambda s: s.rows.update({"a": Row()}))
    await asyncio.wait_for(sink.posted.wait(), 5)
    writer.update(lambda s: s.rows.__setitem__("a", Row(status="ok")))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(sink.refused.wait(), 5)  # both failures met: a wait, then a refused edit
    writer.update(lambda s: setattr(s, "phase", "done"))
    await writer.close(wait=5)
    assert loop.time() - started >= 0.2
    assert sink.shown[0][0] == "post" and sink.shown[-1][1] == "done"


async def test_first_post_waits_for_a_status_still_being_posted() -> None:
    release = asyncio.Event()

    class SlowSink(RecordingSink):
        async def post_status(self, state: StatusState) -> None:
            await release.wait()
            await super().post_status(state)

    sink = SlowSink()
    writer = StatusWriter(sink, min_interval=0.01)
    writer.start()
    await writer.first_post()  # nothing worth showing yet: returns at once
    writer.update(lambda s: s.rows.update({"a": Row()}))
    waiting = asyncio.ensure_future(writer.first_post())
    await asyncio.sleep(0)
    assert not waiting.done()
    release.set()
    await asyncio.wait_for(waiting, 5)
    assert sink.shown[0][0] == "post"
    await writer.close(wait=2)


async def test_flush_sends_the_final_state_at_once_and_gives_up_on_a_platform_that_says_later() -> None:
    sink = RecordingSink()
    writer = StatusWriter(sink, min_interval=30.0)  # an edit would otherwise wait half a minute
    writer.start()
    writer.update(lambda s: s.rows.update({"a": Row()}))
    await writer.first_post()
    writer.update(lambda s: setattr(s, "phase", "done"))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await writer.flush(wait=5)
    assert sink.shown[-1][1] == "done" and loop.time() - started < 1
    stuck = RecordingSink(edit_failures=[RetryLaterError(method="update", retry_after=60)] * 2)
    writer = StatusWriter(stuck, min_interval=0.01)
    writer.start()
    writer.update(lambda s: s.rows.update({"a": Row()}))
    await writer.first_post()
    writer.update(lambda s: setattr(s, "phase", "done"))
    started = loop.time()
    await writer.flush(wait=0.3)  # bounded: the answer is not held for the platform's minute
    assert 0.25 < loop.time() - started < 2 and stuck.shown[-1][1] != "done"
    await writer.close(wait=0.1)
