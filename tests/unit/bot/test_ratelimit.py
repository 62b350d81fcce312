import time

import pytest

from bot.chat.ratelimit import RateBudget, Window


async def test_a_budget_lets_a_burst_through_then_spaces_calls_to_its_rate() -> None:
    budget = RateBudget((Window(3, 0.3),))
    started = time.monotonic()
    for _ in range(3):
        await budget.acquire("conversation")
    burst = time.monotonic() - started
    await budget.acquire("conversation")  # the fourth waits for one token: 0.1 s at 10 a second
    assert burst < 0.05 and time.monotonic() - started >= 0.09


async def test_every_window_must_have_room_and_places_do_not_share() -> None:
    budget = RateBudget((Window(5, 1.0), Window(2, 0.2)))
    started = time.monotonic()
    for _ in range(3):
        await budget.acquire("a")
    assert time.monotonic() - started >= 0.09  # the 2-per-0.2-s window spaced the third call
    quick = time.monotonic()
    await budget.acquire("b")
    assert time.monotonic() - quick < 0.05


async def test_a_pause_holds_back_the_next_call() -> None:
    budget = RateBudget((Window(10, 1.0),))
    await budget.pause("a", 0.2)
    started = time.monotonic()
    await budget.acquire("a")
    assert time.monotonic() - started >= 0.19


async def test_forgetting_full_places_keeps_the_credit_others_have_earned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pruning (above ``max_keys``) must not throw away what a half-refilled place has regained."""
    clock = [0.0]
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr("bot.chat.ratelimit.time.monotonic", lambda: clock[0])
    monkeypatch.setattr("bot.chat.ratelimit.asyncio.sleep", fake_sleep)
    budget = RateBudget((Window(2, 10.0),), max_keys=1)
    await budget.acquire("a")
    await budget.acquire("a")  # "a" is empty; it regains one call every 5 s
    await budget.acquire("b")
    clock[0] = 5.0
    await budget.acquire("c")  # more places than max_keys: full ones are forgotten
    await budget.acquire("a")  # 5 s have passed: "a" has one call again
    assert waits == []
