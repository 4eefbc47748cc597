"""A local HTTP server that misbehaves on purpose, for the reliability tests.

Each path is one fault: ``/fault/500``, ``/fault/503`` (with Retry-After: 1),
``/fault/503-long`` (Retry-After: an HTTP date an hour ahead), ``/fault/timeout``,
``/fault/reset`` (TCP reset, no answer), ``/fault/redirect/N`` (endless), ``/fault/drip`` (a
byte every 0.2 s), ``/fault/huge`` (50 MB, declared), ``/fault/huge-stream`` (50 MB, undeclared),
``/fault/bomb`` (a small gzip body that inflates to 200 MB), ``/fault/truncated-body`` (shorter
than its Content-Length), plus pages that arrive but are bad: HTML served as an image, binary
served as HTML, a mis-declared charset, truncated HTML. ``/`` links to every one of them and to
a few good pages.
"""

from __future__ import annotations

import gzip
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAILING = {
    "/fault/500": "http_500",
    "/fault/503": "http_503",
    "/fault/503-long": "http_503",
    "/fault/timeout": "timeout",
    "/fault/drip": "timeout",
    "/fault/reset": "connection_lost",
    "/fault/redirect/0": "redirect_loop",
    "/fault/huge": "too_large",
    "/fault/huge-stream": "too_large",
    "/fault/bomb": "decompression_bomb",
    "/fault/truncated-body": "truncated",
}
"""The paths whose fetch fails, and the ``websim/pages/failed/<reason>`` each one counts as."""

ARRIVING = ("/bad/image-type", "/bad/binary", "/bad/charset", "/bad/truncated-html", "/slow")
GOOD = tuple(f"/good/{number}" for number in range(5))
HUGE_BYTES = 50 * 1024 * 1024
_BLOCK = b"<p>" + b"filler text " * 5000 + b"</p>\n"


def _article(title: str, words: str) -> bytes:
    body = " ".join([words] * 30)
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
        f"</head><body><nav><a href='/'>Home</a></nav><article><h1>{title}</h1>"
        f"<p>{body}</p></article></body></html>"
    ).encode()


class FaultHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server_version = "FaultServer/1.0"
    timeout_seconds = 6.0
    bomb: bytes = b""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def send_body(self, body: bytes, content_type: str = "text/html; charset=utf-8") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path
        if path == "/":
            links = "".join(f"<li><a href='{p}'>{p}</a></li>" for p in (*FAILING, *ARRIVING, *GOOD))
            self.send_body(f"<html><body><h1>Faults</h1><ul>{links}</ul></body></html>".encode())
        elif path.startswith("/good/"):
            self.send_body(_article(f"Good page {path[6:]}", "volcanoes erupt lava and ash"))
        elif path in ("/fault/500", "/fault/503", "/fault/503-long"):
            self.send_response(int(path.removesuffix("-long")[-3:]))
            later = self.date_time_string(time.time() + 3600)
            self.send_header("Retry-After", later if path.endswith("-long") else "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/fault/timeout":
            time.sleep(self.timeout_seconds)
        elif path == "/fault/drip":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(int(self.timeout_seconds / 0.2)):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)
        elif path == "/fault/reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        elif path.startswith("/fault/redirect/"):
            self.send_response(302)
            self.send_header("Location", f"/fault/redirect/{int(path.rsplit('/', 1)[1]) + 1}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path in ("/fault/huge", "/fault/huge-stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            if path == "/fault/huge":
                self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            for _ in range(HUGE_BYTES // len(_BLOCK) + 1):
                self.wfile.write(_BLOCK)
        elif path == "/fault/bomb":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(self.bomb)))
            self.end_headers()
            self.wfile.write(self.bomb)
        elif path == "/fault/truncated-body":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(_article("Cut short", "this body ends early")[:300])
        elif path == "/bad/image-type":
            self.send_body(_article("An image?", "served with the wrong type"), "image/png")
        elif path == "/bad/binary":
            self.send_body(bytes(range(256)) * 64)
        elif path == "/bad/charset":
            text = _article("Café crème brûlée", "déjà vu à la carte façade naïve")
            self.send_body(text.decode().encode("cp1252"))
        elif path == "/bad/truncated-html":
            self.send_body(_article("Truncated markup", "pages end mid tag")[:-60] + b"<div><a hr")
        elif path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            for part in _article("Slow but complete", "a slow page arrives in pieces"):
                self.wfile.write(bytes([part]))
                if part == ord(">"):
                    self.wfile.flush()
                    time.sleep(0.01)
        else:
            self.send_error(404)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # clients that hang up on purpose (size limits, resets) are expected


class FaultServer:
    """Serve the faults on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, timeout_seconds: float = 6.0) -> None:
        handler = type(
            "Handler",
            (FaultHandler,),
            {
                "timeout_seconds": timeout_seconds,
                "bomb": gzip.compress(b"\0" * (200 * 1024 * 1024), compresslevel=9),
            },
        )
        self.server = _QuietServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __enter__(self) -> FaultServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()
