"""Shared fixtures: static sites served on 127.0.0.1 by a threaded http.server."""

from __future__ import annotations

import functools
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="session", autouse=True)
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Keep the language model cache (``$XDG_CACHE_HOME/websim-crawler``) out of the user's home;
    the commands the tests start inherit it."""
    with pytest.MonkeyPatch.context() as patch:
        cache_home = tmp_path_factory.mktemp("cache-home")
        patch.setenv("XDG_CACHE_HOME", str(cache_home))
        yield cache_home


class QuietHandler(SimpleHTTPRequestHandler):
    """Serve files without logging every request to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        return


def serve_directory(directory: Path) -> tuple[ThreadingHTTPServer, str]:
    """Start a threaded static file server for ``directory`` on a free loopback port."""
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def analysed(pipeline: Any, item: Any) -> Any:
    """Run an in-process (``WEBSIM_ANALYSIS_WORKERS=0``) analysis pipeline on one item.

    Its ``process_item`` coroutine awaits nothing then, so it finishes on its first step.
    """
    coroutine = pipeline.process_item(item)
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise AssertionError("process_item waited: is WEBSIM_ANALYSIS_WORKERS 0?")


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """Serve ``tests/support/pages_site/`` (a few article pages, a PDF) for the session."""
    server, url = serve_directory(TESTS / "support" / "pages_site")
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """Start a throw-away redis-server on a free loopback port for the session."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    from tests.support.local_redis import LocalRedis

    with LocalRedis() as server:
        yield server.url
