"""Imported by the analysis pool's fork server (``set_forkserver_preload``): the analysis is loaded
and warmed there once, so every worker forked from the server starts warm."""

from websim_crawler.workers.tasks import warm_up

warm_up()
