"""The README's quick start names every knob of ``scripts/demo.sh``.

DEMO_PORT worked but was nowhere in the README: a user whose port 8731 was
taken had to read the script.  Each environment variable the script reads
with a default (``${NAME:-default}``) must be named in the quick start.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: read from the environment but not the demo's own (the shell's temp folder)
NOT_KNOBS = {"TMPDIR"}


def test_the_quick_start_names_every_variable_the_demo_script_reads() -> None:
    script = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    knobs = set(re.findall(r"\$\{([A-Z_]+):-", script)) - NOT_KNOBS
    assert {"DEMO_PORT", "DEMO_SPEED", "DEMO_SEED"} <= knobs
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert not {k for k in knobs if f"{k}=" not in quick_start}
