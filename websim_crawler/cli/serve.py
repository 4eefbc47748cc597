"""``websim serve --index INDEX``: answer pages over HTTP from an index kept in memory.

``POST /match`` a page (HTML, or a WARC/WACZ holding it, with an optional screenshot) for the
line ``websim match`` prints for it; ``POST /references`` adds one to the index file; ``GET
/openapi.json`` describes the API and ``GET /`` is a page to try it in a browser. Listens on
127.0.0.1 by default; any other address needs ``--token``. The app is
``websim_crawler.service.create_app``, for any ASGI server.
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any

from websim_crawler.cli._settings import add_setting_flags, add_settings_option, command_config
from websim_crawler.errors import ConfigError


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="serve websim match over HTTP from an index kept in memory",
        description="Answer POST /match with the matches websim match prints; POST /references "
        "adds a reference; GET /openapi.json, GET / (a page to try it). Loopback by default; "
        "any other address needs --token.",
    )
    add_setting_flags(parser, "serve")
    add_settings_option(parser, "WEBSIM_ANALYSIS_WORKERS=4")
    parser.set_defaults(func=run)


def listening_socket(host: str, port: int) -> socket.socket:
    """Return a socket listening on ``host:port`` (port 0: a free one), for the server."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)  # connections wait in the backlog until the server takes them
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 2 on a refused address (no token) or an unreadable index."""
    config = command_config(args, "serve")
    config.service.check_exposure()  # before the index is read or anything is bound
    if not config.matching.index:
        raise ConfigError("give the index: --index INDEX (or -s WEBSIM_MATCH_INDEX=INDEX)")
    import uvicorn

    from websim_crawler.service import create_app

    app = create_app(config)
    sock = listening_socket(config.service.host, config.service.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"websim serve: {config.matching.index} on http://{shown}:{port}/ "
        f"({'token required' if config.service.token else 'no token: loopback only'})",
        file=sys.stderr,
        flush=True,
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    server.run(sockets=[sock])
    return 0
