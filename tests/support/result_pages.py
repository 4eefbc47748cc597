"""What a site says about the result pages a crawl fetched: which were empty, which lists each
showed. The tests of query-routed sites and ``benchmarks/real_sites.py`` share it.

A generated site (``support.routed_site``) keeps its own account of what it served; a real
application's result pages are read with its own markup (``result_lists``, ``is_empty`` of the
``support.php_apps`` launchers). Other launchers say nothing (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from support.real_apps import GalleryCrawl


@dataclass
class ResultPageAccount:
    """The result pages a crawl fetched, as the site tells them."""

    empty_pages: int  # result pages the site served empty (nothing found, past the end)
    several_lists: list[list[set[Any]]]  # per page with several lists: each list's records

    def dropped_lists(self, crawl: GalleryCrawl) -> list[set[Any]]:
        """Return, for lists on pages with several, the records the crawl did not store."""
        return [
            missed
            for lists in self.several_lists
            for missed in (numbers - crawl.reached for numbers in lists)
            if missed
        ]


def result_page_account(app: Any, crawl: GalleryCrawl) -> ResultPageAccount | None:
    """Return the site's account of the crawl's result pages (``None``: the site has none)."""
    fetched = {item["url"]: item["html"] for item in crawl.result_pages}
    if hasattr(app, "served_lists"):
        several = [
            lists for url, lists in app.served_lists.items() if url in fetched and len(lists) > 1
        ]
        return ResultPageAccount(len(app.served_empty & fetched.keys()), several)
    if not hasattr(app, "result_lists"):
        return None
    several = []
    for url, page_html in fetched.items():
        lists = [urls for urls in app.result_lists(page_html, url) if urls]
        if len(lists) > 1:
            several.append([{app.record_number(link) for link in urls} - {None} for urls in lists])
    empty = sum(app.is_empty(page_html) for page_html in fetched.values())
    return ResultPageAccount(empty, several)
