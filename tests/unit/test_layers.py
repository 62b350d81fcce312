"""The house's rules, read from the code's own imports: ``bot → graph → retrieval`` and
never back; ``bot/`` uses the graph through its public face only; each outside library has one room."""

import ast
from collections.abc import Iterator
from pathlib import Path

import graph

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "graph", "retrieval")

# Who may import which library (the top-level module name): a chat SDK in its adapter, LangGraph in
# the graph, the search clients in retrieval. The ``openai`` client talks to the model (graph/llm)
# and to an embeddings endpoint (retrieval/embeddings.py).
ROOMS = {
    "langgraph": ("graph/",),
    "langchain_core": ("graph/",),
    "slack_bolt": ("bot/slack/",),
    "slack_sdk": ("bot/slack/",),
    "microsoft_agents": ("bot/teams/",),
    "elasticsearch": ("retrieval/",),
    "openai": ("graph/llm/", "retrieval/embeddings.py"),
}
# bot/'s root is the composition: everything else lives in a room.
COMPOSITION = {
    "__init__.py",
    "__main__.py",
    "settings.py",
    "wiring.py",
    "server.py",
    "web.py",
    "metrics.py",
    "logs.py",
    "telemetry.py",  # where spans go (OTLP), beside logs and metrics
    "messages.py",
    "errors.py",
}
BOT_ROOMS = {"chat", "slack", "teams", "terminal", "evaluation"}
GRAPH_ROOMS = {"research", "llm", "verify", "answer"}


def _imports() -> Iterator[tuple[str, str, list[str]]]:
    """(file relative to the root, imported module, names imported from it) for every import."""
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            relative = path.relative_to(ROOT).as_posix()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        yield relative, alias.name, []
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    yield relative, node.module, [alias.name for alias in node.names]


def test_imports_go_one_way_bot_graph_retrieval() -> None:
    below = {"bot": ("graph", "retrieval"), "graph": ("retrieval",), "retrieval": ()}
    wrong = [
        f"{path} imports {module}"
        for path, module, _ in _imports()
        for layer in [path.split("/")[0]]
        if module.split(".")[0] in PACKAGES
        and module.split(".")[0] != layer
        and module.split(".")[0] not in below[layer]
    ]
    assert wrong == []


def test_bot_imports_the_graph_through_its_public_face_only() -> None:
    public = set(graph.__all__)
    wrong = [
        f"{path}: {module} {names}"
        for path, module, names in _imports()
        if path.startswith("bot/")
        and module.split(".")[0] == "graph"
        and (module != "graph" or not set(names) <= public)
    ]
    assert wrong == []
    assert all(hasattr(graph, name) for name in public)


def test_each_outside_library_is_imported_in_its_own_room_only() -> None:
    wrong = [
        f"{path} imports {module}"
        for path, module, _ in _imports()
        for room in [ROOMS.get(module.split(".")[0])]
        if room is not None and not path.startswith(room)
    ]
    assert wrong == []


def test_the_roots_hold_only_the_composition_and_the_rooms() -> None:
    bot_root = {p.name for p in (ROOT / "bot").iterdir() if p.name != "__pycache__"}
    assert bot_root == COMPOSITION | BOT_ROOMS
    graph_rooms = {p.name for p in (ROOT / "graph").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert graph_rooms == GRAPH_ROOMS
