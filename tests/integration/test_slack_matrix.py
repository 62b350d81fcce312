"""The Slack fault matrix (``slack_matrix``): every outbound Web API call × every fault, one question
each, all asked at once; each cell's test asserts what its asker saw. The matrix's size is in the
first test's name and in each cell's id (``route:method:fault``)."""

import asyncio
import shutil
from pathlib import Path

import pytest

from bot.slack import gateway
from retrieval.collections import load_collections
from tests.fakes.backends import FaultyBackend
from tests.integration import slack_matrix
from tests.integration.conftest import index_samples
from tests.integration.slack_matrix import FAULTS, METHODS, Cell, Run, cells, verdict

ROOT = Path(__file__).resolve().parents[2]
CELLS = cells()
CALLS = sorted({m for methods in METHODS.values() for m in methods})


def _knowledge_base(tmp: Path) -> Path:
    kb = tmp / "kb"
    shutil.copytree(ROOT / "samples", kb / "samples")
    shutil.copy(ROOT / "collections.yaml", kb / "collections.yaml")
    return kb


async def _backend(kb: Path) -> FaultyBackend:
    return FaultyBackend(await index_samples(kb))


def _run(tmp: Path, chosen: list[Cell], *, cutoff: float, **settings: str) -> Run:
    kb = _knowledge_base(tmp)
    load_collections(kb / "collections.yaml")

    async def main() -> Run:
        with slack_matrix.matrix_environment(kb, **settings):
            backend = await _backend(kb)
            try:
                return await slack_matrix.run_matrix(kb, backend, chosen, cutoff=cutoff)
            finally:
                await backend.close()

    return asyncio.run(main())


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run(tmp_path_factory.mktemp("slack-matrix"), CELLS, cutoff=slack_matrix.BOUND + 5)


def test_the_matrix_is_every_call_under_every_fault(matrix: Run) -> None:
    name = f"{len(CELLS)} cells: {len(CALLS)} Web API methods on 3 routes × {len(FAULTS)} faults"
    print(f"\nSlack fault matrix: {name}")
    assert len(CELLS) == sum(len(m) for m in METHODS.values()) * len(FAULTS)
    assert set(matrix.seen) == {c.id for c in CELLS}


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_cell(matrix: Run, cell: Cell) -> None:
    assert verdict(matrix.seen[cell.id]) == [], matrix.seen[cell.id]


def test_a_broken_retry_bound_makes_cells_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test of the test: with every Web API call retried without limit and the delivery
    deadline moved out of reach (an injected setting), a status and an answer whose posts answer
    429 throughout are neither shown nor said to have failed within the bound, and the verdict
    says so. (With the deadline in place the same unlimited retries stop at it.)"""
    monkeypatch.setattr(gateway, "ATTEMPTS", 1_000_000)
    chosen = [c for c in CELLS if c.id == "edit:chat.postMessage:429-throughout"]
    timeout, bound = 2.0, 2.0 + 2.0 + 5 * slack_matrix.CALL_TIMEOUT
    run = _run(
        tmp_path,
        chosen,
        cutoff=bound + 1,
        CONFER_QUESTION_TIMEOUT_SECONDS=str(timeout),
        CONFER_DELIVERY_SECONDS="600",
    )
    problems = verdict(run.seen[chosen[0].id], bound=bound)
    assert any(p.startswith("silence") for p in problems), run.seen
