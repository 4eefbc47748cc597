"""``render=auto``: a downloader middleware that renders only the kinds of pages that need it.

The websim spiders mark each request with the kind of page it asks for (start, results, record,
page) and leave rendering to this middleware; :class:`~websim_crawler.core.crawling.
render_choice.RenderChoices` says per kind and URL shape whether to render. A sampled page is
fetched plain first and measured; then the same URL is downloaded rendered, and the callback
gets the rendered response when rendering added to the page, else the plain one (the browser
page closed). Other pages of a group being sampled wait for its samples' answer. A page of a
"plain" group that falls short of its group's samples is fetched again rendered the same way.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from websim_crawler.browser.playwright_wiring import close_kept_page, render_meta
from websim_crawler.core.crawling.render_choice import PageYield, RenderChoices
from websim_crawler.frontier.release import LEASE

logger = logging.getLogger(__name__)

PAGE_KIND_META = "websim_page_kind"  # set by the spiders on every page request in render=auto
KEEP_PAGE_META = "websim_keep_page"  # the callback wants the rendered page kept open
_PLAN_META = "websim_render_plan"


class AdaptiveRendering:
    """Render a request only when its group of pages needs it (``render=auto``)."""

    def __init__(self, crawler: Crawler, choices: RenderChoices, wait_limit: float) -> None:
        self.crawler = crawler
        self.choices = choices
        self.wait_limit = wait_limit
        self._answers: dict[tuple[str, str], asyncio.Event] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AdaptiveRendering:
        """Build the middleware with the spider's render settings."""
        from websim_crawler.config import websim_config

        params = websim_config(crawler).render
        wait_limit = params.timeout + params.settle_max  # what one sample may take
        middleware = cls(crawler, RenderChoices(samples=params.auto_samples), wait_limit)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    async def process_request(self, request: Request) -> None:
        """Render the request, or not, as its group's plan says (meta set in place).

        While the group's samples are in flight the request waits for their answer (at most
        as long as a rendered page may take; then it is rendered).
        """
        kind = request.meta.get(PAGE_KIND_META)
        if kind is None or _PLAN_META in request.meta:
            return
        group = self.choices.group_of(kind, request.url)
        plan = self.choices.plan(group)
        while plan == "wait":
            answered = self._answers.setdefault(group, asyncio.Event())
            try:
                await asyncio.wait_for(answered.wait(), self.wait_limit)
            except TimeoutError:
                self._count("websim/render/auto/wait_timeout")
                plan = "render"
                break
            plan = self.choices.plan(group)
        request.meta[_PLAN_META] = plan
        self._count(f"websim/render/auto/{plan}")
        if plan == "render":
            request.meta.update(self._render_meta(request))

    async def process_response(self, request: Request, response: Response) -> Response:
        """Measure a plain sample and fetch it again rendered; return the better of the two.

        The rendered copy is downloaded here (through the downloader, not the scheduler), so the
        page's lease stays with the original request until its callback is done: a kill in
        between loses nothing.
        """
        kind = request.meta.get(PAGE_KIND_META)
        plan = request.meta.get(_PLAN_META)
        if kind is None or plan in (None, "render"):
            return response
        group = self.choices.group_of(kind, request.url)
        spider: Any = self.crawler.spider
        if response.request is None:  # as the engine ties it after the downloader: the spider
            response.request = request  # reads the page's query from its meta
        measured = spider.page_yield(response, kind)
        if plan == "plain":
            if not self.choices.needs_recheck(group, measured):
                return response
            self._count("websim/render/auto/recheck")
        if measured is None:  # not an HTML page: nothing to compare
            if plan == "sample":
                self._give_back(group)
            return response
        if plan == "sample" and self.choices.answered_plain(group, measured):
            self._wake(group)
            return response
        meta = {key: value for key, value in request.meta.items() if key != LEASE}
        meta.update(self._render_meta(request))
        meta[_PLAN_META] = "render"
        try:
            rendered = await self.crawler.engine.download_async(
                request.replace(dont_filter=True, meta=meta)
            )
        except Exception as exc:  # the browser failed: the plain page stands
            if plan == "sample":
                self._give_back(group)
            self._count("websim/render/auto/render_failed")
            logger.warning("render=auto: cannot render %s: %s", request.url, exc)
            return response
        return self._pick(group, response, measured, rendered, was_plain=plan == "plain")

    def _pick(
        self,
        group: tuple[str, str],
        plain: Response,
        plain_yield: PageYield,
        rendered: Response,
        *,
        was_plain: bool,
    ) -> Response:
        spider: Any = self.crawler.spider
        rendered_yield = spider.page_yield(rendered, group[0])
        adds = self.choices.sampled(group, plain_yield, rendered_yield or PageYield(0, 0, 0))
        self._wake(group)
        self._count_decisions()
        if adds and was_plain:
            self._count("websim/render/auto/switched")
            logger.info("render=auto: %s pages %s are rendered from now on", *group)
        self._count(f"websim/render/auto/kept/{'rendered' if adds else 'plain'}")
        if adds:
            return rendered
        close_kept_page(rendered.request)
        return plain

    def _give_back(self, group: tuple[str, str]) -> None:
        self.choices.unanswered(group)
        self._wake(group)

    def _wake(self, group: tuple[str, str]) -> None:
        """Let the requests waiting for ``group``'s samples ask again."""
        answered = self._answers.pop(group, None)
        if answered is not None:
            answered.set()

    def _render_meta(self, request: Request) -> dict[str, Any]:
        spider: Any = self.crawler.spider
        keep_page = bool(request.meta.get(KEEP_PAGE_META))
        return render_meta(spider.name, spider.render_params, keep_page=keep_page)

    def _count(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)

    def _count_decisions(self) -> None:
        if self.crawler.stats is not None:
            for decision, groups in self.choices.decisions().items():
                self.crawler.stats.set_value(f"websim/render/auto/groups/{decision}", groups)

    def spider_closed(self) -> None:
        """Log the decisions: groups of pages rendered, plain, still sampled."""
        logger.info("render=auto: groups of pages %s", self.choices.decisions())
