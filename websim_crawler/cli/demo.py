"""``websim demo``: serve the bundled search site, crawl it with ``deepweb``, cluster the records.

The crawl is a real ``scrapy crawl deepweb`` in a subprocess, with the clustering pipeline on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from websim_crawler.cli._settings import (
    add_setting_flags,
    add_settings_option,
    command_config,
    command_settings,
)
from websim_crawler.core.io import check_output_path, iter_jsonl
from websim_crawler.demo.site import DemoSite
from websim_crawler.errors import ConfigError, OutputPathError, WebsimError

DEMO_QUERIES = ("astronomy", "bread", "beekeeping", "cycling", "volcanoes")
DEMO_OUTPUTS = ("WEBSIM_CLUSTERS_OUTPUT", "WEBSIM_CLUSTERS_HTML")  # set by the demo itself
_CRAWL_TIMEOUT_SECONDS = 600


class DemoError(WebsimError):
    """The demo crawl failed; the message says where its log is."""


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="crawl the bundled demo search site and cluster its records",
        description=(
            "Start the bundled demo search site on 127.0.0.1, crawl it with "
            "'scrapy crawl deepweb' (search form, result pages, records), cluster the record "
            "pages with fuzzy c-means and print where the crawl feed, the clusters JSON and the "
            "HTML report are."
        ),
    )
    parser.add_argument(
        "-o",
        "--output",
        default="demo-output",
        help="folder for the results (default: %(default)s)",
    )
    add_setting_flags(parser, "demo")
    add_settings_option(parser, "WEBSIM_CLUSTERS_N=5 (passed on to the crawl)")
    parser.add_argument(
        "--render",
        action="store_true",
        help="crawl the site's JavaScript search (/js/) with render=1: results that scripts add "
        "late and one by one, a script 'Next' button",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="only serve the demo site (print its address) until interrupted, to crawl it by hand",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve the demo site and crawl it (or only serve it with ``--serve``)."""
    command_config(args, "demo")  # a bad setting stops here, before the site starts
    settings = command_settings(args, "demo")
    for name in DEMO_OUTPUTS:
        if name in settings:
            raise ConfigError(f"websim demo writes {name} into -o FOLDER; leave it unset")
    with DemoSite() as site:
        if args.serve:
            print(f"demo site at {site.url} (Ctrl-C stops it)", flush=True)
            while True:
                time.sleep(3600)
        start_url = site.url + "js/" if args.render else site.url
        return crawl_demo(start_url, Path(args.output), settings, render=args.render)


def crawl_demo(
    start_url: str, output: Path, settings: dict[str, object], *, render: bool = False
) -> int:
    """Crawl ``start_url`` with deepweb into ``output`` and print a summary of the clusters."""
    output = output.absolute()
    if output.exists() and not output.is_dir():
        raise OutputPathError(f"-o {output} is a file: give a folder for the demo's results")
    pages = output / "pages.jsonl"
    clusters = output / "clusters.json"
    report = output / "clusters.html"
    log = output / "crawl.log"
    for result in (pages, clusters, report, log):
        check_output_path(result)  # the folder itself is made, not its parents
    for stale in (pages, clusters, report, log):  # the log of this run only
        stale.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "deepweb",
        "-a",
        f"start_url={start_url}",
        "-a",
        "queries=" + ",".join(DEMO_QUERIES),
        "-a",
        "follow=1",
        "-O",
        str(pages),
        "-s",
        f"WEBSIM_CLUSTERS_OUTPUT={clusters}",
        "-s",
        f"WEBSIM_CLUSTERS_HTML={report}",
        *(part for name, value in settings.items() for part in ("-s", f"{name}={value}")),
        "-s",
        f"LOG_FILE={log}",
        "-s",
        "LOG_LEVEL=INFO",
        "-a",
        f"render={int(render)}",
    ]
    print(f"demo site at {start_url}", flush=True)
    print(
        f"crawling it: scrapy crawl deepweb -a queries={','.join(DEMO_QUERIES)} -a follow=1"
        + (" -a render=1" if render else "")
    )
    environment = dict(os.environ, SCRAPY_SETTINGS_MODULE="websim_crawler.settings")
    started = time.monotonic()
    try:
        finished = subprocess.run(
            command, cwd=output, env=environment, timeout=_CRAWL_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise DemoError(f"the crawl took over {_CRAWL_TIMEOUT_SECONDS} s; see {log}") from exc
    if finished.returncode != 0 or not clusters.is_file():
        raise DemoError(f"the crawl failed (exit code {finished.returncode}); see {log}")
    kinds: dict[str, int] = {}
    for page in iter_jsonl(pages):
        kinds[str(page.get("kind"))] = kinds.get(str(page.get("kind")), 0) + 1
    print(
        f"crawled {sum(kinds.values())} pages ("
        + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
        + f") in {time.monotonic() - started:.1f} s"
    )
    result = json.loads(clusters.read_text(encoding="utf-8"))
    print(f"{len(result['clusters'])} clusters of record pages:")
    for cluster in result["clusters"]:
        terms = ", ".join(str(keyword["term"]) for keyword in cluster["top_keywords"][:6])
        print(f"  cluster {cluster['id']}: {cluster['size']:2d} pages  {terms}")
    print(f"crawl feed:   {pages}")
    print(f"clusters:     {clusters}")
    print(f"HTML report:  {report}")
    print(f"crawl log:    {log}")
    return 0
