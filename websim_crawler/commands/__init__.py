"""Scrapy commands of the project (``COMMANDS_MODULE``): ``crawl`` with meaningful exit codes."""
