"""The layer that meets Scrapy: scheduler, middlewares, verdicts, delivery.

Everything below this package (``model``, ``config``, ``store``,
``frontier``, ``hosts``, ``change``, ``policies``) is plain Python and is
tested without a crawler; everything here adapts it to Scrapy's components,
signals and settings.  :mod:`.engine` is the one module that touches a
private part of Scrapy.
"""
