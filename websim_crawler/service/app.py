"""The match service as an ASGI application (Starlette): routes, request parsing, errors.

``create_app`` loads the index (an unreadable index fails here, before anything listens) and
returns the app wrapped in its guards: the token (``WEBSIM_SERVE_TOKEN``) on every request when
set, a refusal of every request reaching the app on an address beyond loopback without one
(whichever ASGI server runs it), and the request bound. The worker pool starts with the app's
lifespan and stops with it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from websim_crawler.config import WebsimConfig, is_loopback
from websim_crawler.core.similarity.params import QUESTION_NAMES
from websim_crawler.errors import ConfigError, PageError
from websim_crawler.service.guards import (
    ASGIApp,
    BodyLimit,
    Receive,
    RequestTooLarge,
    Scope,
    Send,
    TokenGuard,
)
from websim_crawler.service.matching import MatchService
from websim_crawler.service.openapi import openapi_description
from websim_crawler.service.pages import PostedPage, posted_page

QUESTIONS = ("auto", *QUESTION_NAMES)
# Form fields beside the page and the screenshot: url, question, top.
_MAX_FORM_FIELDS = 8
# Room for a request's headers of parts and its fields beside the page and the screenshot.
_REQUEST_OVERHEAD = 64 * 1024


def max_request_bytes(config: WebsimConfig) -> int:
    """Return a request's bound: a page and a screenshot of ``WEBSIM_MAX_PAGE_BYTES`` each, in
    base64 (JSON), and the fields beside them."""
    return 2 * config.analysis.max_page_bytes * 4 // 3 + _REQUEST_OVERHEAD


class RequestError(Exception):
    """A request the service cannot answer: its HTTP status, a reason slug and a message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


def _page_error(exc: PageError) -> RequestError:
    statuses = {"too_large": 413, "duplicate_url": 409}
    return RequestError(statuses.get(exc.reason, 422), exc.reason, str(exc))


def _error_response(status: int, reason: str, message: str) -> JSONResponse:
    return JSONResponse({"error": reason, "message": message}, status_code=status)


