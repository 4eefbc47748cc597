"""Two renders of the same pages: a held-out set for the default verdict (issue 15).

Sites: one page per registered domain of ``article-extraction-benchmark`` and
``trafilatura-eval`` (``../shared/datasets``; none of big9's sites, no web.archive.org capture,
pages of at least 2 KB), a seeded sample of ``--captures`` sites. Each page is written under
``--cache-dir``, served by an HTTP server on 127.0.0.1 that this script starts, and rendered twice
by Chromium through the browser module (``render_documents``, the path of ``websim compare
--render``): scripts on at 1280x800 (the default context) and scripts off at 1024x768. Each
render keeps its DOM HTML (with layout boxes) and its screenshot, cached under ``--cache-dir``.

Confinement: the confining proxy's resolver knows 127.0.0.1 only, so every other host is refused
as ``unresolved`` without being looked up, and Chromium gets ``--host-resolver-rules`` that map
every other name to NOTFOUND. The blocked requests are counted by reason; a watcher reads
``/proc/net/{tcp,tcp6,udp,udp6}`` every 20 ms during the renders and the run fails if any socket
had a non-loopback peer (that is every socket of this network namespace, not only Chromium's).

Pairs: the two renders of each site (same site) against ``--capture-negatives`` seeded pairs of
different sites (a random render of each). Each pair is scored by ``compare_pages`` with every
default, screenshots included, as ``websim compare A B`` does (no collection IDF), with the pages
known by their URL (a crawl) and as saved files (``file:`` URLs: the page's own stated URL, if
any); per-stage AUC and best F1 are printed for context.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/similarity_captures.py --captures 90
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import http.server
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from extraction import AEB_DIR, load_article_benchmark, load_trafilatura_eval
from similarity_verdict import ScoredPairs, default_verdicts, score_pairs, stage_separation

from websim_crawler.browser.page import RenderedPage
from websim_crawler.browser.session import PageToRender, render_documents
from websim_crawler.config import WebsimConfig
from websim_crawler.config.render import RenderParams
from websim_crawler.core.similarity import PageFeatures
from websim_crawler.core.similarity.comparison import page_features
from websim_crawler.core.urls import registered_domain_of
from websim_crawler.errors import InputFormatError

BIG9_DOMAINS = frozenset(
    [f"{site}.com" for site in ("arstechnica", "bbc", "cnn", "forbes", "foxnews", "latimes")]
    + [f"{site}.com" for site in ("nymag", "nypost", "yahoo")]
    + ["bbc.co.uk"]
)
CONDITIONS: dict[str, dict[str, Any]] = {
    "scripts-on-1280": {},  # CONTEXT_OPTIONS: scripts on, 1280x800
    "scripts-off-1024": {"java_script_enabled": False, "viewport": {"width": 1024, "height": 768}},
}
RENDER_PARAMS = RenderParams(
    chromium_args="--host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'",
    timeout=20.0,
    settle_max=5.0,
)
BATCH = 10  # pages per browser launch (a batch that fails is rendered again page by page)


@dataclass(frozen=True)
class SitePage:
    """The one page of a site: its registered domain, its URL and its saved bytes."""

    site: str
    url: str
    body: bytes


def capture_sites(count: int, seed: int, cache_dir: Path) -> list[SitePage]:
    """Return one page each of ``count`` sites (seeded) that big9 does not have."""
    urls = json.loads((AEB_DIR / "ground-truth.json").read_text(encoding="utf-8"))
    candidates = [(urls[page.key]["url"], page.data) for page in load_article_benchmark(None)]
    candidates += [
        (page.key, page.data) for page in load_trafilatura_eval(cache_dir / "trafilatura", None)
    ]
    by_site: dict[str, list[tuple[str, bytes]]] = {}
    for url, body in candidates:
        site = registered_domain_of(url)
        if site and site not in BIG9_DOMAINS and site != "archive.org" and len(body) >= 2048:
            by_site.setdefault(site, []).append((url, body))
    rng = random.Random(seed)
    chosen = rng.sample(sorted(by_site), min(count, len(by_site)))
    return [SitePage(site, *rng.choice(by_site[site])) for site in sorted(chosen)]


class LoopbackResolver:
    """The confining proxy's resolver: 127.0.0.1 is itself, every other host is unknown."""

    def __init__(self) -> None:
        self.refused: Counter[str] = Counter()  # host -> requests refused, never looked up
        self.answered: Counter[str] = Counter()

    async def __call__(self, host: str, port: int) -> list[str]:
        if host == "127.0.0.1":
            self.answered[f"{host}:{port}"] += 1
            return ["127.0.0.1"]
        self.refused[host] += 1
        return []


