"""The one door to the settings: every ``WEBSIM_*`` setting, read and validated once.

``WebsimConfig.from_settings`` (``websim``) builds the frozen config from Scrapy ``Settings`` or a
dict; components built by a crawler share one through ``websim_config(crawler)``. The sections
of the Scrapy adapters live here (``crawl``, ``render``, ``reliability``, ``archive``,
``distributed``, ``pool``; the item and input sections in ``websim``); the sections of the pure
core live beside the algorithms they set (``core.page.params``, ``core.clustering.params``
...), which never import upwards. The ``websim`` commands' flags are aliases of these settings
(``cli._flags``).
"""

from __future__ import annotations

import lazy_loader

# Importing one section (``config.render`` from the browser, say) must not import the others:
# the names listed in ``__init__.pyi`` are imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
