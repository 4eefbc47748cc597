"""A real database browser to crawl: Datasette serving a SQLite table with full-text search.

The table page has its own search form (``?_search=`` over an FTS5 table), shows ``_size`` rows
a page with a "Next page" link, links each row to its row page by the row's number
(``<a href="/db/docs/17">17</a>``) and links to the same query as JSON, CSV and SQL. The rows
are known, so a crawl's records can be checked against what the application lists.
"""

from __future__ import annotations

import json
import random
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DATASETTE = Path(sys.executable).with_name("datasette")
DATABASE_NAME, TABLE = "db", "docs"
ROW_PATH = f"/{DATABASE_NAME}/{TABLE}/"

_TOPIC_WORDS = {
    "rivers": "river delta estuary current flood bank tributary meander silt channel "
    "floodplain upstream downstream rapids waterfall basin drainage levee canoe ferry",
    "music": "melody harmony chord rhythm tempo violin orchestra choir concert sonata "
    "symphony quartet rehearsal conductor piano guitar lyric chorus opera ballad",
    "gardens": "garden compost seedling pruning hedge orchard trellis greenhouse mulch "
    "perennial tulip rose shovel harvest soil blossom weeding vegetable herb lawn",
}
_COMMON_WORDS = " ".join(
    (
        "the of and a to in is was that for on with as by at from this it are be which or an",
        "have one had were their there been has more also its into only other some could",
    )
).split()


@dataclass(frozen=True)
class Row:
    """One row of the table: its number is its primary key (and its row page's label)."""

    number: int
    title: str
    body: str
    topic: str


def generated_rows(count: int, seed: int = 7) -> list[Row]:
    """Return ``count`` rows of generated sentences, each about one of three topics."""
    chooser = random.Random(seed)
    topics = sorted(_TOPIC_WORDS)
    rows = []
    for number in range(1, count + 1):
        topic = topics[number % len(topics)]
        words = _TOPIC_WORDS[topic].split()
        sentences = []
        for _ in range(chooser.randint(3, 6)):
            sentence = [
                chooser.choice(words) if chooser.random() < 0.45 else chooser.choice(_COMMON_WORDS)
                for _ in range(chooser.randint(8, 14))
            ]
            sentences.append(" ".join(sentence).capitalize() + ".")
        title = f"{chooser.choice(words).capitalize()} {chooser.choice(words)} note {number}"
        rows.append(Row(number, title, " ".join(sentences), topic))
    return rows


def build_database(path: Path, rows: Sequence[Row]) -> Path:
    """Write the rows to a SQLite database with an FTS5 index Datasette searches."""
    with sqlite3.connect(path) as database:
        database.execute(
            f"create table {TABLE} (id integer primary key, title text, body text, topic text)"
        )
        database.executemany(
            f"insert into {TABLE} (id, title, body, topic) values (?, ?, ?, ?)",
            [(row.number, row.title, row.body, row.topic) for row in rows],
        )
        database.execute(
            f"create virtual table {TABLE}_fts using fts5(title, body, "
            f'content="{TABLE}", content_rowid="id")'
        )
        database.execute(f"insert into {TABLE}_fts({TABLE}_fts) values('rebuild')")
    return path


def matching_rows(path: Path, query: str) -> set[int]:
    """Return the numbers of the rows the application lists for a one-word query."""
    with sqlite3.connect(path) as database:
        found = database.execute(
            f"select rowid from {TABLE}_fts where {TABLE}_fts match ?", (f'"{query}"',)
        )
        return {int(number) for (number,) in found}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def datasette(path: Path, log: Path) -> Iterator[str]:
    """Serve the database with ``datasette serve`` on 127.0.0.1; yield the table page's URL
    (10 rows a page)."""
    port = _free_port()
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(DATASETTE), "serve", str(path), "-h", "127.0.0.1", "-p", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):  # the server is up when it answers (up to a minute on busy cores)
            if process.poll() is not None:
                raise RuntimeError(f"datasette exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/-/versions.json", timeout=5):
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError(f"datasette did not answer on {base}")
        yield f"{base}/{DATABASE_NAME}/{TABLE}?_size=10"
    finally:
        process.terminate()
        process.wait(timeout=30)


def clusterings_in_shuffled_orders(
    feed: Path, folder: Path, seeds: Sequence[int] = (0, 1, 2)
) -> list[set[frozenset[str]]]:
    """Cluster ``feed`` with its lines in shuffled orders; return each run's clusters (URLs)."""
    from websim_crawler.cli import main

    lines = feed.read_text(encoding="utf-8").splitlines()
    clusterings = []
    for seed in seeds:
        random.Random(seed).shuffle(lines)
        shuffled, output = folder / f"feed-{seed}.jsonl", folder / f"clusters-{seed}.json"
        shuffled.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if main(["cluster", str(shuffled), "-o", str(output), "--no-progress"]) != 0:
            raise RuntimeError(f"websim cluster failed on {shuffled}")
        report = json.loads(output.read_text(encoding="utf-8"))
        clusterings.append({frozenset(cluster["members"]) for cluster in report["clusters"]})
    return clusterings
