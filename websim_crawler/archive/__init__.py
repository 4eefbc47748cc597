"""Web archives: the crawl keeps what it fetched as WARC/1.1 files (``WEBSIM_WARC_OUTPUT``).

- ``middleware.WarcWriterMiddleware``: the downloader middleware, enabled by the add-on;
- ``writer.WarcWriterThread``: builds, compresses, writes and syncs records off the reactor;
- ``records``: what one fetch leaves in a WARC file, built by warcio;
- ``files``: file names that sort, rotation by size, repair of a file a kill left open.

See docs/web-archives.md.
"""
