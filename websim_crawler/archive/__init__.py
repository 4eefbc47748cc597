"""Web archives: the crawl keeps what it fetched as WARC/1.1 files (``WEBSIM_WARC_OUTPUT``).

- ``middleware.WarcWriterMiddleware``: the downloader middleware, enabled by the add-on;
- ``writer.WarcWriterThread``: builds, compresses, writes and syncs records off the reactor;
- ``core.archive.records`` (pure): what one fetch leaves in a WARC file, built by warcio;
- ``core.archive.files`` (pure): file names that sort, rotation by size, repair of a file a
  kill left open; ``core.archive.reading`` reads archives back (``websim`` commands).

See docs/web-archives.md.
"""
