"""A webhook receiver on 127.0.0.1: what Apprise's
``json://127.0.0.1:<port>/<path>`` posts (``ADAPTIVE_NOTIFY``), answered from a script.

``python -m testsite.webhook --port 8000`` prints each message it gets (the
walkthrough of docs/changes.md, "Notifications"); the tests script it.

Each POST gets the next status of the script (the last one repeated), so a
test says "refuse the first, accept the rest" as ``[500, 200]``; a
status of 0 holds the request until :meth:`Receiver.release` (a kill
mid-delivery).  Every post is kept with the status it got.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

#: a status that holds the request until released
HOLD = 0
#: seconds a held request waits at most (bound every wait)
HOLD_LIMIT = 60.0


@dataclass
class Post:
    path: str
    status: int
    body: dict[str, Any]


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=lambda: [200])
    posts: list[Post] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    released: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def next_status(self) -> int:
        with self.lock:
            return self.statuses[min(len(self.posts), len(self.statuses) - 1)]

    def record(self, post: Post) -> None:
        with self.lock:
            self.posts.append(post)

    def release(self) -> None:
        self.released.set()

    def accepted(self) -> list[Post]:
        with self.lock:
            return [post for post in self.posts if post.status == 200]

    def wait_for(self, count: int, timeout: float) -> list[Post]:
        """The posts, once there are *count* (bounded by *timeout*)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.posts) >= count:
                    return list(self.posts)
            time.sleep(0.05)
        raise AssertionError(f"the receiver got {len(self.posts)} posts, not {count}, in {timeout}s")


@contextmanager
def receiving(
    statuses: list[int] | None = None, port: int = 0, show: Callable[[Post], None] | None = None
) -> Iterator[Receiver]:
    """A receiver served on loopback (*port*, or a free one); ``receiver.url``
    is its Apprise URL; *show* is called with each post."""
    receiver = Receiver(statuses or [200])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = json.loads(self.rfile.read(length) or b"{}")
            status = receiver.next_status()
            if status == HOLD:
                receiver.record(Post(self.path, HOLD, data))  # counted at once: the next one goes on
                receiver.released.wait(HOLD_LIMIT)
                status = 200
            else:
                receiver.record(Post(self.path, status, data))
            if show is not None:
                show(receiver.posts[-1])
            try:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:
                pass  # the sender was killed meanwhile

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"json://127.0.0.1:{server.server_address[1]}/hook"
    try:
        yield receiver
    finally:
        receiver.release()
        server.shutdown()
        server.server_close()


def _print(post: Post) -> None:
    print(f"[{post.path}] {post.body.get('title', '')}\n{post.body.get('message', '')}\n", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print what Apprise's json:// posts to 127.0.0.1:PORT.")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="stop after this long (default 1 h)")
    options = parser.parse_args(argv)
    with receiving(port=options.port, show=_print) as receiver:
        print(f"Receiving on {receiver.url} (any path) for {options.max_seconds:.0f} s; Ctrl-C stops", flush=True)
        try:
            time.sleep(options.max_seconds)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
