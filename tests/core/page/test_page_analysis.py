"""The paper's formulas and the page analysis on hand-made pages (values checked by hand)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import lxml.etree
import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websim_crawler.core.html import (
    opened_tags_over,
    page_title,
    parse_html,
    parse_plain_tree,
    remove_invisible,
)
from websim_crawler.core.page import (
    AnalysisParams,
    Chunk,
    SiteTemplateMemory,
    analyse_page,
    box_position_ratio,
    chunk_weight,
    hyperlink_percentage,
    interval_position_ratio,
    keyword_frequency_score,
    noise_score,
    position_feature,
    title_word_relevancy,
)
from websim_crawler.errors import ConfigError, PageError

SITE_PAGES = Path(__file__).parents[2] / "support" / "site" / "records"

ARTICLE_PAGE = """<html><head><title>Fuzzy clustering of web pages</title></head><body>
<div id="header"><a href="/">Home</a> <a href="/about">About us</a> <a href="/c">Contact</a></div>
<div id="main">
  <div><h1>Fuzzy clustering of web pages</h1></div>
  <div><p>Fuzzy clustering assigns every web page a membership in every cluster.
     Pages about clustering share keywords.</p></div>
  <div><p>The fuzzy c-means algorithm minimises a weighted objective over pages.</p></div>
  <div><a href="/share">Share</a></div>
