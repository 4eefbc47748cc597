"""PageAnalysisPipeline through Scrapy's crawler machinery, with every item kind."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import scrapy
from conftest import analysed
from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from websim_crawler.errors import ConfigError
from websim_crawler.items import PageItem
from websim_crawler.pipelines import PageAnalysisPipeline

PAGE = """<html><head><title>Volcano eruptions</title></head><body>
<div class="nav"><a href="/">Home</a> <a href="/news">News</a></div>
<div class="content"><div><p>Volcano eruptions send lava and ash over nearby villages.</p></div>
<div><p>Scientists measure volcano gas to predict the next eruptions.</p></div></div>
</body></html>"""


def make_pipeline(**settings: Any) -> PageAnalysisPipeline:
    crawler = get_crawler(settings_dict={"WEBSIM_ANALYSIS_WORKERS": 0, **settings})
    return build_from_crawler(PageAnalysisPipeline, crawler)


def stats(pipeline: PageAnalysisPipeline) -> dict[str, Any]:
    assert pipeline.crawler.stats is not None
    return pipeline.crawler.stats.get_stats()


@dataclasses.dataclass
class DataclassPage:
    url: str
    html: str
    title: str = ""
    language: str = ""
    main_text: str = ""
    keywords: dict[str, int] = dataclasses.field(default_factory=dict)


class NarrowItem(scrapy.Item):
    url = scrapy.Field()
    html = scrapy.Field()
    main_text = scrapy.Field()


def test_dict_item_gets_analysis_fields_and_stats() -> None:
    pipeline = make_pipeline()
    item = analysed(pipeline, {"url": "http://volcano.example/a", "html": PAGE})
    assert item["title"] == "Volcano eruptions"
    assert item["language"] == "en"
    assert item["main_text"].splitlines() == [
        "Volcano eruptions send lava and ash over nearby villages.",
        "Scientists measure volcano gas to predict the next eruptions.",
    ]
    assert item["keywords"]["volcano"] == 2
    assert item["links"] == ["http://volcano.example/", "http://volcano.example/news"]
    json.dumps(item)  # JSON-safe for FEEDS
    counted = stats(pipeline)
    assert counted["websim/pages/analysed"] == 1
    assert counted["websim/chunks/noise"] == 1
    assert counted["websim/chunks/kept"] == 2
    assert counted["websim/chunks/total"] == 3


def test_scrapy_item_and_dataclass_item() -> None:
    pipeline = make_pipeline(WEBSIM_CHUNK_DETAIL="none")
    item = analysed(pipeline, PageItem(url="http://v.example/a", html=PAGE))
    assert item["keyword_stems"]["erupt"] == 2 and "chunks" not in item
    assert item["keywords"]["eruptions"] == 2  # the stem's word, for a person to read
    page = analysed(pipeline, DataclassPage(url="http://v.example/b", html=PAGE))
    assert page.title == "Volcano eruptions" and page.keywords["volcano"] == 2


def test_undeclared_fields_are_left_out_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    pipeline = make_pipeline()
    with caplog.at_level(logging.WARNING):
        item = analysed(pipeline, NarrowItem(url="http://v.example/a", html=PAGE))
    assert "volcano" in item["main_text"]
    assert stats(pipeline)["websim/fields/undeclared"] >= 3
    assert "no field 'keywords'" in caplog.text


def test_html_field_and_chunk_detail_settings() -> None:
    pipeline = make_pipeline(
        WEBSIM_HTML_FIELD="body", WEBSIM_CHUNK_DETAIL="main", WEBSIM_DROP_HTML=True
    )
    item = analysed(pipeline, {"url": "http://v.example/a", "body": PAGE.encode()})
    assert item["body"] is None
    assert item["chunks"] and all(chunk["is_main"] for chunk in item["chunks"])


@pytest.mark.parametrize(
    ("html", "reason"),
    [(None, "no_html"), ("", "empty"), (b"%PDF-1.4 binary", "binary"), (b"\x00\x01\x02", "binary")],
)
def test_bad_pages_are_dropped_with_a_counted_reason(html: Any, reason: str) -> None:
    pipeline = make_pipeline()
    with pytest.raises(DropItem, match=reason):
        analysed(pipeline, {"url": "http://v.example/bad", "html": html})
    counted = stats(pipeline)
    assert counted[f"websim/pages/dropped/{reason}"] == 1
    assert counted["websim/pages/seen"] == 1


def test_bad_setting_fails_at_start_naming_it() -> None:
    with pytest.raises(ConfigError, match="WEBSIM_DUPLICATE_THRESHOLD"):
        make_pipeline(WEBSIM_DUPLICATE_THRESHOLD="lots")
    with pytest.raises(ConfigError, match="WEBSIM_CHUNK_DETAIL"):
        make_pipeline(WEBSIM_CHUNK_DETAIL="everything")


def test_template_chunks_across_pages_of_a_site() -> None:
    pipeline = make_pipeline(WEBSIM_TEMPLATE_MIN_PAGES=2, WEBSIM_CHUNK_DETAIL="full")
    banner = "<div>Welcome to the volcano observatory online shop and museum.</div>"
    fates = []
    for number in range(3):
        html = f"<html><body>{banner}<div><p>Report {number} on volcano gas.</p></div></body>"
        item = analysed(pipeline, {"url": f"http://v.example/{number}", "html": html})
        fates.append(next(c["fate"] for c in item["chunks"] if "Welcome" in c["text"]))
    assert fates == ["kept", "kept", "duplicate"]


SITE_SPIDER = """
import scrapy

