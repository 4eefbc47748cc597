"""The ``deepweb`` spider: query a site's search form and crawl the result pages and records.

``scrapy crawl deepweb -a start_url=URL [-a queries=Q1,Q2|auto] [-a queries_file=F] [-a max_pages=N]
[-a max_queries=N] [-a follow=1] [-a render=1] [-a query_template=https://site/search?q={query}]
-O pages.jsonl``

Without queries (or with ``queries=auto``) the spider surfaces the site: it chooses its own
queries (``spiders.surfacing``). A start page without a search form is not the end: its
OpenSearch description, then a few pages one link away, are looked at for the way in.

As a distributed worker (``-s WEBSIM_REDIS_URL=...``) it takes its queries from Redis
(``websim seed deepweb``) once it has read the search form on its own copy of the start page.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote_plus

import scrapy
from form2request import form2request
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DontCloseSpider
from scrapy.http import HtmlResponse, Request, Response
from scrapy.utils.defer import deferred_from_coro
from twisted.python.failure import Failure

from websim_crawler.browser.page import PARTIAL_META
from websim_crawler.browser.playwright_wiring import SCREENSHOT_META, rendering_of
from websim_crawler.core.crawling import (
    CrawlDiagnosis,
    NextPage,
    ResultListMemory,
    ResultRecords,
    SearchForm,
    SearchTarget,
    find_records,
    find_search_form,
    form_words,
    next_page,
    site_template_links,
)
from websim_crawler.core.html import HtmlTree, outgoing_links, visible_text
from websim_crawler.core.surfacing import (
    FormInput,
    search_form_inputs,
)
from websim_crawler.core.urls import is_http_url
from websim_crawler.distributed import WORKER_LOCAL
from websim_crawler.errors import ConfigError, InputFormatError
from websim_crawler.middlewares.retry_after import failure_message
from websim_crawler.spiders.args import (
    parse_count,
    parse_flag,
    parse_http_url,
    parse_queries,
    parse_query_template,
)
from websim_crawler.spiders.entrance import SearchEntrance
from websim_crawler.spiders.surfacing import Surfacing

logger = logging.getLogger(__name__)

_MAX_PAGES_LIMIT = 10_000
_MAX_QUERIES_LIMIT = 100_000
_AUTO = "auto"  # -a queries=auto: the crawl chooses its queries


class DeepWebSpider(SearchEntrance):
    """Submit each query to the site's search form; yield result pages and (follow=1) records."""

    name = "deepweb"
    seed_field = "query"  # a bare seed in Redis is a query
    # A deep-web crawl is bounded by max_pages per query (and one hop to the records), not by
    # link depth: the project's DEPTH_LIMIT (meant for the site spider) would cut pagination.
    custom_settings = {"DEPTH_LIMIT": 0}  # noqa: RUF012 (Scrapy reads this class attribute)

    def __init__(
        self,
        start_url: str | None = None,
        queries: str | None = None,
        queries_file: str | None = None,
        max_pages: str | None = None,
        follow: str = "0",
        query_template: str | None = None,
        max_queries: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if start_url is None and query_template is None:
            raise ConfigError(
                "deepweb: -a start_url=URL is required (the page with the search form), "
                "or -a query_template=https://site/search?q={query}"
            )
        self.start_url = parse_http_url(self.name, "start_url", start_url) if start_url else None
        self.query_template = (
            parse_query_template(self.name, query_template) if query_template else None
        )
        auto = queries is not None and queries.strip().lower() == _AUTO
        given = None if auto else queries
        self.queries = (
            parse_queries(self.name, given, queries_file)
            if given is not None or queries_file is not None
            else []
        )
        # Surfacing: no queries given, or queries=auto (a queries_file then seeds it); a Redis
        # worker surfaces with queries=auto only (given none, it takes seeds: see configure).
        self.asks_auto = auto
        self.surfaces = auto or (queries is None and queries_file is None)
        self.max_queries = (
            parse_count(self.name, "max_queries", max_queries, maximum=_MAX_QUERIES_LIMIT)
            if max_queries is not None
            else None
        )
        self.surfacing: Surfacing | None = None
        self.start_text = ""  # the start page's visible text: the first query terms
        self.max_pages_argument = (
            parse_count(self.name, "max_pages", max_pages, maximum=_MAX_PAGES_LIMIT)
            if max_pages is not None
            else None
        )
        self.max_pages = self.max_pages_argument or self.params.max_result_pages
        self.follow = parse_flag(self.name, "follow", follow)
        self.template_links: frozenset[str] = frozenset()
        self.search = (
            SearchTarget.of_template(self.query_template) if self.query_template else SearchTarget()
        )
        self.search_form: tuple[SearchForm, Any] | None = None  # the form and its selector
        self.form_defaults: dict[str, str] = {}  # fields every submission sends as they are
        self.result_lists = ResultListMemory()  # chrome and data-region places of result pages
        self.diagnosis = CrawlDiagnosis()
        own = [url for url in (self.start_url, self.query_template) if url]
        self.restrict_to_site(*own)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DeepWebSpider:
        """Build the spider; a surfacing crawl listens for idleness and analysed records."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.surfacing is not None:
            crawler.signals.connect(spider.keep_surfacing, signal=signals.spider_idle)
            crawler.signals.connect(spider.record_analysed, signal=signals.item_scraped)
        return spider

    def configure(self) -> None:
        """Take ``max_pages`` from ``WEBSIM_MAX_RESULT_PAGES`` unless ``-a max_pages`` was given."""
        self.max_pages = self.max_pages_argument or self.params.max_result_pages
        if self.seeded and not self.asks_auto:
            self.surfaces = False  # a worker: its queries come from 'websim seed deepweb'
        if self.surfaces:
            self.surfacing = Surfacing.of(
                self.surfacing_params,
                self.settings,
                max_queries=self.max_queries,
                max_pages=self.max_pages,
                given=self.queries,
                distributed=self.distributed if self.seeded else None,
                spider_name=self.name,
            )
        logger.info(
            "deepweb: %s, up to %d result pages each, records %s, rendering %s",
            "queries chosen by surfacing" if self.surfaces else f"{len(self.queries)} queries",
            self.max_pages,
            "followed" if self.follow else "not followed",
            "on" if self.render else "off",
        )

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """Fetch the start page (search form, site template), or go straight to the template.

        A surfacing crawl given only a template takes its first terms from the template's answer
        to an empty query (a listing on most sites; the site's home page may not exist).
        """
        if self.start_url is None and self.surfaces and self.query_template is not None:
            self.start_url = self.query_template.format(query="")
        if self.start_url is not None:
            # A worker, or a crawl resumed from JOBDIR, must read the form itself: fetch the page
            # on this worker, past the duplicate filter. Otherwise links back are not refetched.
            own_copy = self.seeded or bool(self.settings.get("JOBDIR"))
            yield scrapy.Request(
                self.start_url,
                callback=self.parse_start,
                errback=self.start_failed,
                meta=self.request_meta({WORKER_LOCAL: True} if own_copy else None, kind="start"),
                dont_filter=own_copy,
            )
        else:
            for request in self.template_requests(self.queries):
                yield request

    def parse_start(self, response: Response) -> Iterator[scrapy.Request]:
        """Find the search form on the start page and submit every query to it."""
        root = self.html_root(response)
        if root is None or not isinstance(response, HtmlResponse):
            raise CloseSpider("start_page_not_html")
        self.template_links = site_template_links(root, response.url)
        self.start_text = visible_text(root)
        if self.query_template is not None:
            yield from self.begin_queries("")
            return
        form = self.usable_search_form(root, response.url)
        if form is not None:
            yield from self.use_form(form, response, "the start page")
            return
        yield from self.look_for_entrance(root, response.url)

    def use_form(self, form: SearchForm, response: Response, where: str) -> Iterator[Any]:
        """Submit the queries (given or chosen) to the search form found on ``response``."""
        logger.info(
            "deepweb: search form #%d on %s: %s %s, query field %r",
            form.form_number,
            where,
            form.method,
            form.action,
            form.query_field,
        )
        self.count(f"websim/crawl/search_form/{form.method.lower()}")
        self.search = self.search.joined(
            SearchTarget.of_form(form.action, form.query_field, form.fixed_fields)
        )
        selector = response.xpath("//form")[form.form_number]
        self.search_form = (form, selector)
        inputs, fixed, blocking = search_form_inputs(selector.root, form.query_field)
        # A radio group sends its checked value as it is, an empty one too (form2request would
        # send "on"); a required typed input sends a value of its type.
        self.form_defaults = {one.name: one.default for one in inputs if one.kind == "radio"}
        self.form_defaults.update(fixed)
        if blocking is not None:
            self.count("websim/crawl/search_form/unfillable_input")
            logger.error(
                "deepweb: the search form on %s requires input %r, which the crawl cannot fill "
                "(a CAPTCHA or a login?): nothing can be searched",
                response.url,
                blocking,
            )
            raise CloseSpider("unfillable_input")
        yield from self.begin_queries(form_words(selector.root), (inputs, fixed, form.query_field))

    def begin_queries(
        self, form_text: str, form: tuple[list[FormInput], dict[str, str], str] | None = None
    ) -> Iterator[scrapy.Request]:
        """Submit the given queries, or start surfacing with the first it chooses."""
        if self.surfacing is None:
            yield from self.query_requests(self.queries)
            return
        self.surfacing.begin(self.start_text, form_text, form)
        yield from self.query_requests(self.surfacing.next_queries())

    def query_requests(self, queries: Iterable[str]) -> Iterator[scrapy.Request]:
        """Build the first result page request of each query, by template or by form."""
        if self.query_template is not None:
            yield from self.template_requests(queries)
        else:
            yield from self.form_requests(queries)

    def seed_requests(self, seed: Mapping[str, Any]) -> Iterator[scrapy.Request]:
        """Turn a query seeded in Redis (``{"query": ...}``) into its first result page request."""
        query = " ".join(str(seed.get("query") or "").split())
        if not query:
            raise InputFormatError(f"deepweb: a seed needs a non-empty query, got {dict(seed)}")
        yield from self.query_requests([query])

    def form_requests(self, queries: Iterable[str]) -> Iterator[scrapy.Request]:
        """Submit each query to the search form found on the start page."""
        assert self.search_form is not None, "the start page is parsed before any query"
        form, selector = self.search_form
        for query in queries:
            fields = self.surfacing.fields(query) if self.surfacing is not None else None
            data = {**self.form_defaults, **(fields or {form.query_field: query})}
            submission = form2request(selector, data)
            yield submission.to_scrapy(
                callback=self.parse_results,
                errback=self.results_failed,
                meta=self.request_meta(
                    {"websim_query": query, "websim_page": 1}, kind="results", keep_page=True
                ),
            )

    def template_requests(self, queries: Iterable[str]) -> Iterator[scrapy.Request]:
        """Build the first result page request of every query from ``query_template``."""
        assert self.query_template is not None
        for query in queries:
            url = self.query_template.format(query=quote_plus(query))
            yield self.results_request(url, query, 1)

    def results_request(self, url: str, query: str, page: int) -> scrapy.Request:
        """Build the request of a result page (rendered pages stay open for script "next")."""
        meta = {"websim_query": query, "websim_page": page}
        return scrapy.Request(
            url,
            callback=self.parse_results,
            errback=self.results_failed,
            meta=self.request_meta(meta, kind="results", keep_page=True),
        )

    async def parse_results(self, response: Response) -> AsyncIterator[Any]:
        """Yield a result page, its records (follow=1) and the way to the next result page.

        A "next" control that is a script is clicked in the rendered page (kept open for this),
        and the settled page is taken as the next result page, up to ``max_pages``; without
        rendering a ``__doPostBack`` control is followed by submitting its form.
        """
        page = response.meta.get("playwright_page")
        try:
            while True:
                found = None
                for output in self.result_page(response):
                    if isinstance(output, NextPage):
                        found = output
                    else:
                        yield output
                if found is None:
                    return
                if found.how in ("link", "parameter") or (found.how == "postback" and not page):
                    request = self.next_page_request(response, found)
                    if request is not None:
                        yield request
                    return
                if page is None:
                    self.count("websim/crawl/next_page/needs_render")
                    return
                clicked = await self.click_next(response, page, found)
                if clicked is None:
                    return
                response = clicked
        finally:
            if page is not None:
                await page.close()

    def result_page(self, response: Response) -> Iterator[Any]:
        """Yield a result page's item, its record requests, and the ``NextPage`` found last."""
        root = self.html_root(response)
        if root is None:
            return
        query = response.meta["websim_query"]
        page = response.meta["websim_page"]
        links = outgoing_links(root, response.url)
        yield self.page_item(response, root, kind="results", query=query, page=page, links=links)
        found = self.result_records(root, response.url, query)
        records = found.links
        self.result_lists.observe(found.other_shapes, found.regions)
        self.diagnosis.add_result_page(query, found)
        if found.truncated:
            self.count("websim/crawl/regions/truncated")
        if not records:
            self.count("websim/crawl/results_without_records")
        if self.follow:
            for url in records:
                yield self.page_request(
                    url,
                    self.parse_record,
                    kind="record",
                    meta={"websim_query": query, "websim_page": page, "websim_record_link": url},
                )
        way = next_page(
            root, response.url, page, results_on_page=len(records), record_links=records
        )
        last = page >= self.max_pages  # the way on, if any, is not followed
        if self.surfacing is not None:
            # Surfacing is told an answer was cut at max_pages (not the site's cap) by the way
            # on that its last page read shows.
            goes_on = way is not None and (way.shown or not last)
            further = self.surfacing.result_page(query, root, response.url, found, has_next=goes_on)
            if not further or last:
                self.surfacing.finished(query)
                yield from self.query_requests(self.surfacing.next_queries())
                return
        if way is not None and not last:
            yield way

    def result_records(self, root: HtmlTree, url: str, query: str | None) -> ResultRecords:
        """Return the records of a parsed result page (what the crawl learnt is only read)."""
        return find_records(
            root,
            url,
            template_links=self.template_links,
            search=self.search,
            memory=self.result_lists,
            query=query,
        )

    def records_found(self, root: HtmlTree, response: Response, kind: str) -> int:
        """``render=auto``: a result page's records; 1 for a start page with a search form."""
        if kind == "results":
            query = response.meta.get("websim_query")
            return len(self.result_records(root, response.url, query).links)
        if kind == "start" and self.query_template is None:
            return int(find_search_form(root, response.url) is not None)
        return 0

    def next_page_request(self, response: Response, found: NextPage) -> scrapy.Request | None:
        """Request the next result page: its URL, or the postback form submitted (``None``,
        counted, when the form's action is not http(s))."""
        query, page = response.meta["websim_query"], response.meta["websim_page"] + 1
        self.count(f"websim/crawl/next_page/{found.how}")
        if found.url is not None:
            return self.results_request(found.url, query, page)
        form = response.xpath("//form")[found.form_number]
        fields = {"__EVENTTARGET": found.event_target, "__EVENTARGUMENT": found.event_argument}
        submission = form2request(form, fields, click=False)
        if not is_http_url(submission.url):  # action="javascript:...": nothing to request
            self.count("websim/crawl/next_page/skipped/not_http")
            logger.warning(
                "deepweb: postback form on %s skipped: its action is not http(s)", response.url
            )
            return None
        return submission.to_scrapy(
            callback=self.parse_results,
            errback=self.results_failed,
            meta=self.request_meta(
                {"websim_query": query, "websim_page": page}, kind="results", keep_page=True
            ),
        )

    async def click_next(
        self, response: Response, page: Any, found: NextPage
    ) -> HtmlResponse | None:
        """Click a script "next" control in the rendered page; return the settled next page."""
        assert found.control is not None
        rendering = rendering_of(self.name)
        try:
            rendered = await rendering.click_next(
                page, found.control, screenshot=self.render_params.screenshot
            )
        except Exception as exc:  # Playwright's errors and our refusals alike
            stat = getattr(exc, "stat", None) or "websim/crawl/next_page/click_failed"
            self.count(stat)
            logger.warning("deepweb: cannot click next on %s: %s", response.url, exc)
            return None
        self.count(f"websim/crawl/next_page/click/{found.how}")
        meta = {
            "websim_query": response.meta["websim_query"],
            "websim_page": response.meta["websim_page"] + 1,
            SCREENSHOT_META: rendered.screenshot,
            PARTIAL_META: rendered.partial,
        }
        return HtmlResponse(
            rendered.url,
            body=rendered.html.encode("utf-8"),
            encoding="utf-8",
            request=Request(rendered.url, meta=meta),
        )

    def results_failed(self, failure: Failure) -> Iterator[scrapy.Request]:
        """Errback of a result page: count it; a surfacing crawl goes on with other queries."""
        self.count_failure(failure)
        request = getattr(failure, "request", None)
        if self.surfacing is None or request is None or "websim_query" not in request.meta:
            return
        query = request.meta["websim_query"]
        self.surfacing.failed(query)
        self.surfacing.finished(query)
        yield from self.query_requests(self.surfacing.next_queries())

    def keep_surfacing(self) -> None:
        """``spider_idle``: queries whose answers ended without saying so (a next page that
        could not be requested, a request lost to a kill) are complete; ask the next ones."""
        if self.surfacing is None or self.surfacing.planner is None:
            return
        self.surfacing.finish_dangling()
        requests = list(self.query_requests(self.surfacing.next_queries()))
        for request in requests:
            self.crawler.engine.crawl(request)
        if requests:
            raise DontCloseSpider

    def record_analysed(self, item: Any, response: Response, spider: scrapy.Spider) -> None:
        """``item_scraped``: an analysed record page's keywords become its record's terms."""
        if spider is not self or self.surfacing is None or response is None:
            return
        if item.get("kind") != "record" or not item.get("query"):
            return
        link = response.meta.get("websim_record_link") or response.url
        self.surfacing.record_page(link, item["query"], item.get("keywords"))

    def parse_record(self, response: Response) -> Iterator[Any]:
        """Yield a record page reached from a result page (its links are not followed)."""
        item = self.unparsed_page_item(
            response,
            kind="record",
            query=response.meta["websim_query"],
            page=response.meta["websim_page"],
        )
        if item is not None:
            yield item

    def closed(self, reason: str) -> None:
        """Log the crawl's diagnosis and count it: one warning line when the records look wrong."""
        if self.surfacing is not None:
            self.surfacing.close(self.crawler.stats)
        if self.result_lists.dropped or self.diagnosis.dropped:
            self.count("websim/diagnosis/bound_hit")
        diagnosis = self.diagnosis.finish(self.result_lists.chrome_shapes())
        if not diagnosis.result_pages:
            return
        assert self.crawler.stats is not None
        for key, value in diagnosis.stats().items():
            self.crawler.stats.set_value(key, value)
        logger.info("deepweb diagnosis: %s", diagnosis.summary())
        warning = diagnosis.warning() or diagnosis.failure()
        if warning is not None:
            logger.warning("deepweb: %s", warning)

    def start_failed(self, failure: Failure) -> None:
        """Errback of the start page: nothing can be searched without it."""
        self.count_failure(failure)
        logger.error(
            "deepweb: cannot fetch start_url %s: %s", self.start_url, failure_message(failure)
        )
        # Raising CloseSpider in an errback makes Scrapy log the download error's traceback.
        deferred_from_coro(self.crawler.engine.close_spider_async(reason="start_page_failed"))
