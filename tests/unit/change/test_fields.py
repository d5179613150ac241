"""Field-level diffs of a page's items (no crawl): dicts, dataclasses and
Scrapy items alike, matched by a key or by position, a few bytes per item."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
import scrapy
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.change.fields import ITEMS, MAX_VALUE_CHARS, MissingKey, diff, item_fields
from tests.hypo import examples


@dataclass
class Product:
    sku: str
    name: str
    price: str
    stock: int


class ProductItem(scrapy.Item):
    sku = scrapy.Field()
    name = scrapy.Field()
    price = scrapy.Field()
    stock = scrapy.Field()


def catalogue(kind: type, prices: list[str]) -> list[object]:
    rows = [(f"SKU-{i}", f"Kettle {i}", price, 5 + i) for i, price in enumerate(prices)]
    if kind is dict:
        return [{"sku": s, "name": n, "price": p, "stock": q} for s, n, p, q in rows]
    return [kind(sku=s, name=n, price=p, stock=q) for s, n, p, q in rows]


@pytest.mark.parametrize("kind", [dict, Product, ProductItem])
def test_the_changed_fields_of_the_changed_items_are_named_whatever_the_item_type(kind: type) -> None:
    old = item_fields(catalogue(kind, ["10.00", "20.00", "30.00"]), key="sku", values=["price"])
    new_items = catalogue(kind, ["10.00", "21.50", "30.00"])
    new_items.reverse()  # the page lists them in another order: matched by key
    new = item_fields(new_items, key="sku", values=["price"])
    assert diff(old, new) == {
        "changed": [{"item": "SKU-1", "fields": ["price"], "values": {"price": ["20.00", "21.50"]}}],
        "added": [],
        "removed": [],
    }


def test_by_position_items_added_and_removed_and_a_key_missing() -> None:
    old = item_fields([{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    new = item_fields([{"a": 1, "b": 5}])
    assert diff(old, new) == {"changed": [{"item": "0", "fields": ["b"]}], "added": [], "removed": ["1"]}
    assert diff(None, new) is None  # no earlier summary: no field answer
    assert diff(old, item_fields([{"a": 1}], key="a")) is None  # matched another way: not compared
    with pytest.raises(MissingKey, match=r"item 1 has no field 'sku'"):
        item_fields([{"sku": 1}, {"name": "x"}], key="sku")


def test_only_the_rules_fields_count_and_values_are_cut() -> None:
    long = "x" * 1000
    old = item_fields([{"price": "1", "note": "a", "text": long}], fields=["price", "text"], values=["text"])
    new = item_fields([{"price": "1", "note": "b", "text": long + "y"}], fields=["price", "text"], values=["text"])
    result = diff(old, new)
    assert result is not None and [c["fields"] for c in result["changed"]] == [["text"]]  # "note" is not watched
    assert len(result["changed"][0]["values"]["text"][1]) == MAX_VALUE_CHARS


def test_a_ten_field_item_costs_at_most_64_bytes_of_the_record() -> None:
    items = [{f"field_{j}": f"value {i} {j}" * 3 for j in range(10)} | {"sku": f"SKU-{i:05d}"} for i in range(100)]
    summary = item_fields(items, fields=[f"field_{j}" for j in range(10)], key="sku")
    per_item = len(json.dumps(summary[ITEMS], separators=(",", ":")).encode()) / len(items)
    assert per_item <= 64, per_item


FIELDS = ["name", "price", "stock", "date"]


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(st.fixed_dictionaries({f: st.text(max_size=12) for f in FIELDS}), min_size=1, max_size=8),
    st.data(),
)
def test_any_edit_is_named_field_by_field_and_nothing_else(items: list[dict[str, str]], data: st.DataObject) -> None:
    edited = [dict(item) for item in items]
    expected = {}
    for position, item in enumerate(edited):
        touched = data.draw(st.sets(st.sampled_from(FIELDS)))
        for name in touched:
            item[name] = item[name] + "!"  # a real edit
        if touched:
            expected[str(position)] = sorted(touched)
    result = diff(item_fields(items), item_fields(edited))
    assert result is not None
    assert {c["item"]: c["fields"] for c in result["changed"]} == expected
    assert result["added"] == result["removed"] == []
