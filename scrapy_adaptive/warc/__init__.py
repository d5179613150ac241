"""WARC output (``ADAPTIVE_WARC_DIR``, the ``warc`` extra).

:mod:`.writer` archives every transaction as sent, writes ``revisit``
records for unchanged captures, and is a durable sink for delivery.
"""
