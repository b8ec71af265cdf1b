"""The import graph of ``openenv_gym`` in figures: floors, circles, upward imports, long modules.

A *room* is a top-level subpackage or module of ``openenv_gym`` (``wire``, ``client``,
``errors``, ...; the package's own ``__init__`` is the room ``openenv_gym``). The script reads
the imports with `grimp <https://grimp.readthedocs.io>`_ (imports under ``TYPE_CHECKING`` and
imports inside functions count: each is a dependency a reader must follow) and prints:

- **floors**: the layers of the room-level graph, lowest first. A room's floor is one above the
  highest room it imports; rooms that import each other share a floor.
- **circles**: groups of modules that import each other, directly or through others (strongly
  connected components of the module-level graph).
- **upward imports**: imports whose importer sits on a lower floor than the imported room in
  the declared order :data:`FLOORS` (the order ``tests/test_architecture.py`` enforces), and
  the imports grimp nominates to break the room-level cycles.
- **long modules**: modules over :data:`LONG_MODULE_LINES` lines.

Run it from the repository root::

    python scripts/import_graph.py
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import grimp

PACKAGE = "openenv_gym"
LONG_MODULE_LINES = 400

#: The declared floors, lowest first. A room may import rooms on its own floor or below,
#: never above. Rooms on one floor must still not form a module-level circle.
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"picklable_error"}),
    frozenset({"errors", "version"}),
    frozenset({"busy_poll", "extras", "argument_types", "config_files"}),
    frozenset({"wire", "spaces"}),
    frozenset({"client", "server"}),
    frozenset({"providers"}),
    frozenset({"env_mapping"}),
    frozenset({"env"}),
    frozenset({"vector", "envs", "trajectories"}),
    frozenset({"images", "wrappers", "registration", "integrations", "multiagent"}),
    frozenset({"config"}),
    frozenset({PACKAGE}),
    frozenset({"bench"}),
    frozenset({"cli"}),
)


@dataclass(frozen=True)
class ImportEdge:
    """One direct import from ``importer`` to ``imported`` (both dotted module names)."""

    importer: str
    imported: str
    line_number: int


def room_of(module: str) -> str:
    """Return the room that holds ``module``.

    >>> room_of("openenv_gym.client.blocking")
    'client'
    >>> room_of("openenv_gym")
    'openenv_gym'
    """
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


def build_graph() -> grimp.ImportGraph:
    """Return grimp's graph of ``openenv_gym``, ``TYPE_CHECKING`` imports included."""
    return grimp.build_graph(PACKAGE, cache_dir=None)


def import_edges(graph: grimp.ImportGraph) -> list[ImportEdge]:
    """Return every direct import inside the package, sorted."""
    edges: list[ImportEdge] = []
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            details = graph.get_import_details(importer=importer, imported=imported)
            line = min((d["line_number"] for d in details), default=0)
            edges.append(ImportEdge(importer, imported, line))
    return sorted(edges, key=lambda e: (e.importer, e.imported))


def strongly_connected(nodes: Iterable[str], edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of a directed graph (Tarjan, iterative).

    >>> strongly_connected("abc", {"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b'], ['c']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            if children:
                child = children.pop(0)
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return sorted(components)


def module_circles(edges: Iterable[ImportEdge]) -> list[list[str]]:
    """Return the module-level import circles (components of two modules or more)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, set()).add(edge.imported)
        graph.setdefault(edge.imported, set())
    return [c for c in strongly_connected(graph, graph) if len(c) > 1]


def room_floors(edges: Iterable[ImportEdge]) -> list[list[str]]:
    """Return the rooms floor by floor, lowest first, as the imports place them."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        a, b = room_of(edge.importer), room_of(edge.imported)
        graph.setdefault(a, set())
        graph.setdefault(b, set())
        if a != b:
            graph[a].add(b)
    components = strongly_connected(graph, graph)
    component_of = {room: i for i, c in enumerate(components) for room in c}
    floor: dict[int, int] = {}

    def floor_of(i: int) -> int:
        if i not in floor:
            floor[i] = -1  # guard; the condensation has no cycles
            below = {component_of[r] for room in components[i] for r in graph[room]} - {i}
            floor[i] = 1 + max((floor_of(j) for j in below), default=-1)
        return floor[i]

    floors: dict[int, list[str]] = {}
    for i, component in enumerate(components):
        floors.setdefault(floor_of(i), []).extend(component)
    return [sorted(floors[f]) for f in sorted(floors)]


def declared_floor(room: str) -> int:
    """Return the index of ``room`` in :data:`FLOORS`; ``KeyError`` names an undeclared room."""
    for i, rooms in enumerate(FLOORS):
        if room in rooms:
            return i
    raise KeyError(f"room {room!r} is on no floor of FLOORS in scripts/import_graph.py")


def upward_imports(edges: Iterable[ImportEdge]) -> list[ImportEdge]:
    """Return the imports whose importer's declared floor is below the imported room's."""
    return [
        e
        for e in edges
        if declared_floor(room_of(e.importer)) < declared_floor(room_of(e.imported))
    ]


def long_modules(root: Path) -> list[tuple[str, int]]:
    """Return ``(path, lines)`` of the package's modules over :data:`LONG_MODULE_LINES`."""
    found = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LONG_MODULE_LINES:
            found.append((str(path.relative_to(root)), lines))
    return found


def main() -> int:
    """Print the figures; return 0."""
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    graph = build_graph()
    edges = import_edges(graph)
    floors = room_floors(edges)
    circles = module_circles(edges)
    breakers = sorted(graph.nominate_cycle_breakers(PACKAGE))
    undeclared = sorted({room_of(m) for m in graph.modules} - set().union(*FLOORS))
    upward = upward_imports(edges) if not undeclared else []
    long = long_modules(root)
    lazy = sum(
        1
        for e in edges
        if any(
            d["is_lazy"] for d in graph.get_import_details(importer=e.importer, imported=e.imported)
        )
    )
    print(f"modules: {len(graph.modules)}  rooms: {len({room_of(m) for m in graph.modules})}")
    print(f"direct imports: {len(edges)} (lazy, inside functions: {lazy})")
    print(f"\nfloors (from the imports): {len(floors)}")
    for number, rooms in enumerate(floors):
        print(f"  {number:2d}: {' '.join(rooms)}")
    print(f"\nmodule-level import circles: {len(circles)}")
    for circle in circles:
        print(f"  {' <-> '.join(m.removeprefix(PACKAGE + '.') for m in circle)}")
    print(f"\nroom-level cycle breakers (grimp.nominate_cycle_breakers): {len(breakers)}")
    for importer, imported in breakers:
        print(f"  {importer} -> {imported}")
    if undeclared:
        print(f"\nrooms missing from FLOORS: {' '.join(undeclared)}")
    print(f"\nimports that run up a declared floor: {len(upward)}")
    for edge in upward:
        print(f"  {edge.importer}:{edge.line_number} -> {edge.imported}")
    print(f"\nmodules over {LONG_MODULE_LINES} lines: {len(long)}")
    for path, lines in long:
        print(f"  {lines:4d} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
