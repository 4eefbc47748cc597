"""Hypothesis fuzzing: bad input raises only the documented ``WebsimError`` types, or nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from websim_crawler.core.io import ReadReport, iter_jsonl
from websim_crawler.core.neardup.pages import page_from_dict
from websim_crawler.core.page import SiteTemplateMemory, analyse_page
from websim_crawler.core.similarity import (
    colour_signature,
    compare_pages,
    page_features,
    similarity,
)
from websim_crawler.core.similarity.portable import features_from_dict
from websim_crawler.distributed.seeds import parse_seed
from websim_crawler.errors import InputFormatError, PageError, WebsimError

FUZZ = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
TAGS = ("div", "p", "a", "span", "table", "tr", "td", "ul", "li", "nav", "footer", "h1", "br")


@st.composite
def html_documents(draw: st.DrawFn) -> str:
    """Tag soup: nested, unclosed, stray and attribute-laden elements around random text."""
    parts = ["<html>" if draw(st.booleans()) else "", "<body>" if draw(st.booleans()) else ""]
    for _ in range(draw(st.integers(0, 40))):
        choice = draw(st.integers(0, 4))
        tag = draw(st.sampled_from(TAGS))
        if choice == 0:
            href = draw(st.sampled_from(["/x", "http://a.org/y", "javascript:1", "[::1", ""]))
            parts.append(f"<{tag} href='{href}' class='{draw(st.text(max_size=8))}'>")
        elif choice == 1:
            parts.append(f"</{tag}>")
        elif choice == 2:
            parts.append(draw(st.text(max_size=80)))
        elif choice == 3:
            parts.append(draw(st.sampled_from(["<!--", "-->", "<![CDATA[", "&#x110000;", "&amp"])))
        else:
            parts.append(f"<{tag}>" * draw(st.integers(1, 30)))
    return "".join(parts)


page_inputs = st.one_of(html_documents(), st.text(max_size=300), st.binary(max_size=300))


@FUZZ
@given(page=page_inputs, url=st.one_of(st.none(), st.sampled_from(["http://a.org/", "x", ""])))
def test_page_analysis_raises_only_page_errors(page: str | bytes, url: str | None) -> None:
    try:
        analysis = analyse_page(page, url)
    except PageError as error:
        assert error.reason
        return
    assert all(isinstance(count, int) and count > 0 for count in analysis.keywords.values())
    json.dumps(analysis.to_dict())  # the record is JSON-safe


@FUZZ
@given(first=page_inputs, second=page_inputs)
def test_similarity_measures_stay_in_range(first: str | bytes, second: str | bytes) -> None:
    try:
        features = [page_features(page, url="http://a.org/") for page in (first, second)]
        report = compare_pages(features[0], features[1], mode="full")
    except WebsimError:
        return
    for stage in report.to_dict()["stages"]:
        score = stage.get("score")
        assert score is None or (isinstance(score, float) and 0.0 <= score <= 1.0), stage
    if isinstance(first, str) and isinstance(second, str) and first.strip() and second.strip():
        try:
            value = similarity(first, second)
        except WebsimError:
            return
        assert 0.0 <= value <= 1.0 and not math.isnan(value)


@FUZZ
@given(data=st.binary(max_size=400))
def test_screenshot_reader_rejects_non_images_with_websim_errors(data: bytes) -> None:
    with pytest.raises(WebsimError):
        colour_signature(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@FUZZ
@given(
    lines=st.lists(st.one_of(st.binary(max_size=60), json_values.map(json.dumps).map(str.encode)))
)
def test_jsonl_reader_yields_objects_and_counts_the_rest(
    tmp_path: Path, lines: list[bytes]
) -> None:
    path = tmp_path / "feed.jsonl"
    path.write_bytes(b"\n".join(lines))
    report = ReadReport()
    records = list(iter_jsonl(path, report))
    assert all(isinstance(record, dict) for record in records)
    assert report.records == len(records)


@FUZZ
@given(
    data=st.one_of(
        json_values,
        st.dictionaries(
            st.sampled_from(
                ["min_pages", "max_sites", "max_chunks", "sites", "documents", "pages", "skipped"]
            ),
            json_values,
        ),
    )
)
@example(data={"min_pages": math.inf})  # int(inf) raises OverflowError
@example(data={"documents": [], "skipped": {}, "pages": -math.inf})
def test_saved_state_readers_raise_no_other_exception_than_input_format_errors(
    data: object,
) -> None:
    """The check is "no other exception": a state rebuilt from random data is not checked."""
    for rebuild in (SiteTemplateMemory.from_dict, features_from_dict, page_from_dict):
        try:
            rebuild(data)  # type: ignore[arg-type]
        except InputFormatError:
            continue


@FUZZ
@given(raw=st.binary(max_size=80))
def test_seed_parser_raises_no_other_exception_than_input_format_errors(raw: bytes) -> None:
    """The check is "no other exception"; a seed parsed from random bytes is only a dict."""
    try:
        seed = parse_seed(raw, "url")
    except InputFormatError:
        return
    assert isinstance(seed, dict)


@FUZZ
@given(
    pages=st.lists(
        st.tuples(st.sampled_from("abcd"), st.sets(st.sampled_from("pqrstuvwxyz"), max_size=6)),
        max_size=40,
    ),
    min_pages=st.integers(1, 4),
    restore_at=st.integers(0, 40),
)
def test_template_of_is_the_fingerprints_seen_on_min_pages_of_the_site(
    pages: list[tuple[str, set[str]]], min_pages: int, restore_at: int
) -> None:
    """The kept-up-to-date template sets equal a scan of the LRU-bounded counts."""
    memory = SiteTemplateMemory(min_pages=min_pages, max_sites=3, max_chunks=5)
    for number, (site, fingerprints) in enumerate(pages):
        if number == restore_at:
            memory = SiteTemplateMemory.from_dict(json.loads(json.dumps(memory.to_dict())))
        memory.record(site, fingerprints)
    for site in "abcd":
        counts = dict(
            next((pairs for s, pairs in memory.to_dict()["sites"].items() if s == site), [])
        )
        assert memory.template_of(site) == {fp for fp, n in counts.items() if n >= min_pages}
