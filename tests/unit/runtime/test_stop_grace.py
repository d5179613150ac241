"""The add-on's wrapping of download handlers for ADAPTIVE_STOP_GRACE."""

from __future__ import annotations

import asyncio

from scrapy import Request
from scrapy.settings import Settings

from scrapy_adaptive.runtime.stop_grace import (
    INNER_HANDLERS_SETTING,
    AbandonedDownload,
    GraceHttpHandler,
    GraceHttpsHandler,
    wrap_download_handlers,
)


def test_the_projects_handler_is_wrapped_and_a_disabled_scheme_stays_off() -> None:
    settings = Settings({"DOWNLOAD_HANDLERS": {"https": "myproject.handlers.Fancy", "http": None}})
    wrap_download_handlers(settings)
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    assert handlers["https"] is GraceHttpsHandler and handlers["http"] is None
    assert settings.getdict(INNER_HANDLERS_SETTING) == {"https": "myproject.handlers.Fancy"}
    wrap_download_handlers(settings)  # twice (a second add-on load) wraps once
    assert settings.getdict(INNER_HANDLERS_SETTING) == {"https": "myproject.handlers.Fancy"}


def test_scrapys_default_handler_is_wrapped() -> None:
    settings = Settings()
    wrap_download_handlers(settings)
    assert settings.getdict("DOWNLOAD_HANDLERS")["http"] is GraceHttpHandler
    assert settings.getdict(INNER_HANDLERS_SETTING)["http"].endswith("HTTP11DownloadHandler")


class Hung:
    """An inner handler whose downloads never end, and which notes a cancel."""

    def __init__(self) -> None:
        self.cancelled = 0

    async def download_request(self, request: Request) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


def test_abandon_cancels_the_running_download_and_refuses_new_ones() -> None:
    async def scenario() -> tuple[int, str, str]:
        inner = Hung()
        handler = GraceHttpHandler(inner)
        download = asyncio.ensure_future(handler.download_request(Request("http://127.0.0.1/hung")))
        await asyncio.sleep(0.01)
        count = handler.abandon()
        try:
            await download
        except AbandonedDownload as exc:
            first = str(exc)
        try:
            await handler.download_request(Request("http://127.0.0.1/next"))
        except AbandonedDownload as exc:
            second = str(exc)
        assert inner.cancelled == 1
        return count, first, second

    count, first, second = asyncio.run(scenario())
    assert count == 1
    assert "ADAPTIVE_STOP_GRACE ran out; http://127.0.0.1/hung is due again on restart" in first
    assert "the crawl is stopping" in second
