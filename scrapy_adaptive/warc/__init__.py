"""WARC output (``ADAPTIVE_WARC_DIR``, the ``warc`` extra).

* :mod:`.writer`: the files, the capture index that decides ``response`` or
  ``revisit``, rotation and repair after a kill;
* :mod:`.middleware`: the downloader middleware that hands it every
  transaction as sent, and a durable sink for delivery.
"""
