"""Scrapy's own tests, run with the add-on on every crawler they create (docs/compat.md)."""
