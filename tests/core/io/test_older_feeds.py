"""Feeds written before ``keyword_stems`` existed are read at the reader, stems where they are."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from websim_crawler.core.io import iter_jsonl


def test_an_older_feed_has_its_keywords_read_as_stems_once_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    older, newer = tmp_path / "older.jsonl", tmp_path / "newer.jsonl"
    older.write_text(
        "".join(
            json.dumps({"url": f"http://a/{n}", "keywords": {"telescop": n}}) + "\n" for n in (1, 2)
        ),
        encoding="utf-8",
    )
    line = {"url": "http://b/1", "keywords": {"telescopes": 2}, "keyword_stems": {"telescop": 2}}
    newer.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="websim_crawler.core.io.feed_reader"):
        read = list(iter_jsonl(older))
        assert list(iter_jsonl(newer)) == [line]  # a line of today's feeds as it is
    assert [record.get("keyword_stems") for record in read] == [{"telescop": 1}, {"telescop": 2}]
    notices = [r.getMessage() for r in caplog.records if "older feed" in r.getMessage()]
    assert notices == [f"{older}: an older feed, its keywords read as stems"]
