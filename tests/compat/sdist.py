"""The test files of the installed Scrapy, from its sdist, fetched once and cached.

Nothing of Scrapy's is kept in this repository: the sdist of exactly the
installed version is downloaded from the package registry with pip (so the
machine's pip configuration, index and proxy apply), and only what its tests
need to run is unpacked: ``tests/``, the top ``conftest.py`` and
``pyproject.toml`` (its pytest configuration).  Scrapy's own package in the
sdist is left out, so the tests run against the installed Scrapy the add-on
is used with.  The cache lives beside the environment (``<venv>/compat-cache``,
or ``ADAPTIVE_COMPAT_CACHE``), so a repeated run does not download again and a
new Scrapy version gets a folder of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

#: what is unpacked from the sdist (below its top folder)
MEMBERS = ("conftest.py", "pyproject.toml", "tests/")
#: seconds pip may take to download the sdist
DOWNLOAD_TIMEOUT = 180


class SdistError(RuntimeError):
    """The sdist could not be had; the message is one line saying why."""


def cache_root() -> Path:
    """Where unpacked sdists are kept (``ADAPTIVE_COMPAT_CACHE`` or ``<venv>/compat-cache``)."""
    return Path(os.environ.get("ADAPTIVE_COMPAT_CACHE") or Path(sys.prefix) / "compat-cache")


def scrapy_tests(scrapy_version: str | None = None) -> Path:
    """The folder holding Scrapy's ``tests/``, ``conftest.py`` and ``pyproject.toml``
    for *scrapy_version* (the installed one by default), downloading it on first use."""
    scrapy_version = scrapy_version or version("scrapy")
    root = cache_root()
    target = root / f"scrapy-{scrapy_version}"
    if (target / ".complete").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".download-") as work:
        archive = _download(scrapy_version, Path(work))
        unpacked = Path(work) / "unpacked"
        _unpack(archive, unpacked)
        (unpacked / ".complete").write_text(f"{archive.name}\n", encoding="utf-8")
        try:
            unpacked.rename(target)  # atomic: a concurrent run finds all of it or nothing
        except OSError:
            if not (target / ".complete").exists():
                shutil.rmtree(target, ignore_errors=True)
                unpacked.rename(target)
    return target


def _download(scrapy_version: str, work: Path) -> Path:
    command = [
        sys.executable, "-m", "pip", "download", f"scrapy=={scrapy_version}",
        "--no-binary", ":all:", "--no-deps", "--quiet", "-d", str(work),
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise SdistError(
            f"pip download of the scrapy=={scrapy_version} sdist took over {DOWNLOAD_TIMEOUT}s (is the registry reachable?)"
        ) from None
    archives = sorted(work.glob("scrapy-*.tar.gz"))
    if done.returncode != 0 or not archives:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SdistError(f"cannot download the scrapy=={scrapy_version} sdist with pip: {last}")
    return archives[0]


def _unpack(archive: Path, into: Path) -> None:
    """Unpack :data:`MEMBERS` of *archive* into *into* (the sdist's top folder stripped)."""
    into.mkdir()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            top, _, rest = member.name.partition("/")
            if not rest or not any(rest == m or (m.endswith("/") and rest.startswith(m)) for m in MEMBERS):
                continue
            member.name = rest
            tar.extract(member, into, filter="data")  # no links out, no absolute paths
    missing = [m for m in MEMBERS if not (into / m).exists()]
    if missing:
        raise SdistError(f"{archive.name} lacks {', '.join(missing)}: not a Scrapy sdist this harness knows")


if __name__ == "__main__":
    print(scrapy_tests())