def _peer(hex_address: str) -> str | None:
    """Return the peer of a ``/proc/net`` socket line as text; None when not connected."""
    address = bytes.fromhex(hex_address.split(":")[0])
    if not any(address):
        return None
    words = [address[i : i + 4][::-1] for i in range(0, len(address), 4)]
    flat = b"".join(words)
    if len(flat) == 4:
        return ".".join(map(str, flat))
    if flat[:12] == b"\0" * 10 + b"\xff\xff":
        return ".".join(map(str, flat[12:]))
    return ":".join(flat[i : i + 2].hex() for i in range(0, 16, 2))


def is_loopback_peer(peer: str) -> bool:
    """Tell whether a peer written by ``_peer`` is a loopback address."""
    return peer.startswith("127.") or peer == "0000:0000:0000:0000:0000:0000:0000:0001"


def socket_owner(inode: str) -> int | None:
    """Return the process holding the socket ``inode`` (None: closed, or not ours to see)."""
    target = f"socket:[{inode}]"
    for fd_folder in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) == target for fd in fd_folder.iterdir()):
                return int(fd_folder.parent.name)
        except OSError:
            continue
    return None


def descends_from(pid: int, ancestor: int) -> bool:
    """Tell whether process ``pid`` is ``ancestor`` or one of its descendants."""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


class SocketWatcher:
    """Record every socket with a non-loopback peer in this network namespace while running,
    with the process that holds it: this benchmark (Chromium included), another, or unknown."""

    TABLES = ("tcp", "tcp6", "udp", "udp6")

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.sockets: dict[str, tuple[str, str]] = {}  # inode -> (table and peer, owner)
        self.polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SocketWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def owned(self, owner: str) -> list[str]:
        """Return the sockets seen whose owner is ``owner`` (ours, other or unknown)."""
        return [peer for peer, seen_owner in self.sockets.values() if seen_owner == owner]

    def _run(self) -> None:
        while not self._stop.is_set():
            for table in self.TABLES:
                try:
                    lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
                except OSError:
                    continue
                for line in lines:
                    fields = line.split()
                    peer = _peer(fields[2])
                    if peer is None or is_loopback_peer(peer) or fields[9] in self.sockets:
                        continue
                    pid = socket_owner(fields[9])
                    owner = (
                        "unknown" if pid is None
                        else "ours" if descends_from(pid, os.getpid())
                        else "other"
                    )  # fmt: skip
                    self.sockets[fields[9]] = (f"{table} {peer}", owner)
            self.polls += 1
            self._stop.wait(self.interval)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def loopback_server(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on 127.0.0.1 (a free port) and yield its base URL."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@dataclass
class RenderLog:
    """What the renders of one run did: time, pages, blocked requests, sockets seen."""

    seconds: float = 0.0
    rendered: int = 0
    failed: int = 0
    counters: Counter[str] | None = None
    refused_hosts: int = 0
    own_site_requests: int = 0
    non_loopback_sockets: dict[str, list[str]] | None = None  # by owner
    socket_polls: int = 0


def render_batches(
    base: str,
    names: Sequence[str],
    options: Mapping[str, Any],
    resolver: LoopbackResolver,
    counters: Counter[str],
) -> list[RenderedPage | None]:
    """Render the served files ``names`` under ``base``, ``BATCH`` a browser; None: failed."""
    max_bytes = WebsimConfig().analysis.max_page_bytes
    results: list[RenderedPage | None] = []
    for start in range(0, len(names), BATCH):
        batch = names[start : start + BATCH]
        try:
            pages, batch_counters = asyncio.run(
                render_documents(
                    [PageToRender(base + quote(name)) for name in batch],
                    RENDER_PARAMS,
                    max_response_bytes=max_bytes,
                    context_options=options,
                    resolver=resolver,
                )
            )
        except InputFormatError:
            if len(batch) == 1:
                results.append(None)
            else:
                for name in batch:
                    results += render_batches(base, [name], options, resolver, counters)
            continue
        counters.update(batch_counters)
        results.extend(pages)
    return results


def render_offline(
    folder: Path, names: Sequence[str], conditions: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, list[RenderedPage | None]], RenderLog]:
    """Serve ``folder`` on 127.0.0.1 and render its files ``names`` under each condition, with
    nothing but that server reachable; fail if a non-loopback socket was seen meanwhile."""
    log = RenderLog(counters=Counter())
    assert log.counters is not None
    resolver = LoopbackResolver()
    rendered: dict[str, list[RenderedPage | None]] = {}
    start = time.perf_counter()
    with loopback_server(folder) as base, SocketWatcher() as watcher:
        for condition, options in conditions.items():
            pages = render_batches(base, names, options, resolver, log.counters)
            rendered[condition] = pages
            log.rendered += sum(page is not None for page in pages)
            log.failed += sum(page is None for page in pages)
    log.seconds = time.perf_counter() - start
    log.refused_hosts = len(resolver.refused)
    log.own_site_requests = sum(resolver.answered.values())
    log.socket_polls = watcher.polls
    log.non_loopback_sockets = {
        owner: watcher.owned(owner) for owner in ("ours", "other", "unknown")
    }
    if watcher.owned("ours"):
        raise RuntimeError(f"non-loopback sockets of the renders: {watcher.owned('ours')}")
    return rendered, log


