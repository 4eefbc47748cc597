"""Web archives, the pure side: ``reading`` takes the HTML pages out of WARC files and WACZ
packages; ``records`` builds the WARC records one fetch leaves; ``files`` names, rotates and
repairs the files they go in. The crawl's writer (a downloader middleware and its thread) is the
adapter room ``websim_crawler.archive``. See docs/web-archives.md.
"""
