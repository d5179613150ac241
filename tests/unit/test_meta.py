"""One table of meta keys (scrapy_adaptive/meta.py), kept in step with
docs/settings.md's "Request.meta keys" (the README links there)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from scrapy_adaptive import meta

ROOT = Path(__file__).resolve().parents[2]
META_KEY = re.compile(r"^_?adaptive_[a-z_]+$")


def readme_keys() -> set[str]:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    section = text.split("## Request.meta keys", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(adaptive_\w+)` \|", section, flags=re.MULTILINE))


def test_readme_documents_exactly_the_public_keys() -> None:
    assert readme_keys() == set(meta.PUBLIC)


def test_private_keys_follow_scrapys_underscore_convention() -> None:
    assert all(key.startswith("_adaptive_") for key in meta.PRIVATE)
    assert all(key.startswith("adaptive_") for key in meta.PUBLIC)
    assert len(set(meta.PUBLIC) | set(meta.PRIVATE)) == len(meta.PUBLIC) + len(meta.PRIVATE)
    assert meta.PER_FETCH <= set(meta.PUBLIC)


def _literal_keys(tree: ast.AST) -> list[str]:
    """String keys used as ``<x>.meta[...]`` or ``<x>.meta.get/pop/setdefault(...)``."""
    found = []
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "meta":
            key = node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "meta"
            and node.args
        ):
            key = node.args[0]
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            key = node.value  # a constant of its own: META_X = "adaptive_x"
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and META_KEY.match(key.value):
            found.append(key.value)
    return found


def test_no_module_spells_a_meta_key_of_its_own() -> None:
    """Every ``meta[...]`` key of ours in the code comes from the table."""
    offenders = {
        str(path.relative_to(ROOT)): keys
        for path in (ROOT / "scrapy_adaptive").rglob("*.py")
        if path.name != "meta.py" and (keys := _literal_keys(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert offenders == {}
