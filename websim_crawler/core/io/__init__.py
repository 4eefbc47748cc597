"""Files in and out: crawl feeds read and written durably, result files written atomically.

Feeds: ``open_feed`` (``feed_writer``) opens a crawl feed so that each item reaches the operating
system as it is written; ``iter_jsonl`` and ``iter_feeds`` (``feed_reader``) read feeds, a cut
last line skipped quietly and each URL counted once. Results: ``atomic_writer`` and the
``atomic_write_*`` helpers (``atomic``) replace a file through a temporary one;
``atomic_write_pair`` (``pair_journal``) replaces two together. The public names are here.
"""

from __future__ import annotations

import lazy_loader

# Importing one submodule must not import the others: the names listed in ``__init__.pyi`` are
# imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
