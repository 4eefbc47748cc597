"""Rendering in the crawl: scrapy-playwright driven by the browser module.

With ``render=1`` every page request goes through Chromium. The browser is launched by a
scrapy-playwright browser provider with :class:`~websim_crawler.browser.session.Rendering`'s
options (every request through the confining proxy), each page gets its guard before it loads
(``playwright_page_init_callback``), and one page method settles the page, records its layout
boxes and takes the bounded screenshot before scrapy-playwright reads the HTML.

:func:`download_handler` adapts scrapy-playwright's download handler in two places (private
methods of scrapy-playwright 0.0.48, pinned by ``tests/adapters/browser/test_rendering.py``): new
pages are opened through ``Rendering.open_page`` (so a restart never closes a page being
created), and a download that the loaded page starts (refused by the page guard) does not fail
the page.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Request, Response

from websim_crawler._imports import require
from websim_crawler.browser.pressure import ALONE_META
from websim_crawler.browser.session import CONTEXT_OPTIONS, Rendering, check_chromium
from websim_crawler.config.render import RenderParams

logger = logging.getLogger(__name__)

_RENDERINGS: dict[str, Rendering] = {}  # by spider name, until it closes: the page callbacks
RENDERING_META = "websim_rendering"
SCREENSHOT_META = "websim_screenshot"  # a page reached by a click carries its screenshot here
_NO_SIZE_LIMIT = 1 << 40
RENDER_PRESSURE_RETRY = "websim_crawler.middlewares.render_pressure.RenderPressureRetry"


def enable_rendering(crawler: Crawler, spider_name: str, params: RenderParams) -> Rendering:
    """Route downloads through scrapy-playwright with the browser module (spider priority)."""
    require("scrapy_playwright")
    check_chromium(params.chromium_path)
    settings = crawler.settings

    def count(key: str) -> None:
        if crawler.stats is not None:
            crawler.stats.inc_value(key)

    # DOWNLOAD_MAXSIZE bounds each response, as Scrapy means it; the page's total has its own
    # budget (WEBSIM_RENDER_MAX_PAGE_BYTES).
    rendering = Rendering(
        params,
        max_response_bytes=settings.getint("DOWNLOAD_MAXSIZE") or _NO_SIZE_LIMIT,
        count=count,
    )
    _RENDERINGS[spider_name] = rendering

    def forget(**_: Any) -> None:
        # The spider's pages are done: the process keeps no rendering of a closed crawl (the
        # browser provider closes its browser through its own reference).
        if _RENDERINGS.get(spider_name) is rendering:
            del _RENDERINGS[spider_name]

    crawler.signals.connect(forget, signal=signals.spider_closed, weak=False)
    handler = download_handler()
    settings.set("DOWNLOAD_HANDLERS", {"http": handler, "https": handler}, priority="spider")
    settings.set("PLAYWRIGHT_BROWSER_TYPE", "chromium", priority="spider")
    settings.set("PLAYWRIGHT_BROWSER_PROVIDER", _provider_for(rendering), priority="spider")
    settings.set("PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT", params.timeout * 1000, priority="spider")
    # No startup context: each scheme's handler (Scrapy makes one for http, one for https)
    # launches its browser at its first page, not at start-up (an idle second browser).
    settings.set("PLAYWRIGHT_CONTEXTS", {}, priority="spider")
    settings.set("PLAYWRIGHT_MAX_CONTEXTS", 1, priority="spider")
    settings.set("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT", params.max_pages_open, priority="spider")
    # Downloads are refused: a navigation that turns into one fails at once, not after 30 s.
    settings.set("PLAYWRIGHT_DOWNLOAD_TIMEOUT", 1000, priority="spider")
    # A page killed for the browser's shared memory cap is deferred and tried again.
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    middlewares[RENDER_PRESSURE_RETRY] = 545
    settings.set("DOWNLOADER_MIDDLEWARES", middlewares, priority="spider")
    logger.info(
        "rendering with %s (screenshots: %s, settle %.2f s quiet / %.0f s max / %.0f s max while "
        "growing, page budget %d MiB, memory cap %d MiB)",
        params.chromium_path,
        params.screenshot,
        params.settle_quiet,
        params.settle_max,
        params.settle_growing_max,
        params.max_page_bytes >> 20,
        params.max_memory_mb,
    )
    return rendering


_DROPPED_BROWSER_WAIT_SECONDS = 10.0


def download_handler() -> type:
    """Return scrapy-playwright's download handler adapted to the browser module (see above)."""
    base: Any = require("scrapy_playwright.handler").ScrapyPlaywrightDownloadHandler

    class WebsimPlaywrightHandler(base):
        async def _create_page(self, request: Request, spider: Any) -> Any:
            name = request.meta.get(RENDERING_META)
            if name not in _RENDERINGS:
                return await super()._create_page(request, spider)
            create_page = super()._create_page

            async def new_page() -> Any:
                await self._forget_closed_browser()
                return await create_page(request, spider)

            alone = bool(request.meta.get(ALONE_META))
            return await _RENDERINGS[name].open_page(new_page, alone=alone)

        async def _forget_closed_browser(self) -> None:
            """Wait until the handler has dropped a browser closed by a restart (its
            ``disconnected`` callback runs as a task of its own), so a new one is launched."""
            loop = asyncio.get_running_loop()
            deadline = loop.time() + _DROPPED_BROWSER_WAIT_SECONDS
            while hasattr(self, "browser") and not self.browser.is_connected():
                if loop.time() >= deadline:
                    return
                await asyncio.sleep(0.01)

        async def _get_response_and_download(
            self, request: Request, page: Any, spider: Any
        ) -> tuple[Any, Any]:
            response, download = await super()._get_response_and_download(request, page, spider)
            if response is not None and download is not None:
                # The navigation loaded a page; the download is one its scripts started (and
                # the guard refused): the page stands.
                return response, None
            return response, download

    return WebsimPlaywrightHandler


