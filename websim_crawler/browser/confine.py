"""Where a rendered page may send requests: the crawl's own sites (and, when asked, public hosts).

Chromium sends every request of every page, frame and worker (WebSockets and redirects included)
through :class:`ConfiningProxy`, a small HTTP proxy on 127.0.0.1. The proxy resolves the host
itself and connects to the address it checked, so a name that resolves to a private address is
refused like the address itself and cannot be re-resolved elsewhere in between. Destinations:

- the crawl's own sites (host and port of the start URL, the seeds and the crawl's own requests,
  ``www.`` ignored, as ``core.urls.host_port_of`` says): allowed, whatever their address (a site
  on 127.0.0.1 can be crawled);
- any other host: refused (``other_host``) before it is looked up, unless other hosts are let
  in (``WEBSIM_RENDER_OTHER_HOSTS``): then one whose every address is global (public CDNs,
  fonts, images) is allowed;
- anything else (loopback, RFC 1918, CGNAT, link-local, unique-local ``fc00::/7``, unspecified,
  multicast, reserved, a name that does not resolve): refused with 403;
- a WebSocket handshake (``Upgrade: websocket``, also inside a CONNECT tunnel): refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import urlsplit

from websim_crawler.core.urls import host_port_of

logger = logging.getLogger(__name__)

Resolver = Callable[[str, int], Awaitable[list[str]]]

_MAX_HEAD_BYTES = 64 * 1024
_HEAD_TIMEOUT = 30.0
_CONNECT_TIMEOUT = 15.0
_RESOLVE_TIMEOUT = 10.0
_CHUNK = 64 * 1024
_HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te", b"upgrade"}
)


def is_internal_address(address: str) -> bool:
    """Tell whether an IP address is not a public one (loopback, private, link-local ...)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None and is_internal_address(str(embedded)):
            return True
    return ip.is_multicast or not ip.is_global


