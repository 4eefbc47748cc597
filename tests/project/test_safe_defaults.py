"""The safe defaults for untrusted sites that the README lists are the ones in force."""

from __future__ import annotations

import os

import pytest
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils.project import get_project_settings

from websim_crawler.browser.page import is_web_url
from websim_crawler.browser.playwright_wiring import enable_rendering, render_meta, rendering_of
from websim_crawler.browser.session import CONTEXT_OPTIONS
from websim_crawler.config.render import RenderParams


def test_crawl_defaults_are_polite_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "websim_crawler.settings")
    settings = get_project_settings()
    assert settings.getbool("ROBOTSTXT_OBEY") is True
    assert settings.getbool("AUTOTHROTTLE_ENABLED") is True
    assert settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") <= 4
    assert 0 < settings.getint("DOWNLOAD_WARNSIZE") < settings.getint("DOWNLOAD_MAXSIZE")
    assert settings.getint("DOWNLOAD_MAXSIZE") <= 16 * 1024 * 1024
    assert 0 < settings.getint("DOWNLOAD_TIMEOUT") <= 60
    assert settings.getint("REDIRECT_MAX_TIMES") <= 20
    assert settings.getint("CLOSESPIDER_PAGECOUNT") > 0


@pytest.mark.parametrize(
    ("url", "aborted"),
    [
        ("https://a.org/x.js", False),
        ("http://a.org/", False),
        ("data:image/png;base64,AAAA", False),
        ("blob:https://a.org/1", False),
        ("file:///etc/passwd", True),
        ("FILE:///etc/passwd", True),
        ("ftp://a.org/f", True),
        ("chrome://settings", True),
        ("ws://a.org/socket", True),
    ],
)
def test_rendered_pages_may_request_only_web_schemes(url: str, aborted: bool) -> None:
    assert is_web_url(url) is not aborted


@pytest.mark.skipif(
    not os.access(RenderParams().chromium_path, os.X_OK), reason="chromium is not installed"
)
def test_rendering_allows_no_downloads_permissions_or_endless_loads() -> None:
    crawler = Crawler(Spider, {"DOWNLOAD_MAXSIZE": 1000})
    rendering = enable_rendering(crawler, "site", RenderParams(timeout=12.0, max_pages_open=3))
    settings = crawler.settings
    # No context at start-up: every rendered request brings the guarded context's options, so
    # the browser a handler launches on its first page (and after a restart) gets them.
    assert settings.getdict("PLAYWRIGHT_CONTEXTS") == {}
    context = render_meta("site", RenderParams(), keep_page=False)["playwright_context_kwargs"]
    assert context == CONTEXT_OPTIONS
    assert context["accept_downloads"] is False and context["permissions"] == []
    assert context["service_workers"] == "block"
    assert settings["PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT"] == 12_000
    assert settings.getint("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT") == 3
    assert settings.getint("PLAYWRIGHT_MAX_CONTEXTS") == 1
    assert rendering.max_response_bytes == 1000  # DOWNLOAD_MAXSIZE holds for each response
    rendering.proxy_url = "http://127.0.0.1:9"
    options = rendering.launch_options()
    assert options["headless"] is True
    assert "--proxy-server=http://127.0.0.1:9" in options["args"]
    assert "--proxy-bypass-list=<-loopback>" in options["args"]


@pytest.mark.skipif(
    not os.access(RenderParams().chromium_path, os.X_OK), reason="chromium is not installed"
)
def test_a_closed_spider_s_rendering_is_not_kept_for_the_life_of_the_process() -> None:
    first = Crawler(Spider, {})
    rendering = enable_rendering(first, "closing", RenderParams())
    assert rendering_of("closing") is rendering
    first.signals.send_catch_log(signals.spider_closed, spider=Spider("closing"), reason="done")
    with pytest.raises(KeyError):
        rendering_of("closing")
    # A later crawl of a spider of the same name keeps its own when the first one closes late.
    again = enable_rendering(Crawler(Spider, {}), "closing", RenderParams())
    first.signals.send_catch_log(signals.spider_closed, spider=Spider("closing"), reason="done")
    assert rendering_of("closing") is again
