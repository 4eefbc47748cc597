"""One rendered page: its guard (routes, popups, downloads, bytes), settle wait and capture.

The guard is installed before the page loads anything. The settle wait ends when the DOM has not
changed (a ``MutationObserver`` installed at document start), no timer due within 5 s is pending
(``setTimeout``, watched from document start) and no request of the page has been pending for
``WEBSIM_RENDER_SETTLE_QUIET`` seconds, or after ``WEBSIM_RENDER_SETTLE_MAX`` unless the page
is still growing (elements added in the last ``GROWTH_WINDOW_SECONDS``, such as search results added
one by one): then it waits on, up to ``WEBSIM_RENDER_SETTLE_GROWING_MAX``, and a page still growing
then is taken as it is and marked partial. Each response is held to ``DOWNLOAD_MAXSIZE`` (as Scrapy
holds one download) and the page's total, document and subresources, to
``WEBSIM_RENDER_MAX_PAGE_BYTES``; the memory watchdog guards the rest. The capture writes each
displayed element's layout box into ``data-websim-box="x,y,w,h"`` (page coordinates, CSS pixels;
at most ``WEBSIM_RENDER_MAX_BOXES`` elements) and the page size into ``data-websim-page="W,H"`` on
``<html>``, then takes a screenshot clipped to the maximum size.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from websim_crawler.browser.confine import Confinement
from websim_crawler.browser.pressure import ALONE_META
from websim_crawler.config.render import RenderParams
from websim_crawler.errors import WebsimError

logger = logging.getLogger(__name__)

REFUSED_META = "websim_render_refused"  # request meta: the stat of a page the guard refused
# Request meta: True when the page was still growing at WEBSIM_RENDER_SETTLE_GROWING_MAX.
PARTIAL_META = "websim_render_partial"
GROWTH_WINDOW_SECONDS = 5.0  # a page that added elements this recently is still growing
_WEB_SCHEMES = ("http://", "https://", "data:", "blob:")

# Runs in every frame before the page's own scripts: records the time of the last DOM change
# and takes away the ways out that the proxy cannot see or that would open other pages.
INIT_SCRIPT = """(() => {
  const stamp = () => { window.__websimLastChange = performance.now(); };
  stamp();
  new MutationObserver(stamp).observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true,
  });
  // Timers due within 5 s are work still to come (a fetch started after a delay).
  const pending = new Set();
  window.__websimPendingTimers = () => pending.size;
  const setTimer = window.setTimeout.bind(window);
  const clearTimer = window.clearTimeout.bind(window);
  window.setTimeout = function (callback, delay, ...rest) {
    let id;
    const run = typeof callback === "function"
      ? function () { pending.delete(id); stamp(); return callback.apply(this, rest); }
      : callback;
    id = setTimer(run, delay);
    if ((Number(delay) || 0) <= 5000 && typeof callback === "function") { pending.add(id); }
    return id;
  };
  window.clearTimeout = function (id) { pending.delete(id); return clearTimer(id); };
  const refuse = function () {
    throw new DOMException("blocked by websim-crawler", "SecurityError");
  };
  for (const name of ["WebSocket", "WebTransport", "RTCPeerConnection",
                      "webkitRTCPeerConnection", "SharedWorker"]) {
    try {
      Object.defineProperty(window, name, { value: refuse, writable: false, configurable: false });
    } catch (error) { /* already locked */ }
  }
  try {
    Object.defineProperty(window, "open", {
      value: () => null, writable: false, configurable: false,
    });
  } catch (error) { /* already locked */ }
})();"""

# Milliseconds the DOM has been quiet (0 while a timer due within 5 s is pending), and the
# document's element count (what grows while results are being added).
_QUIET_SCRIPT = """() => [
  (window.__websimPendingTimers && window.__websimPendingTimers() > 0)
    ? 0 : performance.now() - (window.__websimLastChange || 0),
  document.getElementsByTagName('*').length,
]"""
# What grows when an infinite-scroll list loads more: the page's height or its element count.
_GROWTH_SCRIPT = (
    "() => document.documentElement.scrollHeight + ',' + document.getElementsByTagName('*').length"
)
# Scroll, count it as a change, and return once two frames have passed (scroll events have been
# dispatched and the requests they start are pending).
_SCROLL_SCRIPT = """() => new Promise((done) => {
  window.scrollTo(0, document.documentElement.scrollHeight);
  window.__websimLastChange = performance.now();
  requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
  setTimeout(() => done(false), 250);  // a page that paints no frames
})"""
_STAMP_SCRIPT = "() => { window.__websimLastChange = performance.now(); }"

LAYOUT_BOX_SCRIPT = """(maxBoxes) => {
  const skipped = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "META", "LINK", "TITLE"]);
  const body = document.body;
  const root = document.documentElement;
  let boxed = 0;
  let truncated = false;
  if (body) {
    const walker = document.createTreeWalker(body, NodeFilter.SHOW_ELEMENT);
    for (let element = body; element; element = walker.nextNode()) {
      if (skipped.has(element.tagName.toUpperCase()) || element.getClientRects().length === 0) {
        continue;
      }
      if (boxed >= maxBoxes) { truncated = true; break; }
      const rect = element.getBoundingClientRect();
      const box = [rect.left + window.scrollX, rect.top + window.scrollY, rect.width, rect.height];
      element.setAttribute("data-websim-box", box.map(Math.round).join(","));
      boxed += 1;
    }
  }
  const width = Math.max(root.scrollWidth, body ? body.scrollWidth : 0);
  const height = Math.max(root.scrollHeight, body ? body.scrollHeight : 0);
  root.setAttribute("data-websim-page", width + "," + height);
  return { boxed, truncated, width, height };
}"""


class RenderScriptTimeoutError(WebsimError):
    """A rendered page's scripts did not let a script of ours run in time."""