</div>
<div id="ads"><img src="a.png"><img src="b.png"></div>
</body></html>"""


def test_hyperlink_percentage_is_link_keywords_over_keywords() -> None:
    assert hyperlink_percentage(3, 12) == 0.25
    assert hyperlink_percentage(4, 4) == 1.0
    assert hyperlink_percentage(0, 0) == 0.0
    assert hyperlink_percentage(2, 0) == 1.0


def test_noise_score_is_chunk_images_over_page_images() -> None:
    assert noise_score(2, 8) == 0.25
    assert noise_score(0, 0) == 0.0


def test_title_word_relevancy_sums_title_keyword_frequencies() -> None:
    chunk = Counter({"fuzzi": 2, "cluster": 3, "page": 1})
    # (2 + 3 + 0) / 3 title keywords
    assert title_word_relevancy(chunk, ["fuzzi", "cluster", "web"]) == pytest.approx(5 / 3)
    assert title_word_relevancy(chunk, []) == 0.0


def test_keyword_frequency_sums_top_k_over_keyword_count() -> None:
    chunk = Counter({"a": 5, "b": 3, "c": 1, "d": 1})
    assert keyword_frequency_score(chunk, 2) == pytest.approx(8 / 10)
    assert keyword_frequency_score(chunk, 10) == 1.0
    assert keyword_frequency_score(Counter(), 5) == 0.0


def test_position_feature_thresholds_ratio() -> None:
    assert position_feature(0.7, 0.7) == 1
    assert position_feature(0.69, 0.7) == 0


def test_chunk_weight_combines_alpha_beta_gamma() -> None:
    params = AnalysisParams(title_weight=0.5, frequency_weight=0.25, position_weight=0.25)
    assert chunk_weight(2.0, 0.8, 1, params) == pytest.approx(0.5 * 2 + 0.25 * 0.8 + 0.25)


def test_dom_position_ratio_is_share_inside_central_band() -> None:
    # page of 100 chars, margin 0.1 -> band [10, 90)
    assert interval_position_ratio(0, 10, 100, 0.1) == 0.0
    assert interval_position_ratio(20, 60, 100, 0.1) == 1.0
    assert interval_position_ratio(80, 100, 100, 0.1) == pytest.approx(0.5)
    assert interval_position_ratio(5, 5, 100, 0.1) == 0.0


def test_box_position_ratio_uses_rendered_geometry() -> None:
    page = (1000.0, 2000.0)  # central region x 100..900, y 200..1800
    assert box_position_ratio((200, 400, 600, 800), page, 0.1) == 1.0
    assert box_position_ratio((0, 0, 1000, 100), page, 0.1) == 0.0
    assert box_position_ratio((0, 400, 200, 100), page, 0.1) == pytest.approx(0.5)


def test_article_page_keeps_main_chunk_and_removes_noise() -> None:
    analysis = analyse_page(ARTICLE_PAGE, "http://example.com/a")
    by_text = {chunk.text: chunk for chunk in analysis.chunks if chunk.text}
    nav = by_text["Home About us Contact"]
    assert nav.fate == "noise" and nav.reason == "hyperlink_percentage"
    assert nav.hyperlink_percentage == 1.0
    share = by_text["Share"]
    assert share.fate == "noise"
    ads = next(chunk for chunk in analysis.chunks if chunk.n_images == 2)
    assert ads.noise_score == 1.0 and ads.fate == "noise" and ads.reason == "noise_score"
    assert analysis.title == "Fuzzy clustering of web pages"
    assert analysis.language == "en"
    assert analysis.main_chunk_ids == ("C2",)
    # The headline repeats the page title: the title line filter keeps it out of the main text.
    assert analysis.main_text.splitlines() == [
        "Fuzzy clustering assigns every web page a membership in every cluster. "
        "Pages about clustering share keywords.",
        "The fuzzy c-means algorithm minimises a weighted objective over pages.",
    ]
    assert analysis.keyword_stems["cluster"] == 3
    assert analysis.keyword_stems["fuzzi"] == 2
    assert "home" not in analysis.keyword_stems
    # What a person reads: each stem under its commonest form on the page, with the same count.
    assert analysis.keywords["fuzzy"] == 2 and "fuzzi" not in analysis.keywords
    assert sorted(analysis.keywords.values()) == sorted(analysis.keyword_stems.values())
    assert analysis.links == (
        "http://example.com/",
        "http://example.com/about",
        "http://example.com/c",
        "http://example.com/share",
    )


def test_article_chunk_weights_follow_the_formula() -> None:
    analysis = analyse_page(ARTICLE_PAGE, "http://example.com/a")
    heading = next(c for c in analysis.chunks if c.text == "Fuzzy clustering of web pages")
    # title keywords: fuzzi, cluster, web, page -> each once in the heading: T_K = 4/4 = 1
    assert heading.title_word_relevancy == 1.0
    # 4 keywords, top-5 sum = 4 -> K_f = 1
    assert heading.keyword_frequency == 1.0
    assert heading.weight == pytest.approx(0.4 * 1 + 0.3 * 1 + 0.3 * heading.position_feature)
    main = next(c for c in analysis.chunks if c.chunk_id == "C2")
    kept = [c for c in analysis.chunks if c.parent_id == "C2" and c.fate == "kept"]
    assert main.fate == "container"
    assert main.weight == pytest.approx(sum(c.weight for c in kept), abs=1e-5)


def test_hierarchy_ids_and_rules() -> None:
    page = """<html><body>loose intro text here
    <div><div>first leaf words</div><div>second leaf words</div></div>
    <main><p>html5 main element words</p></main>
    <table><tr><td>table cell words</td></tr></table></body></html>"""
    analysis = analyse_page(page)
    rules = {chunk.chunk_id: chunk.rule for chunk in analysis.chunks}
    assert rules == {
        "C0": "body",
        "C1": "loose-text",
        "C2": "div-main",
        "C2.1": "div-leaf",
        "C2.2": "div-leaf",
        "C3": "html5",
        "C4": "table-cell",
    }
    texts = {chunk.chunk_id: chunk.text for chunk in analysis.chunks}
    assert texts["C1"] == "loose intro text here"
    assert texts["C4"] == "table cell words"


def test_duplicate_chunks_within_a_page_keep_the_first() -> None:
    page = """<html><body><div>
    <div>Solar panels convert sunlight into electricity for homes.</div>
    <div>Wind turbines produce power on windy hills near the coast.</div>
    <div>Solar panels convert sunlight into electricity for homes!</div>
    </div></body></html>"""
    analysis = analyse_page(page)
    leaves = [c for c in analysis.chunks if c.fate != "container"]
    assert [c.fate for c in leaves] == ["kept", "kept", "duplicate"]
    assert leaves[2].reason == f"cosine:{leaves[0].chunk_id}"
    off = analyse_page(page, params=AnalysisParams(duplicate_filter=False))
    assert [c.fate for c in off.chunks if c.fate != "container"] == ["kept"] * 3


def test_site_template_chunks_are_duplicates_after_min_pages() -> None:
    memory = SiteTemplateMemory(min_pages=2)
    fates = []
    for number in range(4):
        page = f"""<html><body><div>
        <div>Visit our friendly store for gardening tools and seeds.</div>
        <div>Record {number} describes tomato variety number {number} grown in pots.</div>
        </div></body></html>"""
        analysis = analyse_page(page, f"http://shop.example/r{number}", site_memory=memory)
        template = next(c for c in analysis.chunks if c.text.startswith("Visit"))
        fates.append((template.fate, template.reason))
    assert fates[:2] == [("kept", ""), ("kept", "")]
    assert fates[2:] == [("duplicate", "site_template")] * 2


def test_a_full_site_memory_forgets_the_least_recent_fingerprints_in_page_order() -> None:
    # A set of fingerprints iterates in an order that changes from process to process (string
    # hashing): recorded that way, which fingerprints a full memory forgot, and so which chunks
    # later pages found to be template, changed from one run to the next on the same pages.
    fingerprints = [f"{number:016x}" for number in range(100)]
    for record in ("template_fingerprints", "record"):
        memory = SiteTemplateMemory(min_pages=1, max_chunks=50)
        getattr(memory, record)("site", fingerprints + fingerprints[:3])  # repeats count once
        assert memory.template_of("site") == frozenset(fingerprints[50:])
        assert [fp for fp, _seen in memory.to_dict()["sites"]["site"]] == fingerprints[50:]


def test_noise_filter_switch_keeps_everything() -> None:
    analysis = analyse_page(ARTICLE_PAGE, params=AnalysisParams(noise_filter=False))
    assert all(c.fate in ("kept", "container") for c in analysis.chunks)


def test_text_outside_divs_and_scripts_is_handled() -> None:
    page = """<html><body><script>var secret = 1;</script><style>p{}</style>
    <p>Plain paragraph text about volcano eruptions and lava flows.</p>
    <form><input type="hidden" value="token123"><input name="q"></form></body></html>"""
    analysis = analyse_page(page)
    assert "volcano" in analysis.main_text
    assert "secret" not in json.dumps(analysis.to_dict())
    assert "token123" not in json.dumps(analysis.to_dict())


def test_japanese_page_yields_keywords() -> None:
    page = """<html lang="ja"><head><title>東京の天気</title></head><body><div>
    <p>東京の天気は晴れです。明日は雨が降るでしょう。気温は二十度です。</p></div></body></html>"""
    analysis = analyse_page(page)
    assert analysis.language == "ja"
    assert analysis.keywords.get("東京", 0) >= 1
    assert "晴れ" in analysis.main_text


def test_german_page_uses_german_stems() -> None:
    page = """<html><head><title>Wohnungsbau</title></head><body><div><p>
    Die Bundesregierung hat neue Regeln für den Wohnungsbau beschlossen. Die Regeln gelten
    für alle neuen Wohnungen in den Städten und sollen das Bauen billiger machen.</p>
    </div></body></html>"""
    analysis = analyse_page(page)
    assert analysis.language == "de"
    assert "wohnung" in analysis.keyword_stems and "die" not in analysis.keyword_stems
    assert "wohnungen" in analysis.keywords and "städten" in analysis.keywords  # the words


def test_to_dict_is_json_serialisable() -> None:
    data = analyse_page(ARTICLE_PAGE, "http://example.com/a").to_dict()
    again = json.loads(json.dumps(data))
    assert again["title"] == "Fuzzy clustering of web pages"
    assert {"chunk_id", "fate", "weight", "hyperlink_percentage"} <= set(again["chunks"][0])


@pytest.mark.parametrize("chunk_detail", ["main", "none"])
def test_analysis_building_fewer_chunks_gives_the_same_record(chunk_detail: str) -> None:
    pages = [ARTICLE_PAGE, *(path.read_bytes() for path in sorted(SITE_PAGES.glob("*.html")))]
    for page in pages:
        full = analyse_page(page, "http://example.com/a")
        lean = analyse_page(page, "http://example.com/a", chunk_detail=chunk_detail)
        assert lean.to_dict(chunk_detail) == full.to_dict(chunk_detail)
        assert (
            lean.counts()
            == full.counts()
            == Counter(chunk.fate for chunk in full.chunks if chunk.fate != "container")
        )
    assert lean.chunk_detail == chunk_detail
    with pytest.raises(ValueError, match="built"):
        lean.to_dict("full")
    with pytest.raises(ValueError, match="chunk_detail"):
        analyse_page(ARTICLE_PAGE, chunk_detail="some")


@pytest.mark.parametrize(
    ("page", "reason"),
    [
        (b"", "empty"),
        (b"   \n\t ", "empty"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "binary"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        (b"GIF89a\x01\x00\x01\x00\x00\x00\x00", "binary"),
    ],
)
def test_bad_pages_raise_page_error_with_reason(page: bytes, reason: str) -> None:
    with pytest.raises(PageError) as caught:
        analyse_page(page)
    assert caught.value.reason == reason


def test_too_large_page_is_refused() -> None:
    with pytest.raises(PageError) as caught:
        analyse_page("<p>x</p>" * 100, params=AnalysisParams(max_page_bytes=100))
    assert caught.value.reason == "too_large"


@pytest.mark.slow
def test_twenty_megabyte_page_is_analysed() -> None:
    sentence = "Large pages still carry sentences about rivers and mountains. "
    paragraph = f"<div><p>{sentence * 30}</p></div>"  # 20 MB in 20,000 elements (the budget)
    page = ("<html><body>" + paragraph * (20_000_000 // len(paragraph)) + "</body></html>").encode()
    assert len(page) >= 19_900_000
    analysis = analyse_page(page)
    assert analysis.keyword_stems["river"] >= 1 and analysis.keywords["rivers"] >= 1
    with pytest.raises(PageError, match="WEBSIM_MAX_ELEMENTS"):
        analyse_page(page, params=AnalysisParams(max_elements=10_000))


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        st.sampled_from(["<b>", "<i", "</b>", "<", "x", "<p>", "<a<a", " "]), max_size=60
    ),
    limit=st.integers(min_value=1, max_value=30),
)
def test_a_page_is_counted_whenever_it_could_be_over_the_element_limit(
    pieces: list[str], limit: int
) -> None:
    text = "".join(pieces)
    opened = opened_tags_over(text, limit)
    assert opened == 0 or opened > limit
    if not opened:  # skipped: parsing makes at most the limit plus the parser's own elements
        root = parse_plain_tree(f"<html><body>{text}</body></html>")
        made = sum(1 for _element in root.iter()) - 2
        assert made <= limit + 2


def test_only_a_page_over_the_element_limit_is_parsed_counting() -> None:
    assert opened_tags_over("<div>" * 10, 10) == 0
    assert opened_tags_over("<div>" * 11, 10) == 11
    assert opened_tags_over("</div>" * 11, 10) == 0  # closing tags open nothing
    page = "<html><body>" + "<div>7</div>" * 101 + "</body></html>"
    with pytest.raises(PageError, match="WEBSIM_MAX_ELEMENTS"):
        analyse_page(page, params=AnalysisParams(max_elements=100))
    assert analyse_page(page, params=AnalysisParams(max_elements=200)).main_text


def test_deeply_nested_page_is_analysed() -> None:
    depth = 5000
    page = "<html><body>" + "<div>" * depth + "deep words inside" + "</div>" * depth + "</body>"
    analysis = analyse_page(page)
    assert analysis.main_text == "deep words inside"
    assert max(chunk.depth for chunk in analysis.chunks) >= 500


def test_wrong_and_missing_charset_decode_right() -> None:
    text = "Größere Häuser für Familien in München und Köln sind teurer geworden."
    latin1 = f"<html><head><meta charset='utf-8'></head><body><p>{text}</p></body></html>"
    analysis = analyse_page(latin1.encode("cp1252"))
    assert "München" in analysis.main_text
    undeclared = f"<html><body><p>{text} {text}</p></body></html>".encode("cp1252")
    assert "Köln" in analyse_page(undeclared).main_text
    assert "Köln" in analyse_page(undeclared, encoding="cp1252").main_text


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("À la carte: café crème et pâtisserie française", "cp1252"),
        ("Größere Häuser für Familien in München", "cp1252"),
        ("Zażółć gęślą jaźń, powiedział Paweł w Łodzi", "cp1250"),
    ],
)
def test_short_mis_declared_pages_decode_right(text: str, encoding: str) -> None:
    page = f"<html><head><meta charset='utf-8'></head><body><p>{text}</p></body></html>"
    assert analyse_page(page.encode(encoding)).main_text == text


def test_page_without_div_title_or_text() -> None:
    no_div = analyse_page("<html><body><p>Only a paragraph of words here.</p></body></html>")
    assert no_div.title == "" and no_div.main_text == "Only a paragraph of words here."
    no_text = analyse_page("<html><body><div><img src='x.png'></div></body></html>")
    assert no_text.main_text == "" and no_text.keywords == {}


def test_params_are_validated() -> None:
    with pytest.raises(ConfigError, match="WEBSIM_HYPERLINK_THRESHOLD"):
        AnalysisParams(hyperlink_threshold=1.5)
    with pytest.raises(ConfigError, match="WEBSIM_TOP_KEYWORDS"):
        AnalysisParams(top_keywords=0)


def test_chunk_records_carry_every_field_and_title_keywords() -> None:
    analysis = analyse_page(ARTICLE_PAGE, "http://example.com/a")
    names = {field.name for field in dataclasses.fields(Chunk)}
    unstemmed = analyse_page(ARTICLE_PAGE, params=AnalysisParams(stem_chunk_keywords=False))
    for chunk in analysis.chunks:
        assert set(vars(chunk)) == names
        assert chunk == Chunk(**vars(chunk))
    heading = next(c for c in unstemmed.chunks if c.text == "Fuzzy clustering of web pages")
    # "of", "web" and "pages" are stopwords of the English list
    assert heading.title_keywords == {"fuzzy": 1, "clustering": 1}
    first = next(c for c in unstemmed.chunks if c.text.startswith("Fuzzy clustering assigns"))
    # unstemmed, "cluster" is not the title's "clustering"
    assert first.title_keywords == {"fuzzy": 1, "clustering": 2}
    assert first.title_word_relevancy == pytest.approx((1 + 2) / 2)


def test_chunk_stemming_switch_keeps_main_keywords_stemmed() -> None:
    plain = analyse_page(ARTICLE_PAGE)
    stemmed = analyse_page(ARTICLE_PAGE, params=AnalysisParams(stem_chunk_keywords=True))
    assert plain.keywords == stemmed.keywords
    assert plain.keyword_stems["cluster"] == 3
    heading = next(c for c in stemmed.chunks if c.text == "Fuzzy clustering of web pages")
    assert heading.title_keywords == {"fuzzi": 1, "cluster": 1}
    first = next(c for c in stemmed.chunks if c.text.startswith("Fuzzy clustering assigns"))
    # stemmed, "cluster" and "clustering" are one keyword
    assert first.title_keywords == {"fuzzi": 1, "cluster": 3}


def test_parse_plain_tree_gives_plain_elements_with_the_same_tree() -> None:
    page = "<html><body><div class='a'><p>One <b>two</b></p></div>tail</body></html>"
    plain, rich = parse_plain_tree(page), parse_html(page)
    assert type(plain) is lxml.etree._Element
    assert isinstance(rich, lxml.html.HtmlElement)
    assert lxml.etree.tostring(plain) == lxml.etree.tostring(rich)
    assert page_title(parse_plain_tree("<html><body><h1>Big <i>news</i></h1></body></html>")) == (
        "Big news"
    )


def test_remove_invisible_keeps_the_text_after_removed_elements() -> None:
    root = parse_plain_tree("<div>one <script>x()</script>two <span hidden>no</span>three</div>")
    remove_invisible(root)
    assert "".join(root.itertext()) == "one two three"


def test_wayback_replay_toolbar_is_not_part_of_the_archived_page() -> None:
    page = (
        "<html><head><title>Budget vote</title></head><body>"
        "<!-- BEGIN WAYBACK TOOLBAR INSERT --><div id='wm-ipp'><a href='http://faq.web.archive"
        ".org/'>FAQ</a> <p>About this capture: 42 captures</p></div>"
        "<!-- END WAYBACK TOOLBAR INSERT -->"
        "<div><p>The council passed the budget vote after a long debate about the schools and "
        "the roads of the town.</p><a href='/web/20050101000000/http://news.test/local'>Local</a>"
        "</div></body></html>"
    )
    analysis = analyse_page(page, "http://web.archive.org/web/20050101000000/http://news.test/")
    assert "capture" not in analysis.main_text
    assert "budget vote" in analysis.main_text
    assert analysis.links == ("http://web.archive.org/web/20050101000000/http://news.test/local",)
