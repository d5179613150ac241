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

ROOT = Path(__file__).resolve().parent.parent

PURE = (
    "scrapy_adaptive",
    "scrapy_adaptive.meta",
    "scrapy_adaptive.settings",
    "scrapy_adaptive.setting_specs",
    "scrapy_adaptive.setting_table",
    "scrapy_adaptive.setting_readme",
    "scrapy_adaptive.dates",
    "scrapy_adaptive.canonical",
    "scrapy_adaptive.matching",
    "scrapy_adaptive.frontier",
    "scrapy_adaptive.frontier.leveldb_store",
    "scrapy_adaptive.frontier.crawltime",
    "scrapy_adaptive.policies",
    "scrapy_adaptive.policies.persist",
    "scrapy_adaptive.change",
    "scrapy_adaptive.progress",
    "scrapy_adaptive.console",
    "scrapy_adaptive.console.api",
    "scrapy_adaptive.console.html",
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
