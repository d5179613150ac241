"""Scrapy's "Overridden settings" line, as the add-on leaves it: passwords,
secret keys and tokens shown as REDACTED, each crawler's own line rewritten
once (several crawlers may share a process)."""

from __future__ import annotations

import logging
import pprint

from scrapy.settings import Settings, overridden_settings

from scrapy_adaptive.addon import Addon
from scrapy_adaptive.integration.engine import CRAWLER_LOGGER, OVERRIDDEN_MESSAGE, SECRET_SETTING


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def log_overridden(settings: Settings) -> None:
    """What Scrapy's crawler does once the add-ons have run."""
    settings.freeze()
    shown = dict(overridden_settings(settings))
    logging.getLogger(CRAWLER_LOGGER).info(OVERRIDDEN_MESSAGE, {"settings": pprint.pformat(shown)})


def test_each_crawler_s_line_shows_its_secrets_redacted() -> None:
    first = Settings({"HTTPAUTH_USER": "alice", "HTTPAUTH_PASS": "s3cret-a", "LOG_LEVEL": "INFO"})
    second = Settings({"MAIL_PASS": "s3cret-b", "AWS_SECRET_ACCESS_KEY": "s3cret-c", "FTP_PASSIVE_MODE": False})
    for settings in (first, second):
        Addon().update_settings(settings)
    crawler_logger = logging.getLogger(CRAWLER_LOGGER)
    keep = Keep()
    crawler_logger.addHandler(keep)
    crawler_logger.setLevel(logging.INFO)
    try:
        log_overridden(second)  # the second crawler logs first: the first one's filter lets it be
        log_overridden(first)
        log_overridden(first)  # rewritten once: the filter is gone
    finally:
        crawler_logger.removeHandler(keep)
        crawler_logger.setLevel(logging.NOTSET)
    b, a, again = keep.messages
    assert "'MAIL_PASS': 'REDACTED'" in b and "'AWS_SECRET_ACCESS_KEY': 'REDACTED'" in b
    assert "'FTP_PASSIVE_MODE': False" in b and "s3cret" not in b
    assert "'HTTPAUTH_PASS': 'REDACTED'" in a and "'HTTPAUTH_USER': 'alice'" in a and "s3cret" not in a
    assert "s3cret-a" in again


def test_the_secret_names() -> None:
    secret = ["HTTPAUTH_PASS", "FTP_PASSWORD", "MAIL_PASS", "TELNETCONSOLE_PASSWORD", "AWS_SECRET_ACCESS_KEY"]
    secret += ["AWS_SESSION_TOKEN"]
    public = ["FTP_PASSIVE_MODE", "HTTPAUTH_USER", "AWS_ACCESS_KEY_ID", "TELNETCONSOLE_USERNAME", "PASSAGE"]
    assert [n for n in secret if not SECRET_SETTING.search(n)] == []
    assert [n for n in public if SECRET_SETTING.search(n)] == []
