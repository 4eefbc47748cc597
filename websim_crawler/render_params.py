"""Settings of browser rendering (``render=1``, ``websim compare --render``), read by the
spiders' rendering and the CLI; never by the pure core."""

from __future__ import annotations

from dataclasses import dataclass

from websim_crawler.core.params import setting, validate


@dataclass(frozen=True)
class RenderParams:
    """Which Chromium renders pages, how long a page may take and whether it is screenshotted."""

    chromium_path: str = setting(
        "/usr/bin/chromium",
        "WEBSIM_CHROMIUM_PATH",
        "Chromium executable used by render=1 (Debian: apt-get install chromium)",
    )
    render_screenshot: bool = setting(
        False,
        "WEBSIM_RENDER_SCREENSHOT",
        "with render=1, also store a full-page PNG (base64) in each item's screenshot field",
    )
    render_timeout: float = setting(
        30.0,
        "WEBSIM_RENDER_TIMEOUT",
        "seconds a rendered page may take to load",
        minimum=1.0,
        maximum=600.0,
    )
    render_script_timeout: float = setting(
        10.0,
        "WEBSIM_RENDER_SCRIPT_TIMEOUT",
        "seconds the layout capture may wait for a rendered page's scripts to yield",
        minimum=0.5,
        maximum=600.0,
    )

    def __post_init__(self) -> None:
        validate(self)
