"""The fault matrices: every outbound Slack Web API call (``slack_matrix``) and Teams connector call
(``teams_matrix``) × every fault, one question each, all asked at once; each cell's test asserts
what its asker saw. The matrices' sizes are printed by the first test and are in each cell's id
(``route:method:fault``)."""

import asyncio
import shutil
from pathlib import Path

import pytest

from bot.slack import gateway
from retrieval.collections import load_collections
from tests.fakes.backends import FaultyBackend
from tests.integration import slack_matrix, teams_matrix
from tests.integration.conftest import index_samples
from tests.integration.slack_matrix import FAULTS, METHODS, Cell, Run, cells, verdict
from tests.integration.teams_matrix import TeamsCell, TeamsRun, teams_cells

ROOT = Path(__file__).resolve().parents[2]
CELLS = cells()
TEAMS_CELLS = teams_cells()
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


@pytest.fixture(scope="module")
def teams(tmp_path_factory: pytest.TempPathFactory) -> TeamsRun:
    kb = _knowledge_base(tmp_path_factory.mktemp("teams-matrix"))

    async def main() -> TeamsRun:
        with slack_matrix.matrix_environment(kb):
            backend = await _backend(kb)
            try:
                return await teams_matrix.run_teams_matrix(
                    backend, TEAMS_CELLS, cutoff=teams_matrix.BOUND + 5
                )
            finally:
                await backend.close()

    return asyncio.run(main())


def test_the_matrix_is_every_call_under_every_fault(matrix: Run, teams: TeamsRun) -> None:
    pairs = sum(len(m) for m in METHODS.values())
    print(
        f"\nSlack fault matrix: {len(CELLS)} cells ({pairs} route × method pairs over {len(CALLS)} Web API"
        f" methods × {len(FAULTS)} faults); Teams: {len(TEAMS_CELLS)} cells"
        f" ({len(teams_matrix.METHODS)} connector calls × {len(FAULTS)} faults)"
    )
    assert len(CELLS) == pairs * len(FAULTS)
    assert len(TEAMS_CELLS) == len(teams_matrix.METHODS) * len(FAULTS)
    assert set(matrix.seen) == {c.id for c in CELLS}
    assert set(teams.seen) == {c.id for c in TEAMS_CELLS}


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
def test_cell(matrix: Run, cell: Cell) -> None:
    assert verdict(matrix.seen[cell.id]) == [], matrix.seen[cell.id]


@pytest.mark.parametrize("cell", TEAMS_CELLS, ids=[c.id for c in TEAMS_CELLS])
def test_teams_cell(teams: TeamsRun, cell: TeamsCell) -> None:
    assert verdict(teams.seen[cell.id], bound=teams_matrix.BOUND) == [], teams.seen[cell.id]


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
