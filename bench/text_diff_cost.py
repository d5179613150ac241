"""What ``ADAPTIVE_TEXT_DIFF`` costs: CPU per changed page, state bytes per URL.

A changed page with the setting on is parsed for its visible text (the
visit middleware), and its verdict reads the URL's last text, diffs it,
and writes the new one compressed in the same write (the frontier).  This
runs the same changed visits through a frontier on LevelDB twice in one
process, the setting off and on, and prints:

* CPU per changed page: what the crawl does for a changed page anyway
  (Scrapy's parse and one CSS query, the ``exact`` digest, the verdict's
  write with its change event), and what the text diff adds to it (the
  visible-text parse, the read, the diff, the compressed write), with the
  ratio on ÷ off;
* state per URL: the record's bytes, and the compressed text's: with
  ``ADAPTIVE_DELIVERY`` (the default) a version is written awaiting
  delivery, so the last delivered version's text is kept beside it (two
  texts in one zlib stream); without, one text ("one text").

``python -m bench.text_diff_cost`` measures generated shop pages of three
sizes (:func:`pages`), each URL changed one price per
version; ``--pages DIR`` adds every ``*.html`` file under DIR (real pages,
changed one word per version; none are shipped).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from scrapy.http import HtmlResponse

from scrapy_adaptive.change import text_diff
from scrapy_adaptive.change.digest import sha1_digest
from scrapy_adaptive.frontier import ChangeState, Frontier, Outcome, Politeness, Visit
from scrapy_adaptive.integration.spidermiddlewares.reading import answer_of
from scrapy_adaptive.store.keys import TEXT_PREFIX
from scrapy_adaptive.store.leveldb import LevelDBStore

def generated(rows: int, seed: int = 1) -> str:
    """A shop listing with *rows* products, a nav, a footer, JSON-LD and a CSRF token."""
    rng = random.Random(seed)
    nav = "".join(f'<li><a href="/c/{i}" class="nav-link">Category {i}</a></li>' for i in range(20))
    items = "".join(
        f'<div class="product" data-sku="SKU-{i}"><a href="/p/{i}.html"><img src="/img/{i}.jpg" alt="Product {i}"></a>'
        f'<h2>Product {i} {rng.choice(["red", "blue", "large"])}</h2><p class="price">{rng.randrange(5, 500)}.99 EUR</p>'
        f"<p>{' '.join(rng.choice(['fresh', 'cold', 'sale', 'new', 'fast']) for _ in range(20))}</p></div>"
        for i in range(rows)
    )
    ld = json.dumps({"@type": "ItemList", "itemListElement": [{"position": i, "url": f"/p/{i}.html"} for i in range(rows)]})
    return (
        f'<!DOCTYPE html><html><head><title>Shop</title><meta name="description" content="A shop">'
        f'<script type="application/ld+json">{ld}</script><link rel="stylesheet" href="/s.css"></head>'
        f"<body><nav><ul>{nav}</ul></nav><main>{items}</main>"
        f'<form><input type="hidden" name="csrf" value="{rng.getrandbits(96):024x}"></form>'
        f"<footer><p>Server time 12:03:04 UTC</p></footer></body></html>"
    )


def pages(directory: str | None) -> Iterator[tuple[str, str]]:
    for rows in (10, 60, 250):
        yield f"generated shop, {rows} products", generated(rows)
    if directory:
        for path in sorted(Path(directory).rglob("*.html"))[:200]:
            yield str(path), path.read_text("utf-8", "replace")


#: the cap the docs advise
CAP = 4096
_NUMBER = re.compile(r"\d+\.99")


def versions(html: str, count: int) -> list[str]:
    """*count* versions of a page, each with one more price (or word) edited."""
    out = [html]
    for n in range(1, count):
        matches = list(_NUMBER.finditer(out[-1]))
        if matches:
            m = matches[(7 * n) % len(matches)]
            out.append(out[-1][: m.start()] + f"{n}.49" + out[-1][m.end() :])
        else:  # a real page: one word edited
            out.append(out[-1].replace("</p>", f" edit{n}</p>", 1))
    return out


def run(html_versions: list[str], urls: int, *, diff: bool, deliver: bool) -> tuple[float, int, int, int]:
    """Every URL through every version, on a fresh LevelDB store: CPU
    seconds per changed page, record bytes and text bytes per URL, and the
    mean text diff's bytes."""
    folder = tempfile.mkdtemp(prefix="text-diff-bench-")
    store = LevelDBStore(folder)
    clock = [1_000_000.0]
    frontier = Frontier(
        store,
        Politeness(delay_factor=0.0, min_delay=0.0, max_delay=0.0, valence=urls, retry_delay=1.0),
        clock=lambda: clock[0],
        text_diff=CAP if diff else 0,
    )
    frontier.load()
    bodies = [v.encode() for v in html_versions]
    fps = []
    for n in range(urls):
        url = f"http://shop.example/p/{n}.html"
        fp = hashlib.sha1(url.encode()).digest()
        frontier.add(fp, url, "shop.example", {"url": url})
        fps.append((fp, url))
    spent = 0.0
    changed = 0
    for body in bodies:  # bounded: versions × URLs
        for fp, url in fps:
            clock[0] += 1.0
            frontier.add(fp, url, "shop.example", {"url": url}, force=True)
            issued = frontier.next()
            assert issued is not None
            started = time.process_time()
            response = HtmlResponse(url, body=body, encoding="utf-8", headers={"Content-Type": "text/html"})
            response.css("h1::text").get()  # the spider's parse
            visit = Visit(Outcome.VISITED, wait=1e6, status=200, change=ChangeState.CHANGED, url=url)
            visit.digest = sha1_digest("exact", body)
            if diff:
                visit.text = text_diff.text_lines(answer_of(response))
            frontier.update(issued.fp, visit, deliver=deliver, presence=[1, 0, 0], event="changed")
            if deliver:
                frontier.confirm([(issued.fp, visit.digest)])
            spent += time.process_time() - started
            changed += 1
    diff_bytes = [len(row[2]) for row in store.events(None, 100_000)]
    records = sum(len(raw) for _, raw in store.records())
    texts = sum(len(value) for _, value in store._db.iterator(prefix=TEXT_PREFIX))
    store.close()
    shutil.rmtree(folder, ignore_errors=True)
    return spent / changed, records // urls, texts // urls, int(statistics.mean(diff_bytes)) if diff_bytes else 0


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    """Print the table; return its rows (for the smoke test)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", help="a folder of real *.html pages to measure too")
    parser.add_argument("--urls", type=int, default=50, help="URLs per page (each changed --versions times)")
    parser.add_argument("--versions", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3, help="rounds of off then on; the median is printed")
    args = parser.parse_args(argv)
    rows = []
    print(f"{'page':<34} {'kB':>5} {'off µs':>8} {'on µs':>8} {'on÷off':>7} {'record B':>9} {'text B/URL':>11} "
          f"{'one text':>10} {'event B off→on':>15}")  # fmt: skip
    for name, html in pages(args.pages):
        html_versions = versions(html, args.versions)
        off, on, ratios = [], [], []
        for _ in range(max(1, args.repeats)):  # paired rounds: the same load on both
            a = run(html_versions, args.urls, diff=False, deliver=True)
            b = run(html_versions, args.urls, diff=True, deliver=True)
            off.append(a)
            on.append(b)
            ratios.append(b[0] / a[0])
        alone = run(html_versions, max(1, args.urls // 5), diff=True, deliver=False)
        a, b = min(off), min(on)
        print(
            f"{name[:34]:<34} {len(html) / 1000:>5.1f} {statistics.median(x[0] for x in off) * 1e6:>8.0f} "
            f"{statistics.median(x[0] for x in on) * 1e6:>8.0f} {statistics.median(ratios):>7.2f} {b[1]:>9,} "
            f"{b[2]:>11,} {alone[2]:>10,} {a[3]:>7,}→{b[3]:<7,}"
        )
        rows.append({"page": name, "ratio": statistics.median(ratios), "text_bytes": b[2], "one_text": alone[2]})
    return rows


if __name__ == "__main__":
    main()
