"""The import structure: the floors in pyproject.toml's [tool.importlinter] hold, and no module
imports itself back through any chain of imports.

A cycle counts `from pkg import name` as an import of `pkg/__init__.py` (Python runs it, and
it may re-export `name` from a sibling that is still half-imported), besides the import of
`pkg.name` itself when `name` is a module.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("orchestrator", "ca", "webapp")
FROM_IMPORT = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+import\b")

Edge = tuple[str, str]


def test_the_floors_in_pyproject_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache", "--no-logo", str(REPO / "pyproject.toml")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)
    edges = import_edges(graph)
    cycles = [describe(cycle, edges) for cycle in cycles_of(edges)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def import_edges(graph: grimp.ImportGraph) -> dict[Edge, str]:
    """importer -> imported, each with the line that makes it (`module:line  text`)."""
    edges: dict[Edge, str] = {}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                where = f"{importer}:{detail['line_number']}  {detail['line_contents']}"
                edges.setdefault((importer, imported), where)
                package = from_package(graph, importer, detail["line_contents"])
                if package not in (None, importer, imported):
                    edges.setdefault((importer, package), where)
    return edges


def from_package(graph: grimp.ImportGraph, importer: str, line: str) -> str | None:
    """The package a `from X import ...` line names, when X is one of ours."""
    match = FROM_IMPORT.match(line)
    if match is None:
        return None
    dots, name = match.groups()
    if dots:  # relative: from the importer's package, one level up per extra dot
        is_package = bool(graph.find_children(importer))
        base = importer.split(".")[: None if is_package else -1]
        base = base[: len(base) - len(dots) + 1]
        name = ".".join([*base, name] if name else base)
    return name if name in graph.modules else None


def cycles_of(edges: dict[Edge, str]) -> Iterator[list[str]]:
    """The shortest cycle through each module that is in one, each cycle once."""
    seen: set[frozenset[Edge]] = set()
    successors: dict[str, list[str]] = {}
    for importer, imported in sorted(edges):
        successors.setdefault(importer, []).append(imported)
        successors.setdefault(imported, [])
    for members in strongly_connected(successors):
        for start in sorted(members):
            cycle = shortest_cycle(start, members, successors)
            key = frozenset(itertools.pairwise(cycle))
            if key not in seen:
                seen.add(key)
                yield cycle


def strongly_connected(successors: dict[str, list[str]]) -> Iterator[set[str]]:
    """The sets of two or more modules that reach each other (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in successors:
        if root in index:
            continue
        work = [(root, iter(successors[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            step = next(pending, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(successors[step])))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    yield members


def shortest_cycle(start: str, members: set[str], successors: dict[str, list[str]]) -> list[str]:
    """start -> ... -> start within `members` (breadth first, so the shortest)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for step in successors[node]:
                if step == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if step in members and step not in came_from:
                    came_from[step] = node
                    following.append(step)
        frontier = following
    raise AssertionError(f"{start} is in no cycle")


def describe(cycle: list[str], edges: dict[Edge, str]) -> str:
    steps = "\n".join(f"    {edges[pair]}" for pair in itertools.pairwise(cycle))
    return f"  {' -> '.join(cycle)}\n{steps}"
