"""One browser session: launch and context options, the confining proxy, the memory watchdog,
the page guards and the rendering steps, shared by the crawl (through scrapy-playwright) and by
``websim compare --render`` (plain Playwright, :func:`render_documents`).

Pages are opened through :meth:`Rendering.open_page`, one at a time: that is where the restart
every ``WEBSIM_RENDER_RESTART_EVERY`` pages happens (no new page is opened while the open ones
finish, then the browser is closed; whoever opens the next page launches a new one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import subprocess
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websim_crawler._imports import require
from websim_crawler.browser.confine import Confinement, ConfiningProxy, Resolver, system_resolver
from websim_crawler.browser.page import (
    PageGuard,
    RenderedPage,
    capture,
    click_control,
    settle_and_scroll,
)
from websim_crawler.browser.pressure import PageAdmission
from websim_crawler.browser.watchdog import MemoryWatchdog
from websim_crawler.config.render import RenderParams
from websim_crawler.errors import BrowserMissingError, InputFormatError, WebsimError

logger = logging.getLogger(__name__)

CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-first-run",
    "--mute-audio",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=AutofillServerCommunication,OptimizationHints,MediaRouter",
    "--disable-quic",  # QUIC is UDP: it would not go through the proxy
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--proxy-bypass-list=<-loopback>",  # loopback goes through the proxy too
)
CONTEXT_OPTIONS: dict[str, Any] = {
    "accept_downloads": False,
    "permissions": [],
    "service_workers": "block",
    "viewport": {"width": 1280, "height": 800},
}
# Context options that confine a page (its own proxy would bypass the confining one): a caller's
# ``context_options`` may not set them.
_CONFINING_CONTEXT_OPTIONS = frozenset(
    {"accept_downloads", "permissions", "service_workers", "proxy"}
)
_MAINTENANCE_SECONDS = 0.1
_DRAIN_POLL_SECONDS = 0.05


def check_chromium(path: str) -> None:
    """Make sure the Chromium at ``path`` runs; raise ``BrowserMissingError`` naming the fix."""
    fix = (
        "install it (Debian: apt-get install chromium) or point WEBSIM_CHROMIUM_PATH at a "
        "Chromium executable (-s WEBSIM_CHROMIUM_PATH=/path/to/chromium)"
    )
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise BrowserMissingError(f"rendering needs Chromium, but {path!r} is not there: {fix}")
    try:
        subprocess.run(
            [path, "--version"],
            capture_output=True,
            timeout=60,
            check=True,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise BrowserMissingError(
            f"rendering needs Chromium, but {path!r} fails to run: {fix}"
        ) from exc


class Rendering:
    """The confinement, bounds and counters of one crawl's (or one command's) browser."""

    def __init__(
        self,
        params: RenderParams,
        *,
        max_response_bytes: int,
        count: Callable[[str], None],
        sites: Iterable[str] = (),
        resolver: Resolver = system_resolver,
    ) -> None:
        self.params = params
        self.max_response_bytes = max_response_bytes  # DOWNLOAD_MAXSIZE: each response
        self.count = count
        self.confinement = Confinement(sites, resolver, other_hosts=params.other_hosts)
        self.proxy = ConfiningProxy(
            self.confinement,
            lambda reason: count(f"websim/render/blocked/{reason}"),
            lambda destination: count(f"websim/render/allowed/{destination}"),
        )
        self.admission = PageAdmission(params.max_pages_open)
        self.watchdog = MemoryWatchdog(
            params.max_memory_mb << 20,
            count,
            page_limit_bytes=params.max_page_memory_mb << 20,
            on_shared_kill=self.admission.pressure,
        )
        self.guards: weakref.WeakKeyDictionary[Any, PageGuard] = weakref.WeakKeyDictionary()
        self.guarded_contexts: weakref.WeakSet[Any] = weakref.WeakSet()
        self.pages: weakref.WeakSet[Any] = weakref.WeakSet()  # opened by open_page
        self.page_gate = asyncio.Lock()
        self.proxy_url = ""
        self.pages_since_launch = 0
        # Closers of the running browsers (scrapy-playwright runs one per scheme it serves).
        self.closers: list[Callable[[], Awaitable[None]]] = []
        self.maintenance: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the confining proxy (before the browser is launched)."""
        if not self.proxy_url:
            self.proxy_url = await self.proxy.start()

    def launch_options(self) -> dict[str, Any]:
        """Return Playwright's ``launch`` options: headless, confined to the proxy."""
        assert self.proxy_url, "start() comes first"
        args = [*CHROMIUM_ARGS, f"--proxy-server={self.proxy_url}"]
        args += shlex.split(self.params.chromium_args)
        return {"executable_path": self.params.chromium_path, "headless": True, "args": args}

    def watch(self, close: Callable[[], Awaitable[None]]) -> None:
        """Watch a newly launched browser's memory and page count; ``close`` closes it."""
        self.closers.append(close)
        self.pages_since_launch = 0
        if self.maintenance is None or self.maintenance.done():
            self.maintenance = asyncio.get_running_loop().create_task(self._maintain())

    async def open_page(
        self, new_page: Callable[[], Awaitable[Any]], *, alone: bool = False
    ) -> Any:
        """Open a page with ``new_page``, first restarting the browser when that is due.

        A page opens once the browser's admission lets it (``PageAdmission``: fewer pages at
        once after memory pressure; a page ``alone`` with no other open). Pages are opened one
        at a time, so a restart never closes a page being created. When
        ``WEBSIM_RENDER_RESTART_EVERY`` pages have been opened, no new page is opened until the
        open ones have closed (at most ``WEBSIM_RENDER_TIMEOUT`` seconds; then they are closed
        with the browser), then the browser is closed; ``new_page`` launches the next one.
        """
        await self.admission.enter(alone)
        try:
            async with self.page_gate:
                if self._restart_due():
                    await self._drain(self.params.timeout)
                    self.count("websim/render/browser_restarts/every")
                    logger.info("rendering: restarting Chromium (WEBSIM_RENDER_RESTART_EVERY)")
                    await self.close_browsers()
                page = await new_page()
        except BaseException:
            await self.admission.leave(alone)
            raise
        self.pages.add(page)
        self.pages_since_launch += 1
        loop = asyncio.get_running_loop()
        page.once("close", lambda _page: loop.create_task(self.admission.leave(alone)))
        return page

    async def close(self) -> None:
        """Stop the watchdog and the proxy."""
        if self.maintenance is not None:
            self.maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.maintenance
        await self.proxy.close()

    async def guard(self, page: Any, meta: MutableMapping[str, Any] | None = None) -> PageGuard:
        """Install a guard on a new page (before it loads anything) and return it."""
        context = page.context
        if context not in self.guarded_contexts:
            # Pages without a guard (popups, new tabs) get no request through at all.
            await context.route("**", lambda route: route.abort())
            self.guarded_contexts.add(context)
        guard = PageGuard(
            page,
            self.confinement,
            max_response_bytes=self.max_response_bytes,
            max_page_bytes=self.params.max_page_bytes,
            count=self.count,
            memory_kills=lambda: self.watchdog.kills,
            shared_kills=lambda: self.watchdog.kills_by_kind["shared"],
            meta=meta,
        )
        await guard.install()
        self.guards[page] = guard
        return guard

    def guard_of(self, page: Any) -> PageGuard:
        """Return the guard of a page; a page without one is refused (fail closed)."""
        guard = self.guards.get(page)
        if guard is None:
            raise WebsimError("a rendered page has no guard (its set-up failed); not taken")
        return guard

    async def render(self, page: Any, *, screenshot: bool) -> bytes | None:
        """Settle (and scroll) a loaded page, record its layout; return the screenshot."""
        guard = self.guard_of(page)
        await settle_and_scroll(page, guard, self.params, self.count)
        return await capture(page, guard, self.params, self.count, screenshot=screenshot)

    async def click_next(self, page: Any, xpath: str, *, screenshot: bool) -> RenderedPage:
        """Click a script "next" control in the page and take the settled result page."""
        guard = self.guard_of(page)
        await click_control(page, xpath, self.params)
        shot = await self.render(page, screenshot=screenshot)
        guard.raise_if_refused()
        return RenderedPage(page.url, await page.content(), shot, partial=guard.partial)

    async def _maintain(self) -> None:
        """Run the memory watchdog every 0.1 s until cancelled; a failed check is counted."""
        while True:
            try:
                if self.closers:
                    await self.watchdog.check(self.close_browsers)
            except Exception:  # the watchdog must outlive any one failed check
                self.count("websim/render/watchdog_errors")
                logger.exception("rendering: memory watchdog check failed")
            await asyncio.sleep(_MAINTENANCE_SECONDS)

    async def close_browsers(self) -> None:
        """Close the running browsers; the next page opened launches a new one."""
        closers, self.closers = self.closers, []
        self.pages_since_launch = 0
        for close in closers:
            with contextlib.suppress(Exception):  # already closed or crashed
                await close()

    def _restart_due(self) -> bool:
        every = self.params.restart_every
        return bool(every) and self.pages_since_launch >= every

    async def _drain(self, seconds: float) -> None:
        """Wait until every page opened by ``open_page`` has closed, at most ``seconds``."""
        deadline = asyncio.get_running_loop().time() + seconds
        while any(not page.is_closed() for page in list(self.pages)):
            if asyncio.get_running_loop().time() >= deadline:
                logger.warning("rendering: pages still open at a browser restart; closing them")
                return
            await asyncio.sleep(_DRAIN_POLL_SECONDS)


