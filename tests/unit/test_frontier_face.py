"""The frontier's face is its API: no module outside ``frontier/`` reaches into its parts.

:class:`~scrapy_adaptive.frontier.Frontier` is composed of parts, each the
one holder of its state (``book``, ``leases``, ``hosts``) over its
``store``.  A caller that reaches past the frontier into one of them ties
itself to how the frontier is built, and writes behind the back of the
parts that keep the store and the memory in step.  The crawl asks the
frontier (``fetch_ended``, ``lapsed``, ``write_meta``, ...); the parts are
the frontier's own business.

The reaches are read from the source with :mod:`ast`: an attribute
``.leases``, ``.hosts``, ``.store`` or ``.queues`` of an expression that
holds a frontier, that is one named ``*frontier*`` (``frontier``,
``self.frontier``, ``runtime.frontier``), a name annotated ``Frontier``,
or a name assigned from either; ``getattr(frontier, "store")`` counts too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scrapy_adaptive"
#: the frontier's own package: its modules compose the parts
INSIDE = PACKAGE / "frontier"
#: the frontier's parts, none of them for a caller outside
PARTS = frozenset({"leases", "hosts", "store", "book"})
#: (module path, attribute) reaches allowed, each with its reason; this
#: list may only shrink (an entry no longer found fails the test)
ALLOWED: dict[tuple[str, str], str] = {}

_ANNOTATED = re.compile(r"\bFrontier\b")


def _holds_frontier(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names or "frontier" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "frontier" in node.attr.lower()
    return False


def _frontier_names(tree: ast.AST) -> set[str]:
    """Names in the module bound to a frontier: annotated ``Frontier``, or
    assigned from an expression that holds one (to a fixed point)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            if _ANNOTATED.search(ast.unparse(node.annotation)):
                names.add(node.arg)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if _ANNOTATED.search(ast.unparse(node.annotation)):
                names.add(node.target.id)
    while True:
        before = len(names)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _holds_frontier(node.value, names):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.NamedExpr) and _holds_frontier(node.value, names):
                names.add(node.target.id)
        if len(names) == before:
            return names


def taken(source: str) -> Iterator[tuple[int, str]]:
    """``(line, attribute)`` of every attribute *source* takes of a frontier
    (``getattr(frontier, "name")`` and its kin included)."""
    tree = ast.parse(source)
    names = _frontier_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _holds_frontier(node.value, names):
            yield node.lineno, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr"}
            and len(node.args) >= 2
            and _holds_frontier(node.args[0], names)
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            yield node.lineno, node.args[1].value


def reaches(source: str) -> Iterator[tuple[int, str]]:
    """``(line, part)`` of every reach into a frontier's parts in *source*."""
    return ((line, name) for line, name in taken(source) if name in PARTS)


def outside_modules() -> Iterator[Path]:
    return (path for path in sorted(PACKAGE.rglob("*.py")) if not path.is_relative_to(INSIDE))


def outside_reaches() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for path in outside_modules():
        name = str(path.relative_to(ROOT))
        for line, part in reaches(path.read_text(encoding="utf-8")):
            found.setdefault((name, part), []).append(line)
    return found


def test_no_module_outside_the_frontier_reaches_into_its_parts() -> None:
    found = outside_reaches()
    unexplained = {f"{path}:{line} .{part}" for (path, part), lines in found.items() for line in lines}
    unexplained -= {f"{path}:{line} .{part}" for (path, part) in ALLOWED for line in found.get((path, part), [])}
    assert sorted(unexplained) == [], "ask the Frontier (docs/architecture.md), do not reach into its parts"


def test_the_allowed_reaches_only_shrink() -> None:
    found = outside_reaches()
    assert [where for where in ALLOWED if where not in found] == [], "no longer needed: remove from ALLOWED"


def test_every_public_method_of_the_frontier_has_a_caller_outside() -> None:
    """The face holds what the crawl asks and no more: a method no module
    outside ``frontier/`` calls (a pass-through to a part, kept "in case")
    is folded into its callers inside or removed."""
    asked = {name for path in outside_modules() for _, name in taken(path.read_text(encoding="utf-8"))}
    tree = ast.parse((INSIDE / "frontier.py").read_text(encoding="utf-8"))
    (face,) = (node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Frontier")
    public = [node.name for node in face.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")]
    assert {"add", "next", "update", "fetch_ended", "write_meta"} <= set(public)
    assert [name for name in public if name not in asked] == []


def test_the_check_sees_a_reach_however_the_frontier_is_named() -> None:
    source = """
from scrapy_adaptive.frontier import Frontier

def direct(self):
    self.frontier.leases.requeue(b"x")
    runtime.frontier.store.close()

def annotated(f: Frontier, g: "Frontier | None"):
    f.hosts.trust_report()
    g.book.totals

def aliased(self):
    fr = self.frontier
    ours = fr
    ours.store.write(None)
    return getattr(fr, "leases")

def fine(self, store):
    self.store.close()
    self.frontier.get_record("q", b"x")
    self.console.frontier_shape()
"""
    assert sorted(reaches(source)) == [
        (5, "leases"),
        (6, "store"),
        (9, "hosts"),
        (10, "book"),
        (15, "store"),
        (16, "leases"),
    ]