class LocalSiteSpider(scrapy.Spider):
    name = "localsite"

    def __init__(self, start_url, **kwargs):
        super().__init__(**kwargs)
        self.start_url = start_url

    async def start(self):
        yield scrapy.Request(self.start_url)

    def parse(self, response):
        if not isinstance(response, scrapy.http.TextResponse):
            yield {"url": response.url, "html": response.body}
            return
        yield {"url": response.url, "html": response.text}
        yield from response.follow_all(css="a", callback=self.parse)
"""


@pytest.mark.slow
def test_real_scrapy_crawl_with_the_pipeline(tmp_path: Path, site_url: str) -> None:
    spider = tmp_path / "localsite.py"
    spider.write_text(SITE_SPIDER)
    output = tmp_path / "pages.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "runspider",
            str(spider),
            "-a",
            f"start_url={site_url}/index.html",
            "-s",
            'ITEM_PIPELINES={"websim_crawler.pipelines.PageAnalysisPipeline": 300}',
            "-s",
            "ROBOTSTXT_OBEY=False",
            "-s",
            "LOG_LEVEL=INFO",
            "-s",
            "WEBSIM_CHUNK_DETAIL=none",
            "-O",
            str(output),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    items = [json.loads(line) for line in output.read_text().splitlines()]
    by_url = {ItemAdapter(item)["url"].rsplit("/", 1)[-1]: item for item in items}
    assert {"index.html", "volcanoes.html", "rivers.html"} <= set(by_url)
    assert "lava" in by_url["volcanoes.html"]["main_text"]
    assert "Copyright" not in by_url["volcanoes.html"]["main_text"]
    assert by_url["rivers.html"]["keywords"]["river"] >= 2
    assert "'websim/pages/analysed': " in result.stderr
    assert "websim/pages/dropped/binary" in result.stderr  # the PDF linked from the index


def test_extract_cli_refuses_unknown_settings(capsys: pytest.CaptureFixture[str]) -> None:
    from websim_crawler.cli import main

    page = str(Path(__file__).parents[2] / "support" / "pages_site" / "rivers.html")
    assert main(["extract", page, "-s", "WEBSIM_HYPERLINK_TRESHOLD=0.3"]) == 2
    assert "did you mean WEBSIM_HYPERLINK_THRESHOLD" in capsys.readouterr().err
    assert main(["extract", page, "--chunks", "none", "-s", "WEBSIM_LANGUAGE=en"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["title"] == "Where rivers begin" and "chunks" not in record
    assert record["keywords"]["river"] == 3
