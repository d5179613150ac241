"""A failed fetch: its stored reason names the setting that ended it, and a
network failure is logged in one line, without Scrapy's traceback."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import (
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from scrapy.utils.test import get_crawler
from twisted.internet import error as net

from scrapy_adaptive.integration.downloadermiddlewares.errors import FetchErrorMiddleware, limit_reason
from scrapy_adaptive.integration.engine import SCRAPER_LOGGER, say_in_one_line
from scrapy_adaptive.model import Outcome
from tests.standins import Services


def middleware(**settings: Any) -> tuple[FetchErrorMiddleware, Services]:
    mw = FetchErrorMiddleware.from_crawler(get_crawler(settings_dict=settings))
    commits = Services()
    mw.frontier_opened(commits)  # type: ignore[arg-type]
    return mw, commits


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        (
            DownloadTimeoutError("Getting x took longer than 1.5 seconds."),
            "no complete answer within DOWNLOAD_TIMEOUT (1.5 s)",
        ),
        (net.TimeoutError(), "no complete answer within DOWNLOAD_TIMEOUT (1.5 s)"),
        (DownloadCancelledError(), "body exceeds DOWNLOAD_MAXSIZE (1048576 B)"),
        (DownloadConnectionRefusedError("refused"), None),
    ],
)
def test_the_reason_names_the_setting_that_ended_the_download(exception: Exception, reason: str | None) -> None:
    assert limit_reason(exception, 1.5, 1_048_576) == reason


def test_a_cancelled_download_without_a_size_limit_is_said_as_it_is() -> None:
    assert limit_reason(DownloadCancelledError(), 180.0, 0) is None
    mw, commits = middleware(DOWNLOAD_MAXSIZE=0)
    mw.process_exception(Request("http://127.0.0.1/a"), DownloadCancelledError())
    assert commits.visits[0].reason == "DownloadCancelledError"


def test_the_request_limits_come_before_the_settings() -> None:
    mw, commits = middleware(DOWNLOAD_MAXSIZE=5_000, DOWNLOAD_TIMEOUT=30)
    request = Request("http://127.0.0.1/a", meta={"download_maxsize": 1_000, "download_timeout": 2.5})
    mw.process_exception(request, DownloadCancelledError())
    mw.process_exception(request, DownloadTimeoutError("late"))
    mw.process_exception(Request("http://127.0.0.1/b"), DownloadCancelledError())
    assert [(v.outcome, v.reason) for v in commits.visits] == [
        (Outcome.RETRY, "body exceeds DOWNLOAD_MAXSIZE (1000 B)"),
        (Outcome.RETRY, "no complete answer within DOWNLOAD_TIMEOUT (2.5 s)"),
        (Outcome.RETRY, "body exceeds DOWNLOAD_MAXSIZE (5000 B)"),
    ]


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def log_raised(exception: BaseException, name: str, *args: Any) -> logging.LogRecord:
    """The record of *exception* logged with its traceback by the logger *name*."""
    logger = logging.getLogger(name)
    keep = Keep()
    logger.addHandler(keep)
    try:
        try:
            raise exception
        except BaseException:
            logger.error(*args, exc_info=True)
    finally:
        logger.removeHandler(keep)
    [record] = keep.records
    return record


def log_download_error(exception: BaseException) -> logging.LogRecord:
    """What Scrapy's scraper does for a failed download no errback handled."""
    return log_raised(
        exception, SCRAPER_LOGGER, "Error downloading %(request)s", {"request": "<GET http://127.0.0.1/a>"}
    )


def test_a_network_failure_is_logged_in_one_line_with_its_reason() -> None:
    mw, _ = middleware(DOWNLOAD_TIMEOUT=1.5)
    timeout = DownloadTimeoutError("Getting http://127.0.0.1/a took longer than 1.5 seconds.")
    mw.process_exception(Request("http://127.0.0.1/a"), timeout)
    record = log_download_error(timeout)
    assert record.exc_info is None and record.levelno == logging.ERROR
    assert record.getMessage() == (
        "Error downloading <GET http://127.0.0.1/a>: no complete answer within DOWNLOAD_TIMEOUT (1.5 s)"
    )
    # a refused connection says what it is, in one line too
    refused = DownloadConnectionRefusedError("Connection was refused by other side")
    mw.process_exception(Request("http://127.0.0.1/a"), refused)
    record = log_download_error(refused)
    assert record.exc_info is None and record.getMessage().endswith(
        ": DownloadConnectionRefusedError: Connection was refused by other side"
    )


