"""Pages as records for the reference index's commands: ``websim index`` and ``websim match``.

Sources are read by the one reader, ``cli._inputs.InputReader``, told by their content as every
command reads them: saved pages (a screenshot is the PNG of the same name beside a page, when
there is one), folders, glob patterns, http(s) URLs, crawl feeds and WARC/WACZ archives (a
page per capture). With ``render`` the pages given as files or URLs are rendered and
screenshotted by the browser module as ``websim compare --render`` renders them. The reader and
the stage code are imported when the pages are taken, not for ``--help`` (start-up).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from websim_crawler.config import WebsimConfig

if TYPE_CHECKING:
    from websim_crawler.cli._stages import Stage


def add_page_sources(parser: argparse.ArgumentParser) -> None:
    """Add the pages a command reads (``PATH_OR_URL...``) and ``--render``."""
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="PATH_OR_URL",
        help="told by their content: HTML files (a PNG of the same name beside one is its "
        "screenshot), crawl feeds, WARC/WACZ archives (a page per capture), folders or glob "
        "patterns of them, http(s) URLs",
    )
    parser.add_argument(
        "--render", action="store_true", help="render and screenshot the pages (Chromium)"
    )


def take_pages(
    stage: Stage, args: argparse.Namespace, config: WebsimConfig, command: str
) -> tuple[list[str], str]:
    """Prepare every page of ``args.sources`` for the similarity stage in the worker pool and
    give it to ``stage`` (a page that cannot be read is skipped as ``unreadable_<reason>``);
    return the problems met, one line each, and the count line of the reading (the command
    prints it once its work succeeded, so that an error stays one line).

    Raise ``InputFormatError`` when no source gave a single page (an empty feed, a binary
    file): the command writes nothing then.
    """
    from websim_crawler.cli._inputs import InputReader
    from websim_crawler.cli._settings import progress
    from websim_crawler.cli._stages import take_records
    from websim_crawler.core.stages import StagePlan

    html_field = config.items.html_field
    reader = InputReader(args.sources, config, html_field, screenshots=True)
    if args.render:
        from websim_crawler.cli.compare import render_pages

        locations = reader.inputs.of_kind("html", "url")
        if locations:  # feeds and archives are read as they are
            rendered, _counters = render_pages(locations, config)
            reader.rendered = dict(zip(locations, rendered, strict=True))
    plan = StagePlan(config.analysis, html_field=html_field, similarity=config.similarity)
    take_records(stage, progress(reader, args, desc="pages", unit="page"), config, plan)
    reader.check_read()
    for reason, count in sorted(reader.skipped.items()):
        # Pages the reader left out; an undecodable one reached the stage (no HTML), counted there.
        if reason not in ("duplicate_url", "cut_last_line") and reason[:12] != "undecodable_":
            for _ in range(count):
                stage.skip(f"unreadable_{reason}")
    # Told, as extract tells them; a PNG beside a page is its screenshot, not such a file.
    others = reader.inputs.not_inputs + reader.inputs.not_regular - reader.screenshots_read
    if others > 0:
        print(
            f"websim {command}: {others} file(s) in folders are no page, feed or archive: not read",
            file=sys.stderr,
        )
    return reader.problems(), reader.summary()
