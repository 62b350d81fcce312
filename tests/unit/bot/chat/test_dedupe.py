"""In-process deduplication: exactly once within the TTL, bounded memory, counted."""

import pytest

from bot.chat.dedupe import MemoryDeduplicator
from bot.metrics import build_metrics


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def test_a_redelivery_within_the_ttl_is_dropped_and_after_it_is_new(clock: Clock) -> None:
    dedupe = MemoryDeduplicator(ttl=60, clock=clock)
    assert await dedupe.first_delivery("Ev1") is True
    clock.now += 59
    assert await dedupe.first_delivery("Ev1") is False
    clock.now += 2
    assert await dedupe.first_delivery("Ev1") is True


async def test_expired_ids_are_forgotten_as_time_passes(clock: Clock) -> None:
    dedupe = MemoryDeduplicator(ttl=60, clock=clock)
    for n in range(1000):
        await dedupe.first_delivery(f"Ev{n}")
    assert len(dedupe) == 1000
    clock.now += 61
    await dedupe.first_delivery("EvLater")
    assert len(dedupe) == 1


async def test_memory_is_bounded_within_the_ttl_and_evictions_are_counted(clock: Clock) -> None:
    metrics = build_metrics()
    dedupe = MemoryDeduplicator(ttl=3600, max_entries=100, metrics=metrics, clock=clock)
    for n in range(250):
        clock.now += 0.01
        assert await dedupe.first_delivery(f"Ev{n}") is True
        assert len(dedupe) <= 100
    assert await dedupe.first_delivery("Ev249") is False  # the newest are still remembered
    assert metrics.registry.get_sample_value("confer_dedupe_evictions_total") == 150
    assert metrics.registry.get_sample_value("confer_dedupe_entries") == 100
