"""The frontier's face is its API: no module outside ``frontier/`` reaches into its parts.

:class:`~scrapy_adaptive.frontier.Frontier` is composed of parts, each the
one holder of its state (``book``, ``_leases``, ``_hosts``, ...) over its
``store``.  A caller that reaches past the frontier into one of them ties
itself to how the frontier is built, and writes behind the back of the
parts that keep the store and the memory in step.  The crawl asks the
frontier its own verbs (``add``, ``next``, ``update``, ``counts``, ...) and
reaches four parts through a narrow typed face each, plus the crawl's
notes (:data:`FACES`: ``frontier.downloads.fetch_ended``,
``frontier.outbox.confirm``, ``frontier.notes.write``, ...); the rest is
the frontier's own business.

The reaches are read from the source with :mod:`ast`: an attribute
``.store``, ``.book`` or any private one (``._leases``) of an expression
that holds a frontier, that is one named ``*frontier*`` (``frontier``,
``self.frontier``, ``runtime.frontier``), a name annotated ``Frontier``,
or a name assigned from either; ``getattr(frontier, "store")`` counts too;
and a method of a face that the face does not show
(``frontier.hosts.pool_hints``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from scrapy_adaptive.frontier.hostfacts import Hosts
from scrapy_adaptive.frontier.leases import Downloads
from scrapy_adaptive.frontier.notes import Notes
from scrapy_adaptive.frontier.pending import Outbox
from scrapy_adaptive.frontier.sharedhosts import Fleet

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scrapy_adaptive"
#: the frontier's own package: its modules compose the parts
INSIDE = PACKAGE / "frontier"
#: the frontier's parts with a public name, none of them for a caller
#: outside (every attribute with a leading underscore is a part too)
PARTS = frozenset({"store", "book", "verdict_writer"})
#: the parts a caller outside reaches, each through its narrow face: the
#: methods its class defines, and nothing else of the object behind it
FACES: dict[str, type] = {"downloads": Downloads, "hosts": Hosts, "outbox": Outbox, "fleet": Fleet, "notes": Notes}
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


def face_of(cls: type) -> set[str]:
    """The methods a face shows: its class's own public ones."""
    return {name for name in vars(cls) if not name.startswith("_")}


def taken_of_faces(source: str) -> Iterator[tuple[int, str, str]]:
    """``(line, face, attribute)`` of every attribute *source* takes of a
    frontier's face (``frontier.downloads.fetch_ended``)."""
    tree = ast.parse(source)
    names = _frontier_names(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in FACES
            and _holds_frontier(node.value.value, names)
        ):
            yield node.lineno, node.value.attr, node.attr


def reaches(source: str) -> Iterator[tuple[int, str]]:
    """``(line, part)`` of every reach into a frontier's parts in *source*,
    past a face included (``(line, "hosts.pool_hints")``)."""
    for line, name in taken(source):
        if name in PARTS or name.startswith("_"):
            yield line, name
    for line, face, name in taken_of_faces(source):
        if name not in face_of(FACES[face]):
            yield line, f"{face}.{name}"


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
    held = [node.attr for node in ast.walk(face) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)]
    # a part (a face) or a verb held as its part's own lookup (``lent``: the leases' table)
    public += [name for name in held if not name.startswith("_") and (name in FACES or name == "lent")]
    assert {"add", "next", "update", "lent", *FACES} <= set(public)
    assert [name for name in public if name not in asked] == []


def test_every_method_of_a_face_has_a_caller_outside() -> None:
    """A face shows what the crawl calls and no more."""
    asked = {(face, name) for path in outside_modules() for _, face, name in taken_of_faces(path.read_text("utf-8"))}
    shown = [(face, name) for face, cls in FACES.items() for name in sorted(face_of(cls))]
    unasked = [f"{face}.{name}" for face, name in shown if (face, name) not in asked]
    assert unasked == []


def test_the_check_sees_a_reach_however_the_frontier_is_named() -> None:
    source = """
from scrapy_adaptive.frontier import Frontier

def direct(self):
    self.frontier._leases.requeue(b"x")
    runtime.frontier.store.close()

def annotated(f: Frontier, g: "Frontier | None"):
    f._hosts.trust_report()
    g.book.totals

def aliased(self):
    fr = self.frontier
    ours = fr
    ours.store.write(None)
    return getattr(fr, "_leases")

def past_a_face(frontier):
    frontier.hosts.pool_hints(None)
    frontier.downloads.lend(b"x", None)

def fine(self, store):
    self.store.close()
    self.frontier.get_record("q", b"x")
    self.frontier.downloads.requeue(b"x")
    self.frontier.hosts.trust_report()
    self.console.frontier_shape()
"""
    assert sorted(reaches(source)) == [
        (5, "_leases"),
        (6, "store"),
        (9, "_hosts"),
        (10, "book"),
        (15, "store"),
        (16, "_leases"),
        (19, "hosts.pool_hints"),
        (20, "downloads.lend"),
    ]