def site_key(scheme: str, host: str, port: int) -> str:
    """Return the ``host_port_of`` key of a destination (the site it belongs to)."""
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return host_port_of(f"{scheme}://{host}:{port}/")


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve ``host`` with the system resolver; return its addresses (none when unknown)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), _RESOLVE_TIMEOUT
        )
    except (OSError, TimeoutError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class Confinement:
    """The crawl's own sites and the rule that decides where a rendered page may connect."""

    def __init__(
        self,
        sites: Iterable[str] = (),
        resolver: Resolver = system_resolver,
        *,
        other_hosts: bool = False,
    ) -> None:
        self.sites: set[str] = set()
        self.resolver = resolver
        self.other_hosts = other_hosts
        for url in sites:
            self.add_site(url)

    def add_site(self, url: str) -> None:
        """Count the host and port of ``url`` as one of the crawl's own sites."""
        site = host_port_of(url)
        if site:
            self.sites.add(site)

    def is_own_url(self, url: str) -> bool:
        """Tell whether a URL is on one of the crawl's own sites."""
        return host_port_of(url) in self.sites

    async def allowed_address(
        self, host: str, port: int, scheme: str = "http"
    ) -> tuple[str | None, str]:
        """Return the address to connect to, or ``None`` and the reason it is refused."""
        own_site = site_key(scheme, host, port) in self.sites
        if not own_site and not self.other_hosts:
            return None, "other_host"
        addresses = await self.resolver(host, port)
        if not addresses:
            return None, "unresolved"
        if own_site:
            return addresses[0], "own_site"
        if any(is_internal_address(address) for address in addresses):
            return None, "private_address"
        return addresses[0], "public"


class ConfiningProxy:
    """An HTTP proxy on 127.0.0.1 that lets Chromium reach only what ``confinement`` allows.

    Each client connection carries one request (``Connection: close`` both ways), so every
    request is checked; CONNECT tunnels (https, wss) are checked by their target and refused when
    they open with a plain WebSocket handshake. ``on_refused(reason)`` counts each refusal,
    ``on_allowed(destination)`` each connection opened (``own_site`` or ``public``).
    """

    def __init__(
        self,
        confinement: Confinement,
        on_refused: Callable[[str], None],
        on_allowed: Callable[[str], None],
    ) -> None:
        self.confinement = confinement
        self.on_refused = on_refused
        self.on_allowed = on_allowed
        self.server: asyncio.Server | None = None
        self.connections: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Start listening on a free loopback port; return the proxy's ``http://`` address."""
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        """Stop listening and drop the open connections."""
        if self.server is not None:
            self.server.close()
            for task in list(self.connections):
                task.cancel()
            await asyncio.gather(*self.connections, return_exceptions=True)
            self.server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        try:
            await self._proxy(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except asyncio.CancelledError:
            # Dropped by ``close``: the handler ends as returned, since Python 3.11's stream
            # callback asks a cancelled handler for its exception and logs the CancelledError.
            pass
        finally:
            self.connections.discard(task)
            writer.close()

    async def _proxy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(_read_head(reader), _HEAD_TIMEOUT)
        request_line, headers = _split_head(head)
        parts = request_line.split(b" ")
        if len(parts) != 3:
            return await self._refuse(writer, "malformed", 400)
        method, target, version = parts
        if method == b"CONNECT":
            return await self._tunnel(target.decode("latin-1"), reader, writer)
        url = urlsplit(target.decode("latin-1"))
        if url.scheme not in ("http", "ws") or not url.hostname:
            return await self._refuse(writer, "scheme", 400)
        if any(name == b"upgrade" and b"websocket" in value.lower() for name, value in headers):
            return await self._refuse(writer, "websocket", 403)
        if any(name == b"transfer-encoding" for name, _ in headers):
            return await self._refuse(writer, "malformed", 411)
        port = url.port or (443 if url.scheme == "wss" else 80)
        address, reason = await self.confinement.allowed_address(url.hostname, port, url.scheme)
        if address is None:
            logger.debug("rendering: refused %s:%d (%s)", url.hostname, port, reason)
            return await self._refuse(writer, reason, 403)
        self.on_allowed(reason)
        upstream_reader, upstream_writer = await asyncio.wait_for(
            asyncio.open_connection(address, port), _CONNECT_TIMEOUT
        )
        try:
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            lines = [b" ".join((method, path.encode("latin-1"), version))]
            lines += [name + b": " + value for name, value in headers if name not in _HOP_BY_HOP]
            lines.append(b"Connection: close")
            upstream_writer.write(b"\r\n".join(lines) + b"\r\n\r\n")
            length = next((value for name, value in headers if name == b"content-length"), b"0")
            await _copy_exactly(reader, upstream_writer, int(length) if length.isdigit() else 0)
            response_head = await asyncio.wait_for(_read_head(upstream_reader), _HEAD_TIMEOUT)
            status_line, response_headers = _split_head(response_head)
            kept = [name + b": " + value for name, value in response_headers if name not in
                    _HOP_BY_HOP - {b"upgrade"}]  # fmt: skip
            writer.write(b"\r\n".join([status_line, *kept, b"Connection: close"]) + b"\r\n\r\n")
            await _copy_to_end(upstream_reader, writer)
        finally:
            upstream_writer.close()

    async def _tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        url = urlsplit(f"//{target}")
        try:
            port = url.port
        except ValueError:
            port = None
        if not url.hostname or port is None:
            return await self._refuse(writer, "malformed", 400)
        address, reason = await self.confinement.allowed_address(url.hostname, port, "https")
        if address is None:
            logger.debug("rendering: refused a tunnel to %s:%d (%s)", url.hostname, port, reason)
            return await self._refuse(writer, reason, 403)
        self.on_allowed(reason)
        upstream_reader, upstream_writer = await asyncio.wait_for(
            asyncio.open_connection(address, port), _CONNECT_TIMEOUT
        )
        try:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            first = await reader.read(_CHUNK)
            if first[:4] == b"GET " and b"websocket" in first.lower():
                self.on_refused("websocket")
                return
            upstream_writer.write(first)
            await asyncio.gather(
                _copy_to_end(reader, upstream_writer), _copy_to_end(upstream_reader, writer)
            )
        finally:
            upstream_writer.close()

    async def _refuse(self, writer: asyncio.StreamWriter, reason: str, status: int) -> None:
        self.on_refused(reason)
        writer.write(
            f"HTTP/1.1 {status} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > _MAX_HEAD_BYTES:
        raise asyncio.LimitOverrunError("head too long", len(head))
    return head


def _split_head(head: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    first, *rest = head.rstrip(b"\r\n").split(b"\r\n")
    headers = []
    for line in rest:
        name, _, value = line.partition(b":")
        headers.append((name.strip().lower(), value.strip()))
    return first, headers


async def _copy_exactly(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    while n > 0:
        chunk = await reader.read(min(n, _CHUNK))
        if not chunk:
            break
        writer.write(chunk)
        await writer.drain()
        n -= len(chunk)


async def _copy_to_end(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
    finally:
        if writer.can_write_eof():
            with contextlib.suppress(OSError):
                writer.write_eof()
