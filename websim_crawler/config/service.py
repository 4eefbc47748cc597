"""Settings of the match service (``websim serve``): where it listens and the token it asks for."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from websim_crawler.core.params import setting, validate
from websim_crawler.errors import ConfigError

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` (an address or ``localhost``) is reachable only from this machine."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:  # a host name other than localhost: it may resolve to anything
        return False


@dataclass(frozen=True)
class ServiceParams:
    """Where the match service listens; a token is required on any address but loopback."""

    host: str = setting(
        "127.0.0.1",
        "WEBSIM_SERVE_HOST",
        "address websim serve listens on; any address but loopback (127.0.0.0/8, ::1, "
        "localhost) needs WEBSIM_SERVE_TOKEN",
    )
    port: int = setting(
        8000,
        "WEBSIM_SERVE_PORT",
        "port websim serve listens on (0: any free port)",
        minimum=0,
        maximum=65535,
    )
    token: str | None = setting(
        None,
        "WEBSIM_SERVE_TOKEN",
        "bearer token every request to the match service must carry (Authorization: Bearer "
        "TOKEN) when set; required to listen beyond loopback",
    )

    def __post_init__(self) -> None:
        validate(self)

    def check_exposure(self) -> None:
        """Raise ``ConfigError`` when the service would listen beyond loopback without a token."""
        if not is_loopback(self.host) and not self.token:
            raise ConfigError(
                f"WEBSIM_SERVE_HOST: {self.host} is reachable from other machines: set a token "
                "(--token, or WEBSIM_SERVE_TOKEN) or listen on 127.0.0.1"
            )