def render_captures(
    sites: Sequence[SitePage], cache_dir: Path
) -> tuple[dict[str, Path], RenderLog]:
    """Render every site's page under each condition (cached); return the capture folders."""
    root = cache_dir / "captures"
    served = root / "served"
    folders = {condition: root / condition for condition in CONDITIONS}
    log_file = root / "render-log.json"
    names = [f"{site.site}.html" for site in sites]
    saved = json.loads(log_file.read_text(encoding="utf-8")) if log_file.exists() else {}
    if saved.pop("names", None) == names:  # rendered before (a failed page stays failed)
        return folders, RenderLog(**{**saved, "counters": Counter(saved["counters"])})
    served.mkdir(parents=True, exist_ok=True)
    for site, name in zip(sites, names, strict=True):
        (served / name).write_bytes(site.body)
    rendered, log = render_offline(served, names, CONDITIONS)
    for condition, pages in rendered.items():
        folders[condition].mkdir(exist_ok=True)
        for name, page in zip(names, pages, strict=True):
            if page is not None:
                (folders[condition] / name).write_text(page.html, encoding="utf-8")
                (folders[condition] / name).with_suffix(".png").write_bytes(page.screenshot or b"")
    log_file.write_text(json.dumps({"names": names, **log.__dict__}, indent=1), encoding="utf-8")
    return folders, log


def capture_sets(
    count: int, negatives: int, seed: int, cache_dir: Path
) -> tuple[list[ScoredPairs], RenderLog, int]:
    """Build, render and score the two-render set: as a crawl knows the pages, as saved files."""
    sites = capture_sites(count, seed, cache_dir)
    folders, log = render_captures(sites, cache_dir)
    first_condition, second_condition = CONDITIONS
    rendered = [
        site
        for site in sites
        if all((folders[c] / f"{site.site}.html").exists() for c in CONDITIONS)
    ]
    rng = random.Random(seed)
    site_pairs = [(i, j) for i in range(len(rendered)) for j in range(i + 1, len(rendered))]
    negative_pairs = rng.sample(site_pairs, min(negatives, len(site_pairs)))
    conditions = [
        (rng.choice(list(CONDITIONS)), rng.choice(list(CONDITIONS))) for _ in negative_pairs
    ]
    sets = []
    for known_as in ("URL", "saved file"):
        features: dict[tuple[str, str], PageFeatures] = {}
        for site in rendered:
            for condition in CONDITIONS:
                path = folders[condition] / f"{site.site}.html"
                features[site.site, condition] = page_features(
                    path.read_bytes(),
                    url=site.url if known_as == "URL" else path.resolve().as_uri(),
                    screenshot=path.with_suffix(".png").read_bytes(),
                )
        pairs = [
            (
                features[s.site, first_condition],
                features[s.site, second_condition],
                s.site,
                s.site,
                True,
            )
            for s in rendered
        ]
        pairs += [
            (features[rendered[i].site, c_1], features[rendered[j].site, c_2],
             rendered[i].site, rendered[j].site, False)
            for (i, j), (c_1, c_2) in zip(negative_pairs, conditions, strict=True)
        ]  # fmt: skip
        name = f"two renders of {len(rendered)} sites (pages known by {known_as})"
        sets.append(score_pairs(name, pairs, None))
    return sets, log, len(sites)


def print_render_log(title: str, log: RenderLog) -> None:
    """Print what the renders did, and the confinement check."""
    assert log.counters is not None
    blocked = {k.removeprefix("websim/render/blocked/"): v for k, v in log.counters.items()
               if k.startswith("websim/render/blocked/")}  # fmt: skip
    others = {k: v for k, v in log.counters.items() if not k.startswith("websim/render/blocked/")}
    print(
        f"\n## {title}: {log.rendered} pages rendered in {log.seconds:.0f} s, {log.failed} failed\n"
    )
    print(
        f"- requests refused by the confining proxy, by reason: {blocked} "
        f"({log.refused_hosts} distinct hosts, none looked up); requests to the page server "
        f"on 127.0.0.1: {log.own_site_requests}; other render counters: {others}"
    )
    print(
        f"- sockets with a non-loopback peer seen in {log.socket_polls} polls of /proc/net "
        f"during the renders, by owner (this benchmark and its Chromium, another process, "
        f"closed before it was found): {log.non_loopback_sockets}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", type=int, default=90, help="sites rendered twice")
    parser.add_argument("--capture-negatives", type=int, default=600, help="other-site pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/websim-bench-similarity"))
    args = parser.parse_args(argv)
    sets, log, sites = capture_sets(
        args.captures, args.capture_negatives, args.seed, args.cache_dir
    )
    print_render_log(f"Two renders of {sites} sites ({', '.join(CONDITIONS)})", log)
    default_verdicts(sets)
    for scored in sets:
        stage_separation(scored)
    return 0


if __name__ == "__main__":
    sys.exit(main())
