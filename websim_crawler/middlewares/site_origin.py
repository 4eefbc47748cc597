"""Keep a crawl on its own site: scheme, host and port, not the host name alone.

Scrapy's ``OffsiteMiddleware`` compares host names with ``allowed_domains``: a search form, a
``<base href>``, a redirect or a link aimed at another port of the crawled host passes it. This
subclass also requires the origins (``core.urls.origin_of``) in the spider's ``site_origins`` when
the spider sets one, for every request, ``dont_filter`` ones included (a redirect keeps its
request's ``dont_filter``, which Scrapy's ``should_follow`` is never asked about, so the check
sits in ``process_request``; Scrapy's own check follows it).
Requests to another origin of an allowed host are counted under ``websim/offsite/other_origin``.
"""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import IgnoreRequest

from websim_crawler.core.urls import origin_of


class SiteOriginOffsiteMiddleware(OffsiteMiddleware):
    """Scrapy's offsite filter, plus the spider's origins (scheme, host and port), if any."""

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        """Drop a request off the spider's origin, whatever its ``dont_filter``; then Scrapy's."""
        own = getattr(self.crawler.spider, "site_origins", None)
        if own and not request.meta.get("allow_offsite") and origin_of(request.url) not in own:
            assert self.stats is not None
            self.stats.inc_value("websim/offsite/other_origin")
            self.stats.inc_value("offsite/filtered")
            raise IgnoreRequest(f"Filtered offsite request to {origin_of(request.url)!r}")
        super().process_request(request)
