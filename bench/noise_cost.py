"""What comparing pages by structure costs: state bytes per URL, time per page.

The learned-noise judge (``scrapy_adaptive/change/noise.py``) keeps a sketch
of each text page's last version in its record and, when a page's bytes
differ from its last fetch, cuts the page into fields and sketches it.  This
prints, per page and as medians over a set of pages:

* fields, and the sketch's size as stored (JSON bytes in the record);
* the time to cut and sketch a page, alone and beside the work a spider's
  callback does anyway on the same page (a parsel parse and one CSS query),
  and beside the ``exact`` digest (a SHA-1 of the body).

``python -m bench.noise_cost`` measures generated shop and news pages of
three sizes; ``--pages DIR`` adds every ``*.html`` file under DIR (real
pages; none are shipped with the repository).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from parsel import Selector
from scrapy.http import HtmlResponse, Request

from scrapy_adaptive.change import noise


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


def best(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of *repeats* runs, in microseconds (the least disturbed)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e6


def measure(name: str, html: str, repeats: int) -> dict[str, object]:
    url = "http://shop.example/p.html"
    body = html.encode("utf-8")

    def response() -> HtmlResponse:
        return HtmlResponse(url, body=body, headers={"Content-Type": "text/html; charset=utf-8"}, request=Request(url))

    def structure() -> object:
        fields = noise.fields_of(response()) or []
        return noise.sketch(fields, 0.0, noise.Masks())

    def structure_on_the_spiders_tree() -> object:
        r = response()
        r.css("title::text").get()  # the callback's parse, cached on the response
        start = time.perf_counter()
        fields = noise.fields_of(r) or []
        noise.sketch(fields, 0.0, noise.Masks())
        return time.perf_counter() - start

    def callback() -> object:
        return Selector(text=html).css("a::attr(href)").getall()

    fields = noise.fields_of(response())
    stored = noise.sketch(fields or [], 0.0, noise.Masks())
    on_tree = min(float(structure_on_the_spiders_tree()) for _ in range(repeats)) * 1e6  # type: ignore[arg-type]
    return {
        "page": name,
        "bytes": len(body),
        "fields": None if fields is None else len(fields),
        "sketch_bytes": len(noise.pack(noise.by_hash(stored))),
        "exact_us": best(lambda: hashlib.sha1(body).hexdigest(), repeats),
        "structure_us": best(structure, repeats),
        "structure_on_tree_us": on_tree,
        "callback_us": best(callback, repeats),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", help="also measure every *.html under this folder (at most 200)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    rows = [measure(name, html, args.repeats) for name, html in pages(args.pages)]
    print(f"{'page':50} {'KB':>6} {'fields':>6} {'sketch B':>8} {'sketch/page':>11} {'µs':>7} {'on tree µs':>10} {'÷ callback':>10}")
    for row in rows:
        ratio = row["structure_on_tree_us"] / row["callback_us"]  # type: ignore[operator]
        print(
            f"{str(row['page'])[-50:]:50} {row['bytes'] / 1024:6.1f} {row['fields'] or 0:6d} {row['sketch_bytes']:8d} "  # type: ignore[operator]
            f"{row['sketch_bytes'] / row['bytes']:11.1%} {row['structure_us']:7.0f} {row['structure_on_tree_us']:10.0f} {ratio:10.2f}"  # type: ignore[operator]
        )
    if len(rows) > 3:
        real = rows[3:]
        print(
            f"median over {len(real)} pages of --pages: sketch {statistics.median(r['sketch_bytes'] for r in real):.0f} B "  # type: ignore[misc]
            f"({statistics.median(r['sketch_bytes'] / r['bytes'] for r in real):.1%} of the page), "  # type: ignore[operator]
            f"{statistics.median(r['structure_on_tree_us'] for r in real):.0f} µs on the spider's tree, "  # type: ignore[misc]
            f"{statistics.median(r['structure_on_tree_us'] / r['callback_us'] for r in real):.2f} × a parse and one query"  # type: ignore[operator]
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
