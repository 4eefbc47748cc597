"""The safe defaults for untrusted sites that the README lists are the ones in force."""

from __future__ import annotations

import os

import pytest
from scrapy.settings import Settings
from scrapy.utils.project import get_project_settings

from websim_crawler.render_params import RenderParams
from websim_crawler.spiders._render import SAFE_CONTEXT, enable_rendering, outside_the_web


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


class FakeRequest:
    def __init__(self, url: str) -> None:
        self.url = url


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
    assert outside_the_web(FakeRequest(url)) is aborted


@pytest.mark.skipif(
    not os.access(RenderParams().chromium_path, os.X_OK), reason="chromium is not installed"
)
def test_rendering_allows_no_downloads_permissions_or_endless_loads() -> None:
    settings = Settings()
    enable_rendering(settings, RenderParams(render_timeout=12.0))
    context = settings.getdict("PLAYWRIGHT_CONTEXTS")["default"]
    assert context == SAFE_CONTEXT
    assert context["accept_downloads"] is False and context["permissions"] == []
    assert settings["PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT"] == 12_000
    assert settings["PLAYWRIGHT_ABORT_REQUEST"] == "websim_crawler.spiders._render.outside_the_web"
    assert settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")["headless"] is True