def _provider_for(rendering: Rendering) -> type:
    """Return a scrapy-playwright browser provider that launches ``rendering``'s browser."""
    base: Any = require("scrapy_playwright.provider").PlaywrightBrowserProvider

    class WebsimBrowserProvider(base):
        async def start(self) -> None:
            await super().start()
            await rendering.start()

        async def launch_browser(self) -> Any:
            browser = await self.browser_type.launch(**rendering.launch_options())
            rendering.watch(browser.close)
            return browser

        async def close(self) -> None:
            await rendering.close()
            await super().close()

    return WebsimBrowserProvider


def render_meta(spider_name: str, params: RenderParams, *, keep_page: bool) -> dict[str, Any]:
    """Return the request meta that renders, guards and settles a page (and may keep it open)."""
    page_methods = require("scrapy_playwright.page")
    render_step = page_methods.PageMethod(render_page, spider_name, params.screenshot)
    return {
        "playwright": True,
        "playwright_context": "default",
        "playwright_context_kwargs": dict(CONTEXT_OPTIONS),
        "playwright_include_page": keep_page,
        "playwright_page_init_callback": guard_page,
        "playwright_page_methods": [render_step],
        RENDERING_META: spider_name,
    }


def rendering_of(spider_name: str) -> Rendering:
    """Return the rendering of a running spider."""
    return _RENDERINGS[spider_name]


async def guard_page(page: Any, request: Request) -> None:
    """Page init callback: count the request's site as the crawl's own, guard the page."""
    rendering = _RENDERINGS[request.meta[RENDERING_META]]
    rendering.confinement.add_site(request.url)
    await rendering.guard(page, request.meta)


async def render_page(page: Any, spider_name: str, screenshot: bool) -> bytes | None:
    """Page method: settle, scroll, record the layout; return the clipped screenshot."""
    return await _RENDERINGS[spider_name].render(page, screenshot=screenshot)


def close_kept_page(request: Request | None) -> None:
    """Close a page kept open for a callback (``playwright_include_page``) that failed."""
    page = request.meta.get("playwright_page") if request is not None else None
    if page is not None:
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(_close(page))


async def _close(page: Any) -> None:
    with contextlib.suppress(Exception):
        await page.close()


def rendered_screenshot(response: Response) -> str | None:
    """Return the base64 PNG a rendered response's screenshot method took, if any."""
    shot = response.meta.get(SCREENSHOT_META)
    for method in response.meta.get("playwright_page_methods") or ():
        if getattr(method, "method", None) is render_page and isinstance(method.result, bytes):
            shot = method.result
    return base64.b64encode(shot).decode("ascii") if isinstance(shot, bytes) else None
