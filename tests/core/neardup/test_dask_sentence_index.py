"""The Dask-bag sentence index on a local Dask cluster gives the exact index's pairs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from websim_crawler.core.neardup import NeardupParams, find_near_duplicates
from websim_crawler.core.neardup.dask_index import dask_near_duplicates

distributed = pytest.importorskip("distributed", reason="the distributed extra is not installed")

SENTENCES = [
    f"Sentence {i} of the archive recalls how lighthouse {i * 3} was built." for i in range(60)
]


def page(sentences: list[str]) -> str:
    return "<html><body><div>" + "".join(f"<p>{s}</p>" for s in sentences) + "</div></body></html>"


def test_dask_index_matches_the_exact_index(tmp_path: Path) -> None:
    s = SENTENCES
    boilerplate = ["Every page of this collection ends with this very same notice."]
    rows = [
        {"url": "http://a.com/1", "html": page(s[0:5] + boilerplate)},
        {"url": "http://m.org/1", "html": page(s[0:5] + boilerplate)},
        {"url": "http://a.com/all", "html": page(s[0:9] + boilerplate)},
        {"url": "http://b.net/q", "html": page(s[7:9] + s[20:25] + boilerplate),
         "links": ["http://a.com/all"]},
        {"url": "http://c.net/r", "html": page(s[20:23] + s[40:44] + boilerplate)},
        {"url": "http://d.net/lonely", "html": page(s[50:55] + boilerplate)},
        {"url": "http://a.com/1", "html": page(s[0:5])},
        {"url": "http://e.net/nothing"},
    ]  # fmt: skip
    feed = tmp_path / "pages.jsonl"
    feed.write_text("".join(json.dumps(row) + "\n" for row in rows) + "not json\n\n")
    params = NeardupParams(max_sentence_frequency=5)
    exact = find_near_duplicates(rows, params)
    with (
        distributed.LocalCluster(
            n_workers=1,
            processes=False,
            threads_per_worker=2,
            dashboard_address=None,
            silence_logs=logging.WARNING,
        ) as cluster,
        distributed.Client(cluster),
    ):
        report = dask_near_duplicates(str(feed), params, blocksize=900)

    def canonical(pairs: list) -> set:
        return {
            (frozenset((pair.a, pair.b)), pair.pair_class, pair.relation, pair.shared_sentences,
             round(pair.overlap, 6), round(pair.inclusion, 6))
            for pair in pairs
        }  # fmt: skip

    assert len(exact.pairs) == 5
    assert canonical(report.pairs) == canonical(exact.pairs)
    citing = next(pair for pair in report.pairs if pair.relation == "citing/cited")
    assert (citing.a, citing.b) == ("http://b.net/q", "http://a.com/all")
    assert report.stats["method"] == "dask"
    assert report.stats["sentences"] == exact.stats["sentences"]
    assert report.stats["sentences"]["frequent_ignored"] == 1
    assert report.stats["pages"]["indexed"] == 6
    assert report.stats["pages"]["dropped"] == {
        "duplicate_url": 1,
        "invalid_json": 1,
        "no_html": 1,
    }
    assert report.stats["pages"]["seen"] == exact.stats["pages"]["seen"] + 1


@pytest.mark.slow
def test_the_command_chooses_dask_through_its_settings_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--engine dask`` and ``-s WEBSIM_NEARDUP_ENGINE=dask`` are one door: the memory pairs."""
    from websim_crawler.cli import main

    s = SENTENCES
    rows = [
        {"url": "http://a.com/1", "html": page(s[0:6])},
        {"url": "http://m.org/1", "html": page(s[0:6])},
        {"url": "http://b.net/2", "html": page(s[3:9] + s[30:33])},
    ]
    feed = tmp_path / "pages.jsonl"
    feed.write_text("".join(json.dumps(row) + "\n" for row in rows))
    reports = {}
    for name, options in (
        ("memory", []),
        ("flag", ["--engine", "dask", "--dask-workers", "1"]),
        ("setting", ["-s", "WEBSIM_NEARDUP_ENGINE=dask", "-s", "WEBSIM_NEARDUP_DASK_WORKERS=1"]),
    ):
        output = tmp_path / f"{name}.json"
        assert main(["neardup", str(feed), "-o", str(output), "--no-progress", *options]) == 0
        reports[name] = json.loads(output.read_text(encoding="utf-8"))
    pairs = {
        name: {(frozenset((p["a"], p["b"])), p["class"]) for p in report["pairs"]}
        for name, report in reports.items()
    }
    assert (frozenset(("http://a.com/1", "http://m.org/1")), "identical") in pairs["memory"]
    assert len(pairs["memory"]) == 3
    assert pairs["flag"] == pairs["setting"] == pairs["memory"]
    assert reports["flag"]["stats"]["method"] == reports["setting"]["stats"]["method"] == "dask"
    assert main(["neardup", str(feed), "-o", str(tmp_path / "x.json"), "--engine", "dask",
                 "--method", "minhash"]) == 2  # fmt: skip
    assert "WEBSIM_NEARDUP_METHOD=exact" in capsys.readouterr().err
