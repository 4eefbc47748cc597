"""Running websim on many machines: scrapy-redis workers sharing one frontier, seeds in Redis.

``-s WEBSIM_REDIS_URL=redis://host:6379/0`` switches the ``deepweb`` and ``site`` spiders into
workers (see :mod:`websim_crawler.distributed.wiring`); ``websim seed`` pushes their seeds.
Nothing here imports scrapy-redis until the switch is on. Its settings are ``config.distributed``.
"""

from __future__ import annotations

WORKER_LOCAL = "websim_worker_local"
"""Request meta key: ``True`` keeps a request on its worker, out of the shared queue."""

BUDGET = "websim_budget"
"""Request meta key: ``[name, limit]``, a page budget shared by all workers (counted in Redis)."""

__all__ = ["BUDGET", "WORKER_LOCAL"]
