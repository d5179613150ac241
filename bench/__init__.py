"""Benchmarks for scrapy-adaptive.

Speed targets live here, never in unit tests: timings depend on the machine,
so every figure is printed next to a baseline (Scrapy's own scheduler)
measured in the same run, and compared as a ratio.
"""
