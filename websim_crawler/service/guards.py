"""ASGI guards in front of the service: the token on every request, the size of every body.

Pure ASGI middleware (no framework needed), so they hold for any route and any ASGI server.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _plain_response(
    send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _json_error(reason: str, message: str) -> str:
    import orjson

    return orjson.dumps({"error": reason, "message": message}).decode()


def token_given(authorization: str, token: str) -> bool:
    """Tell whether an ``Authorization`` header carries ``token``: ``Bearer TOKEN``, or Basic
    credentials whose password is the token (what a browser sends after its login prompt)."""
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value, validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.encode(), token.encode())


class TokenGuard:
    """Refuse (401) every HTTP request that does not carry the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            authorization = headers.get(b"authorization", b"").decode("latin-1")
            if not token_given(authorization, self.token):
                message = "give the token: Authorization: Bearer TOKEN"
                await _plain_response(
                    send,
                    401,
                    _json_error("unauthorized", message),
                    [(b"www-authenticate", b'Basic realm="websim", charset="UTF-8"')],
                )
                return
        await self.app(scope, receive, send)


class RequestTooLarge(Exception):
    """A request body passed its bound while it was read (the app answers it with 413)."""


class BodyLimit:
    """Refuse (413) a request body over ``max_bytes``: by its ``Content-Length`` before it is
    read, else once the bytes read pass the bound (a chunked body)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        read = 0
        started = False

        async def bounded_receive() -> Message:
            nonlocal read
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > self.max_bytes:
                    raise RequestTooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded_receive, watched_send)
        except RequestTooLarge:
            if started:
                raise
            await self._refuse(send)

    def message(self) -> str:
        """Return why a request was refused."""
        return f"the request has over {self.max_bytes:,} bytes (bounded by WEBSIM_MAX_PAGE_BYTES)"

    async def _refuse(self, send: Send) -> None:
        await _plain_response(send, 413, _json_error("too_large", self.message()))
