"""scrapy-adaptive: continuous, adaptive revisiting for Scrapy projects.

Enable it with one line in ``settings.py``::

    ADDONS = {"scrapy_adaptive.Addon": 0}
"""

from .addon import Addon

__all__ = ["Addon"]
__version__ = "0.1.0"