class RenderRefusedError(WebsimError):
    """A rendered page was refused: ``stat`` is the stats key it is counted under."""

    def __init__(self, stat: str, message: str) -> None:
        super().__init__(message)
        self.stat = stat


DEFERRED_STAT = "websim/render/deferred"  # killed for the browser's shared memory cap
_REFUSALS = {
    "offsite_navigation": "websim/pages/failed/offsite_navigation",
    "too_large": "websim/pages/dropped/too_large",
    "render_memory": "websim/pages/failed/render_memory",
    "render_crashed": "websim/pages/failed/render_crashed",
    "render_pressure": DEFERRED_STAT,
}


@dataclass(frozen=True)
class RenderedPage:
    """A settled page: final URL, HTML (with layout boxes), the clipped screenshot, and whether
    it was still growing when it was taken (``partial``)."""

    url: str
    html: str
    screenshot: bytes | None
    partial: bool = False


class PageGuard:
    """Watch one page: confine its navigations and schemes, count its bytes, close popups.

    ``max_response_bytes`` bounds each response (``DOWNLOAD_MAXSIZE``), ``max_page_bytes`` the
    page's total (``WEBSIM_RENDER_MAX_PAGE_BYTES``); either one passed refuses the page as
    ``too_large`` (``websim/render/too_large/response`` or ``/page`` tells which).
    """

    def __init__(
        self,
        page: Any,
        confinement: Confinement,
        *,
        max_response_bytes: int,
        max_page_bytes: int,
        count: Callable[[str], None],
        memory_kills: Callable[[], int],
        shared_kills: Callable[[], int] = lambda: 0,
        meta: MutableMapping[str, Any] | None = None,
    ) -> None:
        self.page = page
        self.confinement = confinement
        self.max_response_bytes = max_response_bytes
        self.max_page_bytes = max_page_bytes
        self.count = count
        self.memory_kills = memory_kills
        self.kills_at_start = memory_kills()
        self.shared_kills = shared_kills
        self.shared_kills_at_start = shared_kills()
        self.meta = meta if meta is not None else {}
        # A retry of a refused page (scrapy-playwright retries a closed or crashed page) is
        # refused at once: every request it makes is aborted.
        self.refused: str | None = next(
            (reason for reason, stat in _REFUSALS.items() if self.meta.get(REFUSED_META) == stat),
            None,
        )
        self.bytes_received = 0
        self.bytes_by_response: dict[str, int] = {}  # responses still loading, by CDP request id
        self.partial = False  # still growing when last settled
        self.pending: set[Any] = set()
        self.last_network_change = asyncio.get_running_loop().time()
        self.cdp: Any = None

    async def install(self) -> None:
        """Attach the routes, event handlers and byte counter (before the page loads)."""
        page = self.page
        await page.add_init_script(INIT_SCRIPT)
        await page.route("**", self._route)
        page.on("popup", self._close_popup)
        page.on("download", self._refuse_download)
        page.on("crash", self._crashed)
        page.on("response", self._check_redirect)
        page.on("request", self._request_started)
        page.on("requestfinished", self._request_ended)
        page.on("requestfailed", self._request_ended)
        self.cdp = await page.context.new_cdp_session(page)
        self.cdp.on("Network.dataReceived", self._data_received)
        self.cdp.on("Network.loadingFinished", self._response_ended)
        self.cdp.on("Network.loadingFailed", self._response_ended)
        # Refused before they begin: a download the page starts neither runs nor fails the page.
        self.cdp.on(
            "Page.downloadWillBegin", lambda _event: self.count("websim/render/blocked/download")
        )
        await self.cdp.send("Page.setDownloadBehavior", {"behavior": "deny"})
        await self.cdp.send(
            "Network.enable", {"maxTotalBufferSize": 1_000_000, "maxResourceBufferSize": 100_000}
        )

    def refuse(self, reason: str) -> None:
        """Mark the page refused (first reason wins) and note it in the request meta."""
        if self.refused is None:
            self.refused = reason
            self.meta[REFUSED_META] = _REFUSALS[reason]

    def raise_if_refused(self) -> None:
        """Raise ``RenderRefusedError`` when the page was refused."""
        if self.refused is not None:
            raise RenderRefusedError(
                _REFUSALS[self.refused], f"rendered page refused: {self.refused}"
            )

    def network_quiet_seconds(self) -> float:
        """Seconds since the page last had a request start or end (0 while one is pending)."""
        if self.pending:
            return 0.0
        return asyncio.get_running_loop().time() - self.last_network_change

    async def _route(self, route: Any, request: Any) -> None:
        if self.refused is not None:
            await _quietly(route.abort())
        elif not is_web_url(str(request.url)):
            self.count("websim/render/blocked/scheme")
            await _quietly(route.abort())
        elif self._leaves_the_site(request):
            self.count("websim/render/blocked/offsite_navigation")
            self.refuse("offsite_navigation")
            await _quietly(route.abort())
        else:
            await _quietly(route.fallback())

    def _leaves_the_site(self, request: Any) -> bool:
        return self._in_main_frame(request) and not self.confinement.is_own_url(str(request.url))

    @staticmethod
    def _in_main_frame(request: Any) -> bool:
        """Tell whether a request navigates the page's main frame."""
        if not request.is_navigation_request():
            return False
        try:
            return bool(request.frame.parent_frame is None)
        except Exception:  # a worker's request has no frame
            return False

    def _check_redirect(self, response: Any) -> None:
        """Refuse a page whose own navigation is redirected off the crawl's sites."""
        if not 300 <= response.status < 400 or not self._in_main_frame(response.request):
            return
        location = response.headers.get("location")
        if location and not self.confinement.is_own_url(urljoin(str(response.url), location)):
            self.count("websim/render/blocked/offsite_navigation")
            self.refuse("offsite_navigation")

    def _close_popup(self, popup: Any) -> None:
        self.count("websim/render/blocked/popup")
        asyncio.get_running_loop().create_task(_quietly(popup.close()))

    def _refuse_download(self, download: Any) -> None:
        self.count("websim/render/blocked/download")
        asyncio.get_running_loop().create_task(_quietly(download.cancel()))

    def _crashed(self, _page: Any) -> None:
        """Refuse a crashed page: ``render_memory`` when a kill for its own bound (or any kill
        while it rendered alone) came since it opened, ``render_pressure`` (deferred, tried
        again) when only kills for the browser's shared cap did."""
        kills = self.memory_kills() - self.kills_at_start
        shared = self.shared_kills() - self.shared_kills_at_start
        if not kills:
            self.refuse("render_crashed")
        elif kills == shared and not self.meta.get(ALONE_META):
            self.refuse("render_pressure")
        else:
            self.refuse("render_memory")

    def _request_started(self, request: Any) -> None:
        self.pending.add(request)
        self.last_network_change = asyncio.get_running_loop().time()

    def _request_ended(self, request: Any) -> None:
        self.pending.discard(request)
        self.last_network_change = asyncio.get_running_loop().time()

    def _data_received(self, event: dict[str, Any]) -> None:
        received = int(event.get("dataLength") or 0)
        self.bytes_received += received
        request_id = str(event.get("requestId") or "")
        response_bytes = self.bytes_by_response.get(request_id, 0) + received
        self.bytes_by_response[request_id] = response_bytes
        if self.refused is not None:
            return
        if self.max_response_bytes and response_bytes > self.max_response_bytes:
            self._refuse_too_large("response")
        elif self.max_page_bytes and self.bytes_received > self.max_page_bytes:
            self._refuse_too_large("page")

    def _response_ended(self, event: dict[str, Any]) -> None:
        self.bytes_by_response.pop(str(event.get("requestId") or ""), None)

    def _refuse_too_large(self, bound: str) -> None:
        self.count(f"websim/render/too_large/{bound}")
        self.refuse("too_large")
        asyncio.get_running_loop().create_task(_quietly(self.page.close()))


