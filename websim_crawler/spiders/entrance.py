"""Finding the way into a site's search: the start page's form, else its OpenSearch description,
else a search form on a page one link away (``core.surfacing.entrance`` says where to look)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.exceptions import CloseSpider
from scrapy.http import Response
from twisted.python.failure import Failure

from websim_crawler.core.crawling import SearchForm, SearchTarget, rank_search_forms
from websim_crawler.core.surfacing import entrance_pages, opensearch_links, opensearch_template
from websim_crawler.core.urls import is_http_url, origin_of
from websim_crawler.spiders._base import WebsimSpider

if TYPE_CHECKING:
    from websim_crawler.core.html import HtmlTree

logger = logging.getLogger(__name__)

_ENTRANCE_META = "websim_entrance"  # how a page fetched to find the way in was found


class SearchEntrance(WebsimSpider):
    """A spider that searches a site: it finds the search form, or the way to one."""

    start_url: str | None = None
    query_template: str | None = None
    search: SearchTarget = SearchTarget()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entrance_queue: list[tuple[str, str]] = []  # (how, url) still to look at

    def use_form(self, form: SearchForm, response: Response, where: str) -> Iterator[Any]:
        """Submit the queries to the search form found on ``response`` (the spider's own)."""
        raise NotImplementedError

    def begin_queries(self, form_text: str) -> Iterator[scrapy.Request]:
        """Submit the queries through ``query_template`` (the spider's own)."""
        raise NotImplementedError

    def look_for_entrance(self, root: HtmlTree, url: str) -> Iterator[scrapy.Request]:
        """The start page has no search form: queue the places the way in may be, look."""
        self.entrance_queue = [("opensearch", found) for found in opensearch_links(root, url)]
        budget = self.surfacing_params.entrance_pages
        self.entrance_queue += [("page", found) for found in entrance_pages(root, url, budget)]
        yield from self.next_entrance(url)

    def next_entrance(self, start_url: str) -> Iterator[scrapy.Request]:
        """Look at the next place the way in may be, or stop when none is left."""
        while self.entrance_queue:
            how, url = self.entrance_queue.pop(0)
            if self.site_origins and origin_of(url) not in self.site_origins:
                continue
            self.count(f"websim/crawl/entrance/tried/{how}")
            yield scrapy.Request(
                url,
                callback=self.parse_entrance,
                errback=self.entrance_failed,
                meta=self.request_meta(
                    {_ENTRANCE_META: how, "handle_httpstatus_list": [404, 410]}, kind="start"
                ),
                dont_filter=True,
            )
            return
        self.count("websim/crawl/no_search_form")
        logger.error(
            "deepweb: no search form (a form with a text box) on %s, in an OpenSearch "
            "description or on the pages it links to as search or about; give the result URL "
            "pattern with -a query_template=https://site/search?q={query}, or crawl the "
            "site by its links with 'scrapy crawl site'",
            start_url,
        )
        raise CloseSpider("no_search_form")

    def parse_entrance(self, response: Response) -> Iterator[scrapy.Request]:
        """Take the way in from an OpenSearch description or a nearby page's search form."""
        how = response.meta[_ENTRANCE_META]
        if how == "opensearch":
            template = opensearch_template(response.body, response.url)
            if template is not None and origin_of(template) in self.site_origins:
                logger.info(
                    "deepweb: no search form on the start page; the OpenSearch description "
                    "%s gives the result URL %s",
                    response.url,
                    template,
                )
                self.count("websim/crawl/entrance/opensearch")
                self.query_template = template
                self.search = SearchTarget.of_template(template)
                yield from self.begin_queries("")
                return
        else:
            root = self.html_root(response)
            form = self.usable_search_form(root, response.url) if root is not None else None
            if form is not None:
                self.count("websim/crawl/entrance/nearby_form")
                yield from self.use_form(form, response, f"{response.url}, one link away")
                return
        yield from self.next_entrance(self.start_url or response.url)

    def entrance_failed(self, failure: Failure) -> Iterator[scrapy.Request]:
        """Errback of a page looked at for the way in: go on to the next place."""
        self.count_failure(failure)
        yield from self.next_entrance(self.start_url or "")

    def usable_search_form(self, root: HtmlTree, url: str) -> SearchForm | None:
        """Return the best search form that submits to the crawl's own site over http(s); the
        others are skipped and counted (``javascript:`` actions, another scheme, host or port)."""
        for form in rank_search_forms(root, url):
            if not is_http_url(form.action):
                reason = "not_http"
            elif self.site_origins and origin_of(form.action) not in self.site_origins:
                reason = "offsite"
            else:
                return form
            self.count(f"websim/crawl/search_form/skipped/{reason}")
            logger.warning(
                "deepweb: search form #%d on %s skipped (%s): its action is %s",
                form.form_number,
                url,
                reason,
                form.action[:200],
            )
        return None
