"""The pure parts of the package import without Scrapy or Twisted.

The frontier, the policies and change detection are plain logic: the policy
lab runs them in a simulator, other tools read a state folder with them,
and their unit tests build them without a crawler.  A Scrapy import creeping
in (directly, or through a package ``__init__`` or a library that imports
Scrapy when it is installed, as itemadapter does) fails here, by module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PURE = (
    "scrapy_adaptive",
    "scrapy_adaptive.model",
    "scrapy_adaptive.meta",
    "scrapy_adaptive.dates",
    "scrapy_adaptive.config",
    "scrapy_adaptive.config.settings",
    "scrapy_adaptive.config.spec",
    "scrapy_adaptive.config.table",
    "scrapy_adaptive.config.matching",
    "scrapy_adaptive.store",
    "scrapy_adaptive.store.base",
    "scrapy_adaptive.store.keys",
    "scrapy_adaptive.store.leveldb",
    "scrapy_adaptive.store.statedir",
    "scrapy_adaptive.store.checkpoint",
    "scrapy_adaptive.store.folder",
    "scrapy_adaptive.frontier",
    "scrapy_adaptive.frontier.canonical",
    "scrapy_adaptive.frontier.hostfacts",
    "scrapy_adaptive.frontier.hints",
    "scrapy_adaptive.frontier.crawltime",
    "scrapy_adaptive.frontier.capacity",
    "scrapy_adaptive.change",
    "scrapy_adaptive.change.answer",
    "scrapy_adaptive.change.digest",
    "scrapy_adaptive.change.judge",
    "scrapy_adaptive.change.text_diff",
    "scrapy_adaptive.change.noise",
    "scrapy_adaptive.change.url_class",
    "scrapy_adaptive.change.noise_learner",
    "scrapy_adaptive.change.trust",
    "scrapy_adaptive.change.prediction",
    "scrapy_adaptive.change.freshness",
    "scrapy_adaptive.policies",
    "scrapy_adaptive.policies.persist",
    "scrapy_adaptive.ops",
    "scrapy_adaptive.ops.progress",
    "scrapy_adaptive.ops.console",
    "scrapy_adaptive.ops.console.api",
    "scrapy_adaptive.ops.console.html",
)

CHECK = """
import importlib, sys
importlib.import_module(sys.argv[1])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("scrapy", "twisted"))
print(" ".join(loaded[:5]))
sys.exit(1 if loaded else 0)
"""


@pytest.mark.parametrize("module", PURE)
def test_imports_without_scrapy(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK, module], capture_output=True, text=True, check=False, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, f"{module} loads {done.stdout.strip()} {done.stderr.strip()[-500:]}"