def is_web_url(url: str) -> bool:
    """Tell whether a page may request ``url``: http(s), ``data:`` and ``blob:`` only."""
    return url.lower().startswith(_WEB_SCHEMES)


async def run_script(page: Any, script: str, timeout: float, arg: Any = None) -> Any:
    """Evaluate ``script`` in the page; a page whose scripts hold the thread raises in time.

    Playwright puts no time limit on ``evaluate``: a page looping forever would hang the crawl.
    """
    try:
        return await asyncio.wait_for(page.evaluate(script, arg), timeout)
    except TimeoutError as exc:
        raise RenderScriptTimeoutError(
            f"the page's scripts kept the browser busy for {timeout:g} s "
            "(WEBSIM_RENDER_SCRIPT_TIMEOUT)"
        ) from exc


async def settle(page: Any, guard: PageGuard, params: RenderParams) -> str:
    """Wait until the DOM and the network have been quiet.

    Return ``"settled"``, ``"timeout"`` (not quiet at ``settle_max``, not growing) or
    ``"growing"`` (still adding elements at ``settle_growing_max``).
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    last_growth, most_elements = started, 0
    while True:
        guard.raise_if_refused()
        try:
            quiet_ms, elements = await run_script(page, _QUIET_SCRIPT, params.script_timeout)
            dom_quiet = float(quiet_ms) / 1000
        except RenderScriptTimeoutError:
            raise
        except Exception as exc:  # navigating: the old document is gone
            if page.is_closed():
                guard.raise_if_refused()
                raise
            logger.debug("settle: %s", exc)
            dom_quiet, elements = 0.0, 0
        now = loop.time()
        if int(elements) > most_elements:
            most_elements, last_growth = int(elements), now
        if min(dom_quiet, guard.network_quiet_seconds()) >= params.settle_quiet:
            return "settled"
        if now - started >= params.settle_max:
            if now - last_growth > GROWTH_WINDOW_SECONDS:
                return "timeout"
            if now - started >= params.settle_growing_max:
                return "growing"
        await asyncio.sleep(0.1)


async def settle_and_scroll(
    page: Any, guard: PageGuard, params: RenderParams, count: Callable[[str], None]
) -> None:
    """Settle; then scroll to the bottom while the page grows (up to ``scrolls`` times).

    Scrolling stops when two scrolls in a row added nothing (a slow page may answer late). A
    page still growing at the longest wait is counted, logged and marked (``guard.partial``, and
    ``PARTIAL_META`` in its request meta).
    """
    outcomes = [await settle(page, guard, params)]
    unchanged = 0
    for _ in range(params.scrolls):
        before = await run_script(page, _GROWTH_SCRIPT, params.script_timeout)
        await run_script(page, _SCROLL_SCRIPT, params.script_timeout)
        count("websim/render/scrolls")
        outcomes.append(await settle(page, guard, params))
        grew = await run_script(page, _GROWTH_SCRIPT, params.script_timeout) != before
        unchanged = 0 if grew else unchanged + 1
        if unchanged == 2:
            break
    for outcome in outcomes:
        if outcome != "settled":
            count("websim/render/settle_timeout")
    guard.partial = "growing" in outcomes
    guard.meta[PARTIAL_META] = guard.partial
    if guard.partial:
        count("websim/render/partial")
        logger.warning(
            "rendering: %s was still growing after %g s (WEBSIM_RENDER_SETTLE_GROWING_MAX); "
            "taken as it is and marked render_partial",
            page.url,
            params.settle_growing_max,
        )


async def capture(
    page: Any,
    guard: PageGuard,
    params: RenderParams,
    count: Callable[[str], None],
    *,
    screenshot: bool,
) -> bytes | None:
    """Record the layout boxes and return the clipped screenshot (when asked)."""
    guard.raise_if_refused()
    if not guard.confinement.is_own_url(page.url):
        guard.refuse("offsite_navigation")
        guard.raise_if_refused()
    layout = await run_script(page, LAYOUT_BOX_SCRIPT, params.script_timeout, params.max_boxes)
    if layout["truncated"]:
        count("websim/render/boxes_truncated")
    if not screenshot:
        return None
    width = max(1, min(int(layout["width"]), params.screenshot_max_width))
    height = max(1, min(int(layout["height"]), params.screenshot_max_height))
    if (width, height) != (int(layout["width"]), int(layout["height"])):
        count("websim/render/screenshot_clipped")
    clip = {"x": 0, "y": 0, "width": width, "height": height}
    shot = page.screenshot(type="png", full_page=True, clip=clip, timeout=params.timeout * 1000)
    return bytes(await asyncio.wait_for(shot, params.timeout + 1))


async def click_control(page: Any, xpath: str, params: RenderParams) -> None:
    """Click the element at ``xpath`` (a script "next" control) and wait for a navigation."""
    locator = page.locator(f"xpath={xpath}").first
    await locator.click(timeout=params.script_timeout * 1000, no_wait_after=True)
    with contextlib.suppress(Exception):  # a click that navigates leaves no document to stamp
        await run_script(page, _STAMP_SCRIPT, params.script_timeout)
    await page.wait_for_load_state("load", timeout=params.timeout * 1000)


async def _quietly(awaitable: Any) -> None:
    """Await a Playwright call whose target may have closed meanwhile."""
    with contextlib.suppress(Exception):
        await awaitable
