"""Storage: the ``Store`` protocol, its backends and the state folder.

* :mod:`.keys`: how every key is encoded (one function each, sort order in
  the doctests);
* :mod:`.base`: the bytes-in / bytes-out ``Store`` protocol, atomic
  batches, the in-memory store;
* :mod:`.leveldb`: the embedded default (plyvel);
* :mod:`.redis`: a fleet of workers on one Redis (the ``redis`` extra);
* :mod:`.statedir`: the state folder: resolve, refuse what is not ours or is
  damaged, open the store, checkpoints.

Nothing here knows what a URL record means; the frontier does.
"""
