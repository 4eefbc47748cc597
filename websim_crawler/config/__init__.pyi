"""Names of the package, imported when first used (the stub ``lazy_loader`` reads)."""

from .archive import ArchiveParams
from .crawl import CrawlParams
from .distributed import DistributedParams, RedisKeys
from .pool import PoolParams
from .reliability import ReliabilityParams
from .render import RenderParams
from .service import ServiceParams, is_loopback
from .websim import (
    InputParams,
    ItemFieldParams,
    WebsimConfig,
    check_setting_names,
    declared_setting_fields,
    setting_names,
    websim_config,
)

__all__ = [
    "ArchiveParams",
    "CrawlParams",
    "DistributedParams",
    "InputParams",
    "ItemFieldParams",
    "PoolParams",
    "RedisKeys",
    "ReliabilityParams",
    "RenderParams",
    "ServiceParams",
    "WebsimConfig",
    "check_setting_names",
    "declared_setting_fields",
    "is_loopback",
    "setting_names",
    "websim_config",
]
