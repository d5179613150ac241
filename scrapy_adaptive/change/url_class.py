"""A URL's class: the pages of one host that are likely made alike.

Pages of one directory of a host with one extension usually come from one
template and are served by one code path: a clock in the template is noise
on every one of them (:class:`~.noise_learner.NoisePool`), and whether the server's
validators tell the truth is one question for all of them
(:class:`~.trust.TrustBook`).  Both key what they learn by this class.
"""

from __future__ import annotations

import functools
import posixpath
from urllib.parse import urlsplit


#: a fetch asks its URL's class several times (its validators' trust, the
#: wait policy's belief in its Last-Modified, the noise pool): parsed once,
#: the URLs of the last few hundred fetches kept
@functools.lru_cache(maxsize=1024)
def url_class(url: str) -> str:
    """Host, directory and extension of *url*, as one key.

    >>> url_class("https://news.example/p/12.html")
    'news.example/p/*.html'
    >>> url_class("https://news.example/story?id=3")
    'news.example/*'
    """
    parts = urlsplit(url)
    directory, name = posixpath.split(parts.path or "/")
    return f"{(parts.hostname or '').lower()}{directory.rstrip('/')}/*{posixpath.splitext(name)[1]}"