@dataclass(frozen=True)
class PageToRender:
    """A page to render for a command: an http(s) URL, or the bytes of a saved file."""

    location: str
    body: bytes | None = None


SAVED_FILE_ORIGIN = "http://saved-page.websim.invalid"


async def render_documents(
    documents: list[PageToRender],
    params: RenderParams,
    *,
    max_response_bytes: int,
    context_options: Mapping[str, Any] | None = None,
    resolver: Resolver = system_resolver,
) -> tuple[list[RenderedPage], Counter[str]]:
    """Render each document in its own guarded page; return the pages and the counters.

    A saved file is never loaded from a ``file:`` URL: its bytes are served by a route on a
    synthetic origin (``SAVED_FILE_ORIGIN``), so it can reach no file and only public hosts.
    ``context_options`` are laid over ``CONTEXT_OPTIONS`` (another viewport, scripts off; those
    that confine a page, such as downloads, service workers or a proxy, raise ``ValueError``);
    ``resolver`` resolves hosts for the confining proxy (one that knows only loopback keeps a
    render offline: every other host is refused as ``unresolved``).
    """
    check_chromium(params.chromium_path)
    async_api = require("playwright.async_api")
    counters: Counter[str] = Counter()
    rendering = Rendering(
        params,
        max_response_bytes=max_response_bytes,
        count=_counter(counters),
        sites=[d.location for d in documents if d.body is None] + [SAVED_FILE_ORIGIN],
        resolver=resolver,
    )
    await rendering.start()
    rendered: list[RenderedPage] = []
    async with async_api.async_playwright() as playwright:
        browser = CommandBrowser(playwright.chromium, rendering, context_options)
        try:
            for number, document in enumerate(documents):
                limit = params.timeout + params.settle_max + 4 * params.script_timeout
                page_task = _render_document(rendering, browser.new_page, document, number)
                try:
                    rendered.append(await asyncio.wait_for(page_task, limit))
                except (async_api.Error, WebsimError, TimeoutError) as exc:
                    raise InputFormatError(f"cannot render {document.location}: {exc}") from exc
        finally:
            await rendering.close()
            await browser.close()
    return rendered, counters


