"""Hostile pages for the rendering tests and benchmark, and an "internal service" to protect.

Everything listens on 127.0.0.1. :class:`InternalService` plays a service on the crawler's own
network (a second loopback port): it accepts TCP connections and counts them, so a test can
assert that no page reached it by any means (HTTP, WebSocket, redirect, worker, popup).
:class:`HostileSite` serves pages that try to escape to it, or to cost unbounded resources;
``/`` links to each of them and to a good page. ``STORED`` pages must be kept, ``DROPPED`` maps
each page that must not be stored to the stat it is counted under. The site counts the requests
it gets per path (``HostileSite.requests``): ``POPUP_PATHS`` are the site's own pages that popups
try to open, and must never be requested.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STORED = ("/ok.html", "/popups.html", "/download.html", "/wide.html")
DROPPED = {
    "/nav-script.html": "websim/pages/failed/offsite_navigation",
    "/meta-refresh.html": "websim/pages/failed/offsite_navigation",
    "/redirect": "websim/pages/failed/offsite_navigation",
    "/redirect-by-name": "websim/pages/failed/offsite_navigation",
    "/huge.html": "websim/pages/dropped/too_large",
    "/memory.html": "websim/pages/failed/render_memory",
}
# Popups on the crawl's own site: target=_blank links, window.open (also an iframe's), a form.
POPUP_LINKS = tuple(f"/own-popup-link{n}" for n in range(5))
POPUP_PATHS = (*POPUP_LINKS, "/own-open", "/own-iframe-open", "/own-form")
SLOW_SECONDS = 1.5  # the download page's load waits for a slow image: the download fails first
HUGE_BYTES = 8 * 1024 * 1024
WIDE_PIXELS = 16_000


class InternalService:
    """Count every TCP connection made to a loopback port (and answer nothing useful)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.stopped = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def stop(self) -> None:
        """Stop listening."""
        self.stopped = True
        self.listener.close()


def _pages(internal: int, own: int) -> dict[str, str]:
    target = f"http://127.0.0.1:{internal}"
    escape_attempts = f"""
<img src="{target}/img.png"><link rel="stylesheet" href="{target}/style.css">
<script src="{target}/script.js"></script><iframe src="{target}/frame"></iframe>
<iframe src="file:///etc/passwd"></iframe><iframe src="http://localhost:{internal}/"></iframe>
<script>
fetch("{target}/fetch").catch(() => {{}});
fetch("{target}/post", {{method: "POST", body: "x"}}).catch(() => {{}});
fetch("http://localhost:{internal}/by-name").catch(() => {{}});
navigator.sendBeacon("{target}/beacon", "x");
try {{ new EventSource("{target}/events"); }} catch (error) {{}}
try {{ new WebSocket("ws://127.0.0.1:{internal}/socket"); }} catch (error) {{}}
try {{ new WebSocket("ws://127.0.0.1:{own}/socket"); }} catch (error) {{}}
const source = 'fetch("{target}/worker").catch(() => {{}});' +
  'try {{ new WebSocket("ws://127.0.0.1:{internal}/worker-socket"); }} catch (error) {{}}';
new Worker(URL.createObjectURL(new Blob([source], {{type: "text/javascript"}})));
</script>"""
    return {
        "/": "<h1>Hostile pages</h1>"
        + "".join(f'<a href="{path}">{path}</a> ' for path in (*STORED, *DROPPED)),
        "/ok.html": f"<h1>An ordinary page</h1><p>Its scripts try every way out.</p>"
        f"{escape_attempts}",
        "/nav-script.html": f"<p>leaving</p><script>setTimeout(() => "
        f'location.href = "{target}/navigated", 100)</script>',
        "/meta-refresh.html": f'<meta http-equiv="refresh" content="0; url={target}/refreshed">'
        "<p>refreshing</p>",
        "/popups.html": "<h1>Popups</h1><p>fifty of them</p>"
        + "".join(f'<a id="p{n}" href="{target}/popup{n}" target="_blank">p</a>' for n in range(25))
        + "<script>for (let n = 0; n < 25; n++) { try { window.open('"
        + target
        + "/open' + n); } catch (e) {} document.getElementById('p' + n).click(); }</script>"
        + "".join(f'<a class="own" href="{path}" target="_blank">own</a>' for path in POPUP_LINKS)
        + '<form id="own-form" action="/own-form" target="_blank"><input name="q" value="x"></form>'
        # clicked, then removed: the crawl must not find them as links in the rendered page
        "<script>document.querySelectorAll('a.own').forEach((a) => { a.click(); a.remove(); });"
        "try { window.open('/own-open'); } catch (e) {}"
        "const frame = document.createElement('iframe'); document.body.appendChild(frame);"
        "try { frame.contentWindow.open('/own-iframe-open'); } catch (e) {}"
        "document.getElementById('own-form').submit();</script>",
        "/download.html": "<h1>A download</h1><p>the page stays</p>"
        '<a id="file" href="/file.bin" download>file</a><img src="/slow.png" alt="">'
        "<script>document.getElementById('file').click()</script>",
        "/wide.html": f'<h1>Wide</h1><div style="width:{WIDE_PIXELS}px;height:{WIDE_PIXELS}px;'
        'background:linear-gradient(red, blue)">huge</div>',
        "/memory.html": "<h1>Memory</h1><script>const kept = [];"
        "for (let n = 0; n < 64; n++) { const block = new Uint8Array(64 << 20);"
        " block.fill(n + 1); kept.push(block); }</script>",
    }


class HostileSite:
    """Serve the hostile pages on a free loopback port; ``internal`` is the port to protect."""

    def __init__(self, internal: int) -> None:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.pages = _pages(internal, self.port)
        self.internal = internal
        self.requests: Counter[str] = Counter()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        """Return the index page's URL."""
        return f"http://127.0.0.1:{self.port}/"

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        """Serve one request."""
        path = handler.path.split("?", 1)[0]
        self.requests[path] += 1
        if path == "/redirect":
            return _redirect(handler, f"http://127.0.0.1:{self.internal}/redirected")
        if path == "/redirect-by-name":
            return _redirect(handler, f"http://localhost:{self.port}/ok.html")
        if path == "/huge.html":
            return _stream_huge(handler)
        if path == "/file.bin":
            return _send(handler, 200, b"\0" * 1000, "application/octet-stream")
        if path == "/slow.png":
            time.sleep(SLOW_SECONDS)
            return _send(handler, 404, b"not found", "text/plain")
        page = self.pages.get(path)
        if page is None:
            return _send(handler, 404, b"not found", "text/plain")
        body = f"<!DOCTYPE html><html><head><title>{path}</title></head><body>{page}</body></html>"
        _send(handler, 200, body.encode(), "text/html; charset=utf-8")

    def stop(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _redirect(handler: BaseHTTPRequestHandler, location: str) -> None:
    handler.send_response(302)
    handler.send_header("Location", location)
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def _stream_huge(handler: BaseHTTPRequestHandler) -> None:
    """Send ``HUGE_BYTES`` of HTML without a Content-Length (the size is only seen as it comes)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html; charset=utf-8")
    handler.end_headers()
    chunk = b"<p>" + b"x" * 65_530 + b"</p>"
    try:
        handler.wfile.write(b"<!DOCTYPE html><html><body>")
        for _ in range(HUGE_BYTES // len(chunk)):
            handler.wfile.write(chunk)
            time.sleep(0.001)
    except OSError:
        return
    handler.close_connection = True
