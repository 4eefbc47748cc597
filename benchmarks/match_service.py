"""One page's answer from a warm ``websim serve`` against ``websim match`` in a fresh process.

Builds an index of the test site's pages (and ``--copies`` renamed copies of them, so the index
has more references), starts ``websim serve`` on 127.0.0.1 (a free port), posts one page
``--requests`` times one after another and prints the latency's median and p99; then runs
``websim match`` on the same page ``--runs`` times and prints its median wall time, and the
ratio. Both answers are checked to be the same line.

    python benchmarks/match_service.py --copies 50 --requests 200 --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SITE = Path(__file__).resolve().parents[1] / "tests" / "support" / "site"
WEBSIM = [sys.executable, "-m", "websim_crawler"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--copies", type=int, default=50, help="renamed copies of each page")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="websim-bench-serve-"))
    (folder / "refs").mkdir()
    pages = sorted(SITE.glob("*.html"))
    for copy in range(args.copies + 1):
        for page in pages:
            (folder / "refs" / f"{copy}-{page.name}").write_bytes(page.read_bytes())
    subprocess.run([*WEBSIM, "index", "refs", "-o", "refs.idx"], cwd=folder, check=True)
    query = folder / "query.html"
    query.write_bytes((SITE / "help.html").read_bytes().replace(b"Help", b"Hilfe"))
    server = subprocess.Popen(
        [*WEBSIM, "serve", "--index", "refs.idx", "--port", "0"],
        cwd=folder,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        base = banner.split(" on ", 1)[1].split("/ ", 1)[0]
        body = query.read_bytes()
        url = f"{base}/match?url={query.as_uri()}"
        latencies = []
        answer = b""
        for number in range(args.requests + 1):
            started = time.perf_counter()
            with urllib.request.urlopen(urllib.request.Request(url, data=body)) as response:
                answer = response.read()
            if number:  # the first request waits for the workers to start
                latencies.append(time.perf_counter() - started)
    finally:
        server.terminate()
        server.wait(60)
    walls = []
    line = ""
    for _ in range(args.runs):
        started = time.perf_counter()
        finished = subprocess.run(
            [*WEBSIM, "match", "query.html", "--index", "refs.idx"],
            cwd=folder,
            capture_output=True,
            text=True,
        )
        walls.append(time.perf_counter() - started)
        line = finished.stdout.strip()
    assert json.loads(answer) == json.loads(line), (answer, line)
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    median = statistics.median(latencies)
    wall = statistics.median(walls)
    references = len(pages) * (args.copies + 1)
    print(f"references: {references}; one page ({len(body):,} bytes), answers identical")
    print(
        f"warm websim serve, {args.requests} requests: median {median * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms"
    )
    print(f"websim match, fresh process, {args.runs} runs: median {wall * 1000:.0f} ms wall")
    print(f"ratio (websim match / warm service, medians): {wall / median:.0f}x")


if __name__ == "__main__":
    main()
