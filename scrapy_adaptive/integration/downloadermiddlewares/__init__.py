"""Downloader middlewares: evaluators that see fetches before the spider."""
