import pytest

from bot.chat.ratelimit import RateBudget, Window
from tests.fakes.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def test_a_budget_lets_a_burst_through_then_spaces_calls_to_its_rate(clock: FakeClock) -> None:
    budget = RateBudget((Window(3, 0.3),), clock=clock, sleep=clock.sleep)
    for _ in range(3):
        await budget.acquire("conversation")
    assert clock.now == 0.0  # the burst went through without a wait
    await budget.acquire("conversation")  # the fourth waits for one token: 0.1 s at 10 a second
    assert clock.now == pytest.approx(0.1)


async def test_every_window_must_have_room_and_places_do_not_share(clock: FakeClock) -> None:
    budget = RateBudget((Window(5, 1.0), Window(2, 0.2)), clock=clock, sleep=clock.sleep)
    for _ in range(3):
        await budget.acquire("a")
    assert clock.now == pytest.approx(0.1)  # the 2-per-0.2-s window spaced the third call
    await budget.acquire("b")
    assert clock.now == pytest.approx(0.1)  # another place has its own budget


async def test_a_pause_holds_back_the_next_call(clock: FakeClock) -> None:
    budget = RateBudget((Window(10, 1.0),), clock=clock, sleep=clock.sleep)
    await budget.pause("a", 0.2)
    await budget.acquire("a")
    assert clock.now == pytest.approx(0.3)  # the 0.2 s pause, then one call's refill at 10 a second


async def test_forgetting_full_places_keeps_the_credit_others_have_earned(clock: FakeClock) -> None:
    """Pruning (above ``max_keys``) must not throw away what a half-refilled place has regained."""
    budget = RateBudget((Window(2, 10.0),), max_keys=1, clock=clock, sleep=clock.sleep)
    await budget.acquire("a")
    await budget.acquire("a")  # "a" is empty; it regains one call every 5 s
    await budget.acquire("b")
    clock.now = 5.0
    await budget.acquire("c")  # more places than max_keys: full ones are forgotten
    await budget.acquire("a")  # 5 s have passed: "a" has one call again
    assert clock.slept == []
