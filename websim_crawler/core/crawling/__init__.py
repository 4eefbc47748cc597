"""Moving through a query-result site: the next result page and the links to its records.

Pure: works on an ``lxml.html`` tree (Scrapy's ``response.selector.root`` or ``parse_html``) and
URL strings; the spiders call these and turn the answers into requests. Links are resolved by
``core.urls.absolute_url``; the spiders' settings are in ``websim_crawler.config.crawl``.
"""

from __future__ import annotations

import lazy_loader

# Importing one submodule must not import the others: the names listed in ``__init__.pyi`` are
# imported on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