def test_a_connection_closed_mid_answer_is_said_by_its_causes_not_twisteds_repr() -> None:
    """A server whose 1 MB header line Twisted refuses closes the connection:
    Scrapy raises ``DownloadFailedError(str(ResponseFailed))``, whose words
    were ``[<twisted.python.failure.Failure twisted.internet.error.ConnectionDone:
    Connection was closed cleanly.>]``, in the log line and the stored reason."""
    from twisted.python.failure import Failure
    from twisted.web._newclient import ResponseFailed

    mw, commits = middleware()
    cause = ResponseFailed([Failure(net.ConnectionDone())])
    try:
        raise DownloadFailedError(str(cause)) from cause
    except DownloadFailedError as exc:
        failed = exc
    mw.process_exception(Request("http://127.0.0.1/a"), failed)
    said = "DownloadFailedError: ConnectionDone: Connection was closed cleanly."
    assert commits.visits[0].reason == said
    record = log_download_error(failed)
    assert record.exc_info is None and record.getMessage() == f"Error downloading <GET http://127.0.0.1/a>: {said}"


def test_a_bug_keeps_its_traceback() -> None:
    """An exception that is no network failure (a middleware's bug) is logged as Scrapy logs it."""
    mw, commits = middleware()
    bug = KeyError("missing")
    mw.process_exception(Request("http://127.0.0.1/a"), bug)
    assert commits.visits[0].outcome is Outcome.RETRY  # the URL still gets its verdict
    record = log_download_error(bug)
    assert record.exc_info is not None and record.getMessage() == "Error downloading <GET http://127.0.0.1/a>"
    # nor does an IgnoreRequest (robots.txt, offsite) get a note: Scrapy does not log it
    ignored = IgnoreRequest("Forbidden by robots.txt")
    mw.process_exception(Request("http://127.0.0.1/b"), ignored)
    assert not getattr(ignored, "__notes__", None)


def test_only_the_scraper_logger_drops_tracebacks() -> None:
    """A user's own logging of the same exception keeps its traceback and shows the reason as a note."""
    noted = DownloadTimeoutError("late")
    say_in_one_line(noted, "no complete answer within DOWNLOAD_TIMEOUT (1 s)")
    record = log_raised(noted, "tests.user", "my errback saw it")
    assert record.exc_info is not None
    assert "scrapy-adaptive: no complete answer within DOWNLOAD_TIMEOUT (1 s)" in logging.Formatter().format(record)


def test_a_url_the_http_client_refuses_is_one_line_and_not_retried() -> None:
    """A space in the host: Twisted's client refuses the URL before any
    connection, the same at every try.  It was retried like a network error,
    each time with a traceback through Scrapy's download machinery."""
    from twisted.web._newclient import Request as TwistedRequest
    from twisted.web.http_headers import Headers

    with pytest.raises(ValueError) as raised:  # the words Twisted uses, pinned to the installed version
        TwistedRequest(b"GET", b"http://exa mple.com/", Headers(), None)
    refused = raised.value
    mw, commits = middleware()
    mw.process_exception(Request("http://127.0.0.1/a"), refused)
    [visit] = commits.visits
    assert visit.outcome is Outcome.FAILED and "Invalid URI b'http://exa mple.com/'" in (visit.reason or "")
    record = log_download_error(refused)
    assert record.exc_info is None and record.getMessage().endswith(": ValueError: Invalid URI b'http://exa mple.com/'")


class ProjectMiddleware:
    """A project's downloader middleware with a bug."""

    def process_response(self, request: Request, response: object) -> object:
        return {}["missing"]


def raised_by_project_middleware() -> KeyError:
    try:
        ProjectMiddleware().process_response(Request("http://127.0.0.1/a"), None)
    except KeyError as exc:
        return exc
    raise AssertionError("did not raise")


def test_a_components_error_is_stored_naming_the_component() -> None:
    """The stored reason says which middleware raised (its traceback goes to
    Scrapy's log; the state keeps only the reason)."""
    mw, commits = middleware()
    bug = raised_by_project_middleware()
    mw.process_exception(Request("http://127.0.0.1/a"), bug)
    [visit] = commits.visits
    assert visit.outcome is Outcome.RETRY
    assert visit.reason == f"KeyError: 'missing' (raised in {__name__}.ProjectMiddleware.process_response)"
    # not a component's: said as before
    mw.process_exception(Request("http://127.0.0.1/b"), KeyError("missing"))
    assert commits.visits[-1].reason == "KeyError: 'missing'"


def test_the_downloaders_errback_settles_only_a_url_still_out() -> None:
    """What reaches :class:`SettlingDownloader` went through ``process_exception``
    already, or is a ``process_response`` error no one saw: only the URL still
    without a verdict gets one."""
    mw, commits = middleware()
    out = commits.issue(Request("http://127.0.0.1/out"))
    mw.settle_unsettled(out, raised_by_project_middleware())
    mw.settle_unsettled(Request("http://127.0.0.1/settled"), KeyError("missing"))
    assert [v.reason for v in commits.visits] == [
        f"KeyError: 'missing' (raised in {__name__}.ProjectMiddleware.process_response)"
    ]
