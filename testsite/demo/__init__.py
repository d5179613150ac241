"""A local website whose pages change on a known, deterministic schedule.

It exists so the adaptive revisiting crawler can be demonstrated and tested
without touching the internet: every page's change cadence and HTTP validator
behaviour is known in advance and published at ``/_demo/schedule``.

Run it from the repository root with ``python -m testsite.demo`` (loopback
only, port 8731 by default; ``scripts/demo.sh`` does), build it in-process
with :func:`make_site`, or start it as a child process from tests with
:class:`DemoSiteProcess`.
"""

from __future__ import annotations

from .catalogue import Catalogue, Change, Media, Page, Role, Validators, build_catalogue
from .cli import DEFAULT_HOST, DEFAULT_PORT, main
from .clock import Clock, FileClock, write_clock_file
from .process import DemoSiteError, DemoSiteProcess
from .site import DemoSite, PageState, SiteModel, make_site

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "Catalogue",
    "Change",
    "Clock",
    "DemoSite",
    "DemoSiteError",
    "DemoSiteProcess",
    "FileClock",
    "Media",
    "Page",
    "PageState",
    "Role",
    "SiteModel",
    "Validators",
    "build_catalogue",
    "main",
    "make_site",
    "write_clock_file",
]
