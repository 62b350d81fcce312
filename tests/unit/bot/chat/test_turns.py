import asyncio

import pytest

from bot.chat.turns import TurnGate


async def _turns_until_all_entered(
    gate: TurnGate, callers: int, cancel: frozenset[int] = frozenset()
) -> list[int]:
    """Start ``callers`` at once; return, for each caller that got through, the loop turn it did."""
    turn = 0
    entered: list[tuple[int, int]] = []

    async def caller(n: int) -> None:
        await gate.enter()
        entered.append((n, turn))

    tasks = [asyncio.create_task(caller(n)) for n in range(callers)]
    for n in cancel:
        tasks[n].cancel()
    while not all(t.done() for t in tasks):
        await asyncio.sleep(0)  # one turn of the loop
        turn += 1
    return [t for _, t in sorted(entered)]


async def test_a_burst_goes_through_a_few_callers_per_turn_in_arrival_order() -> None:
    turns = await _turns_until_all_entered(TurnGate(per_turn=3), callers=10)
    assert len(turns) == 10
    assert turns == sorted(turns)  # first come, first served
    for turn in set(turns):
        assert turns.count(turn) <= 3
    assert len(set(turns)) >= 4


async def test_a_caller_that_goes_away_while_waiting_takes_no_place() -> None:
    turns = await _turns_until_all_entered(TurnGate(per_turn=2), callers=6, cancel=frozenset({2, 3}))
    assert len(turns) == 4
    for turn in set(turns):
        assert turns.count(turn) <= 2


async def test_callers_that_fit_in_one_turn_do_not_wait() -> None:
    gate = TurnGate(per_turn=4)
    turn_passed: list[bool] = []
    asyncio.get_running_loop().call_soon(turn_passed.append, True)
    for _ in range(4):
        await gate.enter()
    assert not turn_passed  # all four went through in the same turn
    with pytest.raises(ValueError):
        TurnGate(per_turn=0)
