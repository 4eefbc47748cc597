"""Middlewares and the robots.txt parser, enabled by their module path.

- ``response_decoding.PageDecodingMiddleware``: decodes each HTML response once, robustly, and
  records how sure the decoding is (the decoding itself is ``core.html.decoding``);
- ``retry_after.RetryAfterMiddleware``: makes Scrapy's retry of a 429/503 wait for its
  ``Retry-After``; ``retry_after.failure_reason`` names why a request failed;
- ``site_origin.SiteOriginOffsiteMiddleware``: keeps a crawl on its site's scheme, host and
  port (put in by the spiders);
- ``robots_parser.CappedRobotParser`` (``ROBOTSTXT_PARSER``): reads a robots.txt up to a cap.
"""
