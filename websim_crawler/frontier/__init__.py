"""The crawl frontier on one machine, and what a JOBDIR keeps to resume.

- ``jobdir_scheduler.JobdirScheduler``: Scrapy's scheduler with a lease on each request, so a
  killed crawl resumed from its JOBDIR fetches again what was in flight;
- ``release.release_when_done``: gives a request's lease back once the engine is done with it
  (used by this scheduler and by the Redis one in ``distributed.scheduler``);
- ``jobdir_state``: the components' own state saved in the JOBDIR (``load_state``,
  ``save_state``).
"""
