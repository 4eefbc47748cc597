"""The match service: a reference index kept in memory, answering pages over HTTP.

``create_app(config, index)`` returns an ASGI application (Starlette) that any ASGI server runs;
``websim serve`` runs it with uvicorn. ``app_from_environment`` builds it from the ``WEBSIM_*``
environment variables, for a server's factory option. ``MatchService`` is the same without HTTP.
Needs the ``serve`` extra (``pip install websim-crawler[serve]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from websim_crawler._imports import require

if TYPE_CHECKING:
    from websim_crawler.service.app import app_from_environment, create_app
    from websim_crawler.service.matching import MatchService

__all__ = ["MatchService", "app_from_environment", "create_app"]


def __getattr__(name: str) -> Any:
    if name in ("create_app", "app_from_environment"):
        for module in ("starlette", "python_multipart"):
            require(module)
        from websim_crawler.service import app

        return getattr(app, name)
    if name == "MatchService":
        from websim_crawler.service.matching import MatchService

        return MatchService
    raise AttributeError(name)
