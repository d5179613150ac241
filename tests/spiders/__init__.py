"""Spiders run by end-to-end tests via ``tests.crawlrunner`` (``scrapy runspider <file>``)."""
