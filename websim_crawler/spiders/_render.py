"""Rendering with scrapy-playwright and a system Chromium, recording each element's layout box.

With ``render=1`` every request goes through Chromium; before the HTML is taken, a script writes
each displayed element's bounding box (page coordinates, CSS pixels) into a
``data-websim-box="x,y,w,h"`` attribute and the page size into ``data-websim-page="W,H"`` on
``<html>``, so the page analysis reads real geometry. Elements without a layout box
(``display: none``) get no attribute.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import subprocess
from typing import Any

from scrapy.http import Response
from scrapy.settings import Settings

from websim_crawler._imports import require
from websim_crawler.errors import BrowserMissingError, WebsimError
from websim_crawler.render_params import RenderParams

logger = logging.getLogger(__name__)

LAYOUT_BOX_SCRIPT = """() => {
  const skipped = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "META", "LINK", "TITLE"]);
  const body = document.body;
  const elements = body ? [body, ...body.querySelectorAll("*")] : [];
  let boxed = 0;
  for (const element of elements) {
    if (skipped.has(element.tagName.toUpperCase()) || element.getClientRects().length === 0) {
      continue;
    }
    const rect = element.getBoundingClientRect();
    const box = [rect.left + window.scrollX, rect.top + window.scrollY, rect.width, rect.height];
    element.setAttribute("data-websim-box", box.map(Math.round).join(","));
    boxed += 1;
  }
  const root = document.documentElement;
  const width = Math.max(root.scrollWidth, body ? body.scrollWidth : 0);
  const height = Math.max(root.scrollHeight, body ? body.scrollHeight : 0);
  root.setAttribute("data-websim-page", width + "," + height);
  return boxed;
}"""


class RenderScriptTimeoutError(WebsimError):
    """A rendered page's scripts did not let the layout capture run in time."""


_CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-first-run",
    "--mute-audio",
)


def check_chromium(path: str) -> None:
    """Make sure the Chromium at ``path`` runs; raise ``BrowserMissingError`` naming the fix."""
    fix = (
        "install it (Debian: apt-get install chromium) or point WEBSIM_CHROMIUM_PATH at a "
        "Chromium executable (-s WEBSIM_CHROMIUM_PATH=/path/to/chromium)"
    )
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise BrowserMissingError(f"render=1 needs Chromium, but {path!r} is not there: {fix}")
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
            f"render=1 needs Chromium, but {path!r} fails to run: {fix}"
        ) from exc


def enable_rendering(settings: Settings, params: RenderParams) -> None:
    """Route downloads through scrapy-playwright with the configured Chromium (spider priority)."""
    require("scrapy_playwright")
    check_chromium(params.chromium_path)
    handler = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
    settings.set("DOWNLOAD_HANDLERS", {"http": handler, "https": handler}, priority="spider")
    settings.set("PLAYWRIGHT_BROWSER_TYPE", "chromium", priority="spider")
    settings.set(
        "PLAYWRIGHT_LAUNCH_OPTIONS",
        {"executable_path": params.chromium_path, "headless": True, "args": list(_CHROMIUM_ARGS)},
        priority="spider",
    )
    settings.set(
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT", params.render_timeout * 1000, priority="spider"
    )
    # Untrusted pages: no downloads, no permissions granted (prompts are refused), no service
    # workers outliving the page, and no request by the page outside http(s), data: and blob:.
    settings.set("PLAYWRIGHT_CONTEXTS", {"default": dict(SAFE_CONTEXT)}, priority="spider")
    settings.set(
        "PLAYWRIGHT_ABORT_REQUEST",
        "websim_crawler.spiders._render.outside_the_web",
        priority="spider",
    )
    logger.info(
        "rendering with %s (screenshots: %s)", params.chromium_path, params.render_screenshot
    )


SAFE_CONTEXT: dict[str, Any] = {
    "accept_downloads": False,
    "permissions": [],
    "service_workers": "block",
}
_WEB_SCHEMES = ("http://", "https://", "data:", "blob:")


def outside_the_web(request: Any) -> bool:
    """Tell scrapy-playwright to abort a page's request to a non-web scheme (``file:`` ...)."""
    return not str(request.url).lower().startswith(_WEB_SCHEMES)


def render_meta(params: RenderParams) -> dict[str, Any]:
    """Return the request meta that renders a page and records its layout boxes."""
    page_methods = require("scrapy_playwright.page")
    methods = [page_methods.PageMethod(record_layout, params.render_script_timeout)]
    if params.render_screenshot:
        methods.append(page_methods.PageMethod("screenshot", full_page=True, type="png"))
    return {"playwright": True, "playwright_page_methods": methods}


async def record_layout(page: Any, timeout_seconds: float) -> Any:
    """Run the layout-box script; a page whose scripts hold the main thread fails the request.

    Playwright puts no time limit on ``evaluate``: a page looping forever would hang the crawl.
    The raised error makes scrapy-playwright close the page, and the spider counts the request
    as ``websim/pages/failed/render_script_timeout``.
    """
    try:
        return await asyncio.wait_for(page.evaluate(LAYOUT_BOX_SCRIPT), timeout_seconds)
    except TimeoutError as exc:
        raise RenderScriptTimeoutError(
            f"the page's scripts kept the browser busy for {timeout_seconds:g} s "
            "(WEBSIM_RENDER_SCRIPT_TIMEOUT)"
        ) from exc


def rendered_screenshot(response: Response) -> str | None:
    """Return the base64 PNG a rendered response's screenshot method took, if any."""
    for method in response.meta.get("playwright_page_methods") or ():
        if getattr(method, "method", None) == "screenshot" and isinstance(method.result, bytes):
            return base64.b64encode(method.result).decode("ascii")
    return None
