"""Seeds given to a stopped crawl: checked, kept in the state folder's seeds
file by ``scrapy frontier seed``, and taken by the scheduler when the crawl
next opens."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ...config.spec import plural
from ...store.marker import private_opener

logger = logging.getLogger(__name__)

#: seeds given to a stopped crawl, added by the scheduler when it next opens
SEEDS_FILE = "seeds.jsonl"
#: where lines of the seeds file that are not seeds are kept
REJECTED_SEEDS_FILE = "seeds-rejected.jsonl"


def seed_problem(url: str) -> str | None:
    """Why *url* cannot be a seed, or None.

    Checked when the seed is given: a stopped crawl would otherwise take it
    into its seeds file, say it was added, and only refuse it at its next
    start, in a log line nobody who typed the URL reads.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as exc:
        return f"{url!r} is not a URL to seed: {exc}."
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not a URL to seed: it needs http:// or https:// and a host (e.g. https://example.com/)."
    return None


#: takes URLs to seed, answers one ``{"url", "result"}`` per URL
Seeder = Callable[[list[str]], list[dict[str, Any]]]


def file_seeder(state_path: str) -> Seeder:
    """Seeds for a stopped crawl: appended to the state folder's seeds file,
    added (through the scheduler, like any request) when the crawl next opens."""

    def seed(urls: list[str]) -> list[dict[str, Any]]:
        path = os.path.join(state_path, SEEDS_FILE)
        with open(path, "a", encoding="utf-8", opener=private_opener) as f:
            for url in urls:
                f.write(json.dumps({"url": url}) + "\n")
        return [{"url": url, "result": "added when the crawl next starts"} for url in urls]

    return seed


def take_seeds(state_path: str, seeder: Seeder) -> list[dict[str, Any]]:
    """Hand the seeds left by ``scrapy frontier seed`` while the crawl was
    stopped to *seeder*; the file is removed once they are all added.

    The file is read, never followed (a link there is refused, not read),
    and a file that cannot be read stays as it is, with one error line: the
    crawl starts without its seeds.  Lines that are not seeds are kept in
    :data:`REJECTED_SEEDS_FILE`, with one warning.
    """
    path = os.path.join(state_path, SEEDS_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with open(fd, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        logger.error(
            "The seeds file %s cannot be read (%s); its seeds are not added and it is left as it is.", path, reason
        )
        return []
    urls, rejected = [], []
    for line in lines:
        try:
            urls.append(str(json.loads(line)["url"]))
        except (ValueError, KeyError, TypeError):
            if line.strip():
                rejected.append(line)
    if rejected:
        kept = os.path.join(state_path, REJECTED_SEEDS_FILE)
        with open(kept, "a", encoding="utf-8", opener=private_opener) as f:
            f.write("".join(line + "\n" for line in rejected))
        logger.warning(
            '%d %s of %s %s not a seed ({"url": ...} JSON); kept in %s.',
            len(rejected),
            plural(len(rejected), "line"),
            path,
            "is" if len(rejected) == 1 else "are",
            kept,
        )
    results = seeder(urls)
    os.unlink(path)
    return results
