"""The rendering settings (``WEBSIM_RENDER_*``, ``WEBSIM_CHROMIUM_*``) of the browser module."""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.params import setting, validate
from websim_crawler.errors import ConfigError


@dataclass(frozen=True)
class RenderParams:
    """How Chromium loads, waits for, confines and bounds a rendered page."""

    chromium_path: str = setting(
        "/usr/bin/chromium",
        "WEBSIM_CHROMIUM_PATH",
        "Chromium executable used by render=1 and compare --render (Debian: apt-get install "
        "chromium)",
    )
    chromium_args: str = setting(
        "",
        "WEBSIM_CHROMIUM_ARGS",
        "extra Chromium switches, space-separated (e.g. --host-resolver-rules=...)",
    )
    other_hosts: bool = setting(
        False,
        "WEBSIM_RENDER_OTHER_HOSTS",
        "let rendered pages load from other public hosts (CDNs, fonts); off: a rendered page "
        "reaches only the crawled sites, no other host is even looked up",
    )
    screenshot: bool = setting(
        False,
        "WEBSIM_RENDER_SCREENSHOT",
        "with render=1, also store a full-page PNG (base64) in each item's screenshot field",
    )
    auto_samples: int = setting(
        2,
        "WEBSIM_RENDER_AUTO_SAMPLES",
        "render=auto: pages of each kind and URL shape fetched both plain and rendered to "
        "decide whether that kind needs a browser",
        minimum=1,
        maximum=100,
    )
    timeout: float = setting(
        30.0,
        "WEBSIM_RENDER_TIMEOUT",
        "seconds a rendered page may take to load",
        minimum=1.0,
        maximum=600.0,
    )
    script_timeout: float = setting(
        10.0,
        "WEBSIM_RENDER_SCRIPT_TIMEOUT",
        "seconds a script run in a rendered page (settle check, layout capture) may wait for the "
        "page's own scripts to yield",
        minimum=0.5,
        maximum=600.0,
    )
    settle_quiet: float = setting(
        0.75,
        "WEBSIM_RENDER_SETTLE_QUIET",
        "a rendered page has settled when its DOM has not changed and none of its requests has "
        "been pending for this many seconds",
        minimum=0.0,
        maximum=60.0,
    )
    settle_max: float = setting(
        15.0,
        "WEBSIM_RENDER_SETTLE_MAX",
        "longest wait (seconds) for a rendered page to settle while it is not growing; then it "
        "is taken as it is",
        minimum=0.0,
        maximum=600.0,
    )
    settle_growing_max: float = setting(
        120.0,
        "WEBSIM_RENDER_SETTLE_GROWING_MAX",
        "longest wait (seconds) for a rendered page that is still growing (elements added in "
        "the last 5 s, e.g. search results added one by one); then it is taken as it is, "
        "counted and marked partial (item field render_partial)",
        minimum=0.0,
        maximum=3600.0,
    )
    max_page_bytes: int = setting(
        512 * 1024 * 1024,
        "WEBSIM_RENDER_MAX_PAGE_BYTES",
        "bytes a rendered page may receive in all (document and subresources) before it is "
        "dropped as too_large; each response is also held to DOWNLOAD_MAXSIZE (0: no limit)",
        minimum=0,
        maximum=1 << 40,
    )
    scrolls: int = setting(
        0,
        "WEBSIM_RENDER_SCROLLS",
        "scroll a settled page to the bottom up to this many times while it grows (infinite "
        "scroll); 0: never",
        minimum=0,
        maximum=1000,
    )
    max_memory_mb: int = setting(
        1024,
        "WEBSIM_RENDER_MAX_MEMORY",
        "MiB of memory (RSS summed over Chromium's processes) past which the watchdog kills the "
        "largest page's renderer, and restarts the browser if that is not enough",
        minimum=128,
        maximum=1_000_000,
    )
    max_page_memory_mb: int = setting(
        768,
        "WEBSIM_RENDER_MAX_PAGE_MEMORY",
        "MiB one page's renderer may use (its own bound): a renderer over it when Chromium is "
        "over WEBSIM_RENDER_MAX_MEMORY is killed and its page refused as render_memory; under "
        "it, the page is deferred and tried again with fewer pages beside it (a shared bound); "
        "at most WEBSIM_RENDER_MAX_MEMORY",
        minimum=64,
        maximum=1_000_000,
    )
    pressure_retries: int = setting(
        2,
        "WEBSIM_RENDER_PRESSURE_RETRIES",
        "times a page killed for the browser's shared memory cap is tried again with fewer "
        "pages open beside it; then once more alone, and refused only if it fails alone",
        minimum=0,
        maximum=20,
    )
    restart_every: int = setting(
        500,
        "WEBSIM_RENDER_RESTART_EVERY",
        "restart Chromium after this many rendered pages (new pages wait until the open ones "
        "have closed); 0: never",
        minimum=0,
        maximum=10_000_000,
    )
    max_pages_open: int = setting(
        4,
        "WEBSIM_RENDER_MAX_PAGES",
        "browser pages open at once (the crawl uses one browser context)",
        minimum=1,
        maximum=64,
    )
    max_boxes: int = setting(
        20_000,
        "WEBSIM_RENDER_MAX_BOXES",
        "elements whose layout box is recorded per page, in document order",
        minimum=1,
        maximum=10_000_000,
    )
    screenshot_max_width: int = setting(
        1920,
        "WEBSIM_RENDER_SCREENSHOT_MAX_WIDTH",
        "screenshots are clipped to this many CSS pixels wide",
        minimum=16,
        maximum=16_384,
    )
    screenshot_max_height: int = setting(
        10_000,
        "WEBSIM_RENDER_SCREENSHOT_MAX_HEIGHT",
        "screenshots are clipped to this many CSS pixels high",
        minimum=16,
        maximum=100_000,
    )

    def __post_init__(self) -> None:
        validate(self)
        if self.settle_growing_max < self.settle_max:
            raise ConfigError(
                f"WEBSIM_RENDER_SETTLE_GROWING_MAX ({self.settle_growing_max:g}) must be >= "
                f"WEBSIM_RENDER_SETTLE_MAX ({self.settle_max:g})"
            )
