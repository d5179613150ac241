"""Every package imports only the packages below it, and no module imports itself back.

The layer order is declared once, in docs/architecture.md (the fenced
``layers`` block, top floor first), so the picture a reader sees is the
rule the code is held to.  The imports are read from the source with
:mod:`ast`: imports inside functions and under ``TYPE_CHECKING`` count, as
they tie the modules as surely as the ones at the top.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scrapy_adaptive"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: the package's own ``__init__``: the front door, above every floor
FRONT_DOOR = "scrapy_adaptive"

#: imports upwards that issue 38 has still to remove (importer, imported):
#: the list may only shrink, and names exactly what is left
KNOWN_UPWARDS: set[tuple[str, str]] = {
    ("scrapy_adaptive.integration.scheduler", "scrapy_adaptive.addon"),
    ("scrapy_adaptive.integration.startup", "scrapy_adaptive.addon"),
    ("scrapy_adaptive.warc.middleware", "scrapy_adaptive.integration.delivery"),
    ("scrapy_adaptive.warc.middleware", "scrapy_adaptive.integration.refusal"),
    ("scrapy_adaptive.warc.middleware", "scrapy_adaptive.integration.sinkfail"),
    ("scrapy_adaptive.warc.middleware", "scrapy_adaptive.integration.stopgrace"),
    ("scrapy_adaptive.warc.middleware", "scrapy_adaptive.integration.verdicts"),
    ("scrapy_adaptive.warc.middleware", "scrapy_adaptive.integration.wiring"),
    ("scrapy_adaptive.warc.middleware", "scrapy_adaptive.ops.console.api"),
    ("scrapy_adaptive.warc.writer", "scrapy_adaptive.integration.sinkfail"),
}
#: circles between modules that issue 38 has still to cut, each as its sorted modules
KNOWN_CIRCLES: set[tuple[str, ...]] = set()


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


def floor_of(module: str) -> str:
    """The floor a module stands on: its first package below ``scrapy_adaptive``."""
    return FRONT_DOOR if module == FRONT_DOOR else module.split(".")[1]


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


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "scrapy_adaptive.frontier.frontier" in graph["scrapy_adaptive.frontier"]
    assert "scrapy_adaptive.model" in graph["scrapy_adaptive.policies.base"]


def test_no_package_imports_one_above_it() -> None:
    upwards = upward_imports(import_graph())
    assert upwards - KNOWN_UPWARDS == set(), "imports upwards (docs/architecture.md, layers)"
    assert KNOWN_UPWARDS - upwards == set(), "gone: take them off KNOWN_UPWARDS"


def test_no_module_imports_itself_back() -> None:
    found = circles(import_graph())
    assert found - KNOWN_CIRCLES == set(), "circles of imports"
    assert KNOWN_CIRCLES - found == set(), "gone: take them off KNOWN_CIRCLES"


def test_the_check_sees_an_upward_import_and_a_circle() -> None:
    graph = {
        "scrapy_adaptive.model": {"scrapy_adaptive.config.spec"},
        "scrapy_adaptive.config.spec": {"scrapy_adaptive.config.table"},
        "scrapy_adaptive.config.table": {"scrapy_adaptive.config.spec"},
    }
    assert upward_imports(graph) == {("scrapy_adaptive.model", "scrapy_adaptive.config.spec")}
    assert circles(graph) == {("scrapy_adaptive.config.spec", "scrapy_adaptive.config.table")}
