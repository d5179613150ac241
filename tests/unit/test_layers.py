"""Every package imports only the packages below it, and no module imports itself back.

The layer order is declared once, in docs/architecture.md (the fenced
``layers`` block, top floor first), so the picture a reader sees is the
rule the code is held to.  The imports are read from the source with
:mod:`ast`: imports inside functions and under ``TYPE_CHECKING`` count, as
they tie the modules as surely as the ones at the top.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scrapy_adaptive"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: the package's own ``__init__``: the front door, above every floor
FRONT_DOOR = "scrapy_adaptive"


def declared_layers() -> list[set[str]]:
    """The floors of docs/architecture.md's ``layers`` block, lowest first:
    each line's first column names one or more packages (``a, b``)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    found = re.search(r"^```layers\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert found, "docs/architecture.md has no ```layers block"
    floors = []
    for line in found.group(1).splitlines():
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        if names:
            floors.append({name.strip().strip("/").removesuffix(".py") for name in names.split(",")})
    return floors[::-1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The package's modules *name* imports, anywhere in its text."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == FRONT_DOOR)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != FRONT_DOOR:
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield submodule if submodule in known else target


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imported(name, path, known)) - {name} for name, path in known.items()}


#: how an old import path kept for settings and imports begins its docstring
ALIAS = "Old import path of "


@functools.cache
def aliases() -> frozenset[str]:
    """The modules kept at an old import path: each stands with the front
    door (it may name any floor) and holds nothing but its imports."""
    found = set()
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if (ast.get_docstring(tree) or "").startswith(ALIAS):
            found.add(name)
    return frozenset(found)


def floor_of(module: str) -> str:
    """The floor a module stands on: its first package below ``scrapy_adaptive``."""
    return FRONT_DOOR if module == FRONT_DOOR or module in aliases() else module.split(".")[1]


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    layers = declared_layers()
    level = {package: i for i, floor in enumerate(layers) for package in floor}
    level[FRONT_DOOR] = len(layers)
    unplaced = {floor_of(m) for m in graph} - set(level)
    assert not unplaced, f"packages missing from docs/architecture.md's layers: {sorted(unplaced)}"
    return {
        (importer, target)
        for importer, targets in graph.items()
        for target in targets
        if floor_of(importer) != floor_of(target) and level[floor_of(target)] >= level[floor_of(importer)]
    }


def circles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The strongly connected groups of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[tuple[str, ...]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.add(tuple(sorted(group)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_is_kept_at_an_old_import_path() -> None:
    """Nothing has been released: a module that moved leaves no shim behind."""
    assert not aliases()


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "scrapy_adaptive.frontier.frontier" in graph["scrapy_adaptive.frontier"]
    assert "scrapy_adaptive.model" in graph["scrapy_adaptive.policies.base"]


def test_no_package_imports_one_above_it() -> None:
    assert sorted(upward_imports(import_graph())) == [], "imports upwards (docs/architecture.md, layers)"


def test_no_module_imports_itself_back() -> None:
    assert sorted(circles(import_graph())) == [], "circles of imports"


def test_the_check_sees_an_upward_import_and_a_circle() -> None:
    graph = {
        "scrapy_adaptive.model": {"scrapy_adaptive.config.spec"},
        "scrapy_adaptive.config.spec": {"scrapy_adaptive.config.table"},
        "scrapy_adaptive.config.table": {"scrapy_adaptive.config.spec"},
    }
    assert upward_imports(graph) == {("scrapy_adaptive.model", "scrapy_adaptive.config.spec")}
    assert circles(graph) == {("scrapy_adaptive.config.spec", "scrapy_adaptive.config.table")}
