"""The Web API gateway against the fake Slack API: lost connections and time-outs are temporary call
errors; only calls that change nothing when sent twice are sent again."""

from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.metrics import build_metrics
from bot.slack.gateway import CONNECTION_LOST, TIMED_OUT, SlackCallError, SlackGateway, share_session
from tests.fakes.slack_api import FakeSlackApi


@pytest.fixture
async def slack() -> AsyncIterator[tuple[FakeSlackApi, SlackGateway]]:
    fake = await FakeSlackApi().start()
    client = AsyncWebClient(token="xoxb-test", base_url=fake.url + "/", timeout=0.5, retry_handlers=[])  # type: ignore[arg-type]
    session = share_session(client)
    yield fake, SlackGateway(client=client, metrics=build_metrics())
    await session.close()
    await fake.stop()


@pytest.mark.parametrize(("fault", "error"), [("drop", CONNECTION_LOST), ("late", TIMED_OUT)])
async def test_a_post_whose_answer_is_lost_is_an_uncertain_call_error_and_never_resent(
    slack: tuple[FakeSlackApi, SlackGateway], fault: str, error: str
) -> None:
    fake, gateway = slack
    if fault == "drop":
        fake.script("chat.postMessage", drop="after")
    else:
        fake.script("chat.postMessage", delay=1.0)  # past the client's 0.5 s time-out
    with pytest.raises(SlackCallError) as caught:
        await gateway.call("chat.postMessage", channel="C0001", thread_ts="1.1", text="hello")
    assert (caught.value.error, caught.value.uncertain) == (error, True)
    await fake.wait_for(lambda: bool(fake.calls))  # a late answer is recorded once it is written
    assert len([c for c in fake.calls if c.method == "chat.postMessage"]) == 1  # sent once
    lost = gateway.metrics.registry.get_sample_value(
        "confer_slack_api_calls_total", {"method": "chat.postMessage", "outcome": "connection_error"}
    )
    assert lost == 1.0


@pytest.mark.parametrize("fault", ["drop", "late"])
async def test_a_read_whose_answer_is_lost_is_sent_again(
    slack: tuple[FakeSlackApi, SlackGateway], fault: str
) -> None:
    fake, gateway = slack
    fake.threads[("C0001", "1.1")] = [{"type": "message", "ts": "1.1", "text": "question"}]
    if fault == "drop":
        fake.script("conversations.replies", drop="after")
    else:
        fake.script("conversations.replies", delay=1.0)
    response = await gateway.call("conversations.replies", channel="C0001", ts="1.1")
    assert [m["text"] for m in response["messages"]] == ["question"]
    await fake.wait_for(lambda: len(fake.calls) == 2)  # the lost one, then the one answered


async def test_a_slack_that_cannot_be_reached_is_a_call_error_after_retries() -> None:
    fake = await FakeSlackApi().start()
    url = fake.url + "/"
    await fake.stop()  # nothing listens there any more: the call is never sent
    client = AsyncWebClient(token="xoxb-test", base_url=url, timeout=0.5, retry_handlers=[])  # type: ignore[arg-type]
    session = share_session(client)
    gateway = SlackGateway(client=client, metrics=build_metrics())
    try:
        with pytest.raises(SlackCallError) as caught:
            await gateway.call("chat.postMessage", channel="C0001", text="hello", attempts=2)
        assert (caught.value.error, caught.value.uncertain) == (CONNECTION_LOST, False)
    finally:
        await session.close()
