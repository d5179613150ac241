"""scrapy-adaptive: continuous, adaptive revisiting for Scrapy projects.

Enable it with one line in ``settings.py``::

    ADDONS = {"scrapy_adaptive.Addon": 0}

The add-on is imported on first use, so the pure parts of the package
(``scrapy_adaptive.frontier``, ``.policies``, ``.change``) can be imported
without loading Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__ as __version__

if TYPE_CHECKING:
    from .addon import Addon

__all__ = ["Addon"]


def __getattr__(name: str) -> Any:
    if name == "Addon":
        from .addon import Addon

        return Addon
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