class CommandBrowser:
    """A command's browser: launched when a page is wanted and none is running (at first and
    after a restart), with one context of ``CONTEXT_OPTIONS`` (``context_options`` over them)."""

    def __init__(
        self,
        browser_type: Any,
        rendering: Rendering,
        context_options: Mapping[str, Any] | None = None,
    ) -> None:
        loosening = sorted(_CONFINING_CONTEXT_OPTIONS.intersection(context_options or {}))
        if loosening:
            raise ValueError(f"context options that confine the page cannot be set: {loosening}")
        self.browser_type = browser_type
        self.rendering = rendering
        self.context_options = {**CONTEXT_OPTIONS, **(context_options or {})}
        self.browser: Any = None
        self.context: Any = None

    async def new_page(self) -> Any:
        """Return a new page of the running browser (launched now when there is none)."""
        if self.browser is None or not self.browser.is_connected():
            self.browser = await self.browser_type.launch(**self.rendering.launch_options())
            self.rendering.watch(self.browser.close)
            self.context = await self.browser.new_context(**self.context_options)
        return await self.context.new_page()

    async def close(self) -> None:
        """Close the running browser, if any."""
        if self.browser is not None:
            with contextlib.suppress(Exception):
                await self.browser.close()


def _counter(counters: Counter[str]) -> Callable[[str], None]:
    def count(key: str) -> None:
        counters[key] += 1

    return count


async def _render_document(
    rendering: Rendering,
    new_page: Callable[[], Awaitable[Any]],
    document: PageToRender,
    number: int,
) -> RenderedPage:
    page = await rendering.open_page(new_page)
    try:
        if document.body is None:
            url = document.location
            await page.route("**", lambda route: route.continue_())
        else:
            url = f"{SAVED_FILE_ORIGIN}/{number}/{Path(document.location).name or 'page.html'}"
            await page.route("**", _serve_saved_file(url, document.body))
        guard = await rendering.guard(page)
        await page.goto(url, wait_until="load", timeout=rendering.params.timeout * 1000)
        guard.raise_if_refused()
        shot = await rendering.render(page, screenshot=True)
        return RenderedPage(page.url, await page.content(), shot, partial=guard.partial)
    finally:
        with contextlib.suppress(Exception):
            await page.close()


def _serve_saved_file(url: str, body: bytes) -> Callable[[Any], Awaitable[None]]:
    """Route handler: the saved file at ``url``, 404 for the rest of the synthetic origin."""

    async def serve(route: Any) -> None:
        requested = str(route.request.url)
        if requested == url:
            await route.fulfill(status=200, body=body, content_type="text/html")
        elif requested.startswith(SAVED_FILE_ORIGIN + "/"):
            await route.fulfill(status=404, body=b"", content_type="text/plain")
        else:
            await route.continue_()

    return serve
