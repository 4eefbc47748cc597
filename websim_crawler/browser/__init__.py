"""The one browser module: every rendering path (the crawl's ``render=1`` through
scrapy-playwright, ``websim compare --render`` through plain Playwright) launches, confines,
settles, captures and bounds pages here.

- ``confine``: the address rules and the confining proxy every browser request goes through;
- ``page``: a page's guard (routes, popups, downloads, bytes), the settle wait and the capture;
- ``watchdog``: Chromium's memory cap;
- ``session``: launch and context options, ``Rendering`` (one browser's state) and
  ``render_documents`` for commands.

Its settings are ``config.render`` (``RenderParams``); everything here needs the ``[render]``
extra.
"""