def _text(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RequestError(422, "bad_request", f"{name} must be a string")
    return value


def _top(value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        top = int(value)
    except (TypeError, ValueError):
        top = 0
    if not 1 <= top <= 1000:
        raise RequestError(422, "bad_request", "top must be an integer from 1 to 1000")
    return top


def _question(value: Any) -> str | None:
    question = _text(value, "question")
    if question is not None and question not in QUESTIONS:
        raise RequestError(422, "bad_request", f"question must be one of {', '.join(QUESTIONS)}")
    return question


def _base64(value: Any, name: str) -> bytes | None:
    text = _text(value, name)
    if text is None:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RequestError(422, "bad_request", f"{name} is not base64: {exc}") from exc


async def _file_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, UploadFile):
        return await value.read()
    return str(value).encode("utf-8")


async def read_request(
    request: Request, config: WebsimConfig
) -> tuple[PostedPage, str | None, int | None]:
    """Return the page a request posts, the question and the number of matches it asks for.

    Raw body (HTML, or a WARC/WACZ told by content), ``multipart/form-data`` (``page``,
    ``screenshot`` files and ``url``, ``question``, ``top`` fields) or JSON (``html`` or
    ``page_base64``, ``screenshot_base64``, ``url``, ``question``, ``top``); the query string
    may give ``url``, ``question`` and ``top``.
    """
    fields: dict[str, Any] = dict(request.query_params)
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    screenshot: bytes | None = None
    if media_type == "multipart/form-data":
        limit = config.analysis.max_page_bytes
        async with request.form(
            max_files=2, max_fields=_MAX_FORM_FIELDS, max_part_size=limit
        ) as form:
            body = await _file_bytes(form.get("page")) or b""
            screenshot = await _file_bytes(form.get("screenshot")) or None
            fields.update({key: form[key] for key in ("url", "question", "top") if key in form})
    elif media_type == "application/json":
        try:
            data = orjson.loads(await request.body())
        except orjson.JSONDecodeError as exc:
            raise RequestError(422, "bad_request", f"the body is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise RequestError(422, "bad_request", "the body is not a JSON object")
        html = _text(data.get("html"), "html")
        body = (
            html.encode("utf-8")
            if html is not None
            else _base64(data.get("page_base64"), "page_base64") or b""
        )
        screenshot = _base64(data.get("screenshot_base64"), "screenshot_base64")
        fields.update({key: data[key] for key in ("url", "question", "top") if key in data})
    else:
        body = await request.body()
    try:
        page = await run_in_threadpool(
            posted_page, body, _text(fields.get("url"), "url"), screenshot, config
        )
    except PageError as exc:
        raise _page_error(exc) from exc
    return page, _question(fields.get("question")), _top(fields.get("top"))


def _routes(service: MatchService) -> list[Route]:
    config = service.config

    async def match(request: Request) -> Response:
        page, question, top = await read_request(request, config)
        try:
            line = await run_in_threadpool(service.match, page, question, top)
        except PageError as exc:
            raise _page_error(exc) from exc
        return Response(orjson.dumps(line), media_type="application/json")

    async def add_reference(request: Request) -> Response:
        page, _question_asked, _top_asked = await read_request(request, config)
        try:
            url = await run_in_threadpool(service.add_reference, page)
        except PageError as exc:
            raise _page_error(exc) from exc
        return JSONResponse({"added": url, "references": len(service)}, status_code=201)

    async def health(_request: Request) -> Response:
        return JSONResponse({"references": len(service)})

    async def openapi(_request: Request) -> Response:
        return JSONResponse(openapi_description())

    async def home(_request: Request) -> Response:
        page = resources.files("websim_crawler.service").joinpath("static/index.html")
        return HTMLResponse(page.read_text(encoding="utf-8"))

    return [
        Route("/", home, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/match", match, methods=["POST"]),
        Route("/references", add_reference, methods=["POST"]),
    ]


class LoopbackOnly:
    """Refuse (403) every request that reached the app on an address beyond loopback: the rule
    of ``websim serve`` (no token, loopback only) under whichever ASGI server runs the app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if scope["type"] == "http" and server and not is_loopback(str(server[0])):
            response = _error_response(
                403, "token_required", "this service has no token: it answers on loopback only"
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(config: WebsimConfig | None = None, index: str | Path | None = None) -> ASGIApp:
    """Return the match service as an ASGI app: the index loaded (``index``, else
    ``WEBSIM_MATCH_INDEX``), the worker pool started with the lifespan."""
    config = config or WebsimConfig()
    service = MatchService(config, index)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(service.start)
        try:
            yield
        finally:
            await run_in_threadpool(service.close)

    async def request_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestError)
        return _error_response(exc.status, exc.reason, str(exc))

    starlette = Starlette(routes=_routes(service), lifespan=lifespan)
    bound = BodyLimit(starlette, max_request_bytes(config))

    async def too_large(_request: Request, _exc: Exception) -> Response:
        # Answered inside the app too: its error middleware would answer 500 first.
        return _error_response(413, "too_large", bound.message())

    starlette.add_exception_handler(RequestError, request_error)
    starlette.add_exception_handler(RequestTooLarge, too_large)
    starlette.state.service = service
    token = config.service.token
    return TokenGuard(bound, token) if token else LoopbackOnly(bound)


def app_from_environment() -> ASGIApp:
    """Return ``create_app`` of the ``WEBSIM_*`` settings in the environment (for an ASGI
    server's factory: ``uvicorn --factory websim_crawler.service:app_from_environment``)."""
    settings = {name: value for name, value in os.environ.items() if name.startswith("WEBSIM_")}
    config = WebsimConfig.from_settings(settings)
    if not config.matching.index:
        raise ConfigError("set WEBSIM_MATCH_INDEX to the index file the service answers from")
    return create_app(config)
