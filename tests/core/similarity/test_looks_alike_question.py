"""The looks-alike question on real pages: a copy on another host looks alike, with or without
screenshots (the visual stage weighs in when there are some); pages of other sites do not."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from websim_crawler.core.similarity import page_features
from websim_crawler.core.similarity.comparison import ComparisonReport, PageFeatures, compare_pages
from websim_crawler.core.similarity.params import STAGES, SimilarityParams
from websim_crawler.core.similarity.questions import QUESTIONS, ask

TESTS = Path(__file__).resolve().parents[2]
ARTICLES = TESTS.parents[0] / ".." / "shared" / "datasets" / "article-extraction-benchmark"
PAGE_KEYS = 3  # three pages of three different sites


def article_pages() -> list[tuple[str, bytes]]:
    """The first pages of article-extraction-benchmark with their URLs, one a site."""
    if not ARTICLES.is_dir():
        pytest.skip(f"article-extraction-benchmark not found at {ARTICLES}")
    truth = json.loads((ARTICLES / "ground-truth.json").read_text(encoding="utf-8"))
    pages: dict[str, tuple[str, bytes]] = {}
    for key in sorted(truth):
        url = truth[key]["url"]
        host = url.split("/")[2]
        if host not in pages and "archive.org" not in host:
            pages[host] = (
                url,
                gzip.decompress((ARTICLES / "html" / f"{key}.html.gz").read_bytes()),
            )
        if len(pages) == PAGE_KEYS:
            break
    return list(pages.values())


def screenshot(band: tuple[int, int, int], lines: int) -> bytes:
    """A page-like PNG: a coloured header band over lines of grey text on white."""
    image = Image.new("RGB", (320, 480), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 320, 60), fill=band)
    for line in range(lines):
        draw.rectangle((20, 80 + 18 * line, 300, 88 + 18 * line), fill=(90, 90, 90))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def copied(url: str, html: bytes, host: str) -> tuple[str, bytes]:
    """The page on another host, edited as a phishing copy: a title prefix, a sign-in form, its
    own-host links pointing at the copy's host."""
    origin = "/".join(url.split("/")[:3]).encode()
    text = re.sub(rb"<title>", b"<title>Sign in - ", html, count=1, flags=re.IGNORECASE)
    form = b'<form action="/login"><input name="user"><input type="password"></form>'
    text = re.sub(rb"<body([^>]*)>", rb"<body\1>" + form, text, count=1, flags=re.IGNORECASE)
    return url.replace(url.split("/")[2], host, 1), text.replace(origin, f"https://{host}".encode())


def looks_alike(first: PageFeatures, second: PageFeatures) -> ComparisonReport:
    params = ask(SimilarityParams(), "looks-alike")
    return compare_pages(first, second, None, params)


def test_looks_alike_weighs_the_screenshots() -> None:
    weights = dict(zip(STAGES, QUESTIONS["looks-alike"].stage_weights, strict=True))
    assert weights["visual"] > 0 and weights["layout"] > 0 and weights["text"] > 0
    assert sum(weights.values()) == pytest.approx(1.0, abs=1e-3)


def test_a_copy_on_another_host_looks_alike_and_other_sites_do_not() -> None:
    (url, html), *others = article_pages()
    copy_url, copy_html = copied(url, html, "copy.example")
    original_shot = screenshot((200, 30, 30), 18)
    with_shots = {
        "original": page_features(html, url=url, screenshot=original_shot),
        "copy": page_features(copy_html, url=copy_url, screenshot=original_shot),
    }
    without_shots = {
        "original": page_features(html, url=url),
        "copy": page_features(copy_html, url=copy_url),
    }
    for number, (other_url, other_html) in enumerate(others):
        name = f"other {number}"
        shot = screenshot((30, 60 + 90 * number, 200), 6 + 5 * number)
        with_shots[name] = page_features(other_html, url=other_url, screenshot=shot)
        without_shots[name] = page_features(other_html, url=other_url)
    for features in (with_shots, without_shots):
        assert looks_alike(features["original"], features["copy"]).verdict == "similar"
        for name in ("other 0", "other 1"):
            for page in ("original", "copy"):
                assert looks_alike(features[page], features[name]).verdict == "dissimilar"
    # With screenshots the visual stage weighs in: the combined score is the weighted mean of
    # all four stages; without, the other three renormalise.
    threshold = QUESTIONS["looks-alike"].threshold
    for features, stages in ((with_shots, STAGES), (without_shots, STAGES[:3])):
        report = looks_alike(features["original"], features["other 0"])
        weights = dict(zip(STAGES, QUESTIONS["looks-alike"].stage_weights, strict=True))
        scores = {result.stage: result.score for result in report.stages}
        assert {stage for stage, score in scores.items() if score is not None} == set(stages)
        expected = sum(weights[s] * scores[s] for s in stages) / sum(weights[s] for s in stages)
        assert report.combined_score == pytest.approx(expected)
        assert report.combined_score < threshold
