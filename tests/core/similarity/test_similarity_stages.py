"""The four-stage page similarity core: parity with html-similarity, layout, text, links, EMD."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import lxml.html
import numpy as np
import pytest
from PIL import Image
from scipy.optimize import linprog

from websim_crawler.core.similarity import (
    InverseDocumentFrequency,
    LinkGraph,
    PageFeatures,
    as_parsed_document,
    colour_signature,
    compare_pages,
    earth_movers_distance,
    find_similar_pairs,
    get_classes,
    get_pq_grams,
    get_tags,
    group_predecessor_similarity,
    jaccard_similarity,
    page_features,
    predecessor_similarity,
    similarity,
    structural_similarity,
    style_similarity,
    successor_similarity,
    tag_comparison,
    template_comparison,
    text_similarity,
    visual_similarity,
)
from websim_crawler.core.similarity.links import link_similarity
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.core.similarity.visual import ground_distances
from websim_crawler.errors import ConfigError, InputFormatError, PageError

PEER = Path(__file__).resolve().parents[3] / ".." / "shared" / "peer" / "html-similarity"


def _peer() -> dict[str, Any]:
    if not (PEER / "expectations.json").is_file():
        pytest.skip(f"html-similarity expectations not found at {PEER}")
    return json.loads((PEER / "expectations.json").read_text(encoding="utf-8"))


def _fixture(name: str, input_type: str) -> str | bytes:
    text = (PEER / "fixtures" / name).read_text(encoding="utf-8")
    return text.encode("utf-8") if input_type.startswith("bytes") else text


# --- html-similarity parity -------------------------------------------------------------------


def test_every_pair_case_of_html_similarity_is_reproduced() -> None:
    cases = _peer()["pair_cases"]
    assert len(cases) == 6
    for case in cases:
        doc1 = _fixture(case["doc1"], case["input_type"])
        doc2 = _fixture(case["doc2"], case["input_type"])
        observed = case["observed"]
        for algorithm, expected in observed["structural"].items():
            got = structural_similarity(doc1, doc2, algorithm=algorithm)
            assert got == pytest.approx(expected, abs=1e-12), (case["name"], algorithm)
        assert style_similarity(doc1, doc2) == pytest.approx(observed["style"], abs=1e-12)
        assert similarity(doc1, doc2, k=0.3) == pytest.approx(
            observed["similarity_k0_3_indel"], abs=1e-12
        )
        assert similarity(doc1, doc2) == pytest.approx(observed["similarity_k0_5_indel"], abs=1e-12)
        assert similarity(doc1, doc2, algorithm="pq_gram") == pytest.approx(
            observed["similarity_k0_5_pq_gram"], abs=1e-12
        )
        assert get_tags(doc1) == observed["tags1"]
        assert get_tags(doc2) == observed["tags2"]


def test_pre_parsed_documents_give_the_same_values_as_strings() -> None:
    case = _peer()["pair_cases"][0]
    text1, text2 = _fixture(case["doc1"], "str"), _fixture(case["doc2"], "str")
    parsed1, parsed2 = as_parsed_document(text1), as_parsed_document(text2)
    tree = lxml.html.parse(io.StringIO(str(text1)))
    for algorithm in ("indel", "pq_gram", "difflib"):
        expected = case["observed"]["structural"][algorithm]
        assert structural_similarity(parsed1, parsed2, algorithm) == expected
        assert structural_similarity(tree, parsed2, algorithm) == expected
    assert as_parsed_document(parsed1) is parsed1


def test_other_cases_of_html_similarity() -> None:
    others = {case["name"]: case for case in _peer()["other_cases"]}
    assert style_similarity("<h1>No class here</h1>", "<h1>Look no css class here</h1>") == 1.0
    assert jaccard_similarity(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert jaccard_similarity(["a", "b"], ["a", "b", "c"]) == others["jaccard 2/3"]["observed"]
    assert jaccard_similarity(["d", "e"], ["a", "b", "c"]) == 0.0
    assert jaccard_similarity(range(1, 1000000), range(999990, 2000000)) == pytest.approx(
        others["jaccard large"]["observed"], rel=1e-12
    )
    classes_doc = (PEER / "fixtures" / "classes_doc.html").read_text(encoding="utf-8")
    expected = set(others["get_classes str/bytes/tree"]["observed"])
    assert get_classes(classes_doc) == expected
    assert get_classes(classes_doc.encode()) == expected
    assert get_classes(lxml.html.fromstring(classes_doc)) == expected
    assert get_pq_grams("<html></html>")[("html", "*", "*", "*", "*")] == 1


def test_processing_instructions_and_comments_are_labelled() -> None:
    root = lxml.html.fromstring("<html><body><h1></h1></body></html>")
    root[0].insert(0, lxml.etree.ProcessingInstruction("php", "echo 1;"))
    root[0].insert(0, lxml.etree.Comment(" c "))
    assert get_tags(root) == ["html", "body", "comment", "processing-instruction", "h1"]


def test_html_text_is_parsed_by_the_one_parser_without_comments() -> None:
    """The layout sees the tree the page analysis sees: comments and PIs are not elements."""
    assert get_tags("<html><body><!-- c --><?php x ?><p>x</p></body></html>") == [
        "html", "body", "p",
    ]  # fmt: skip


@pytest.mark.parametrize("empty", ["", "   \n ", b""])
def test_empty_documents_raise_a_page_error(empty: str | bytes) -> None:
    with pytest.raises(PageError):
        style_similarity(empty, "<html></html>")
    with pytest.raises(PageError):
        structural_similarity("<html></html>", empty)


def test_unknown_algorithm_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="algorithm"):
        structural_similarity("<p>a</p>", "<p>b</p>", algorithm="bogus")


def test_difflib_has_no_autojunk_past_200_tags() -> None:
    many = "<html><body>" + "<div>x</div>" * 400 + "</body></html>"
    other = many.replace("<div>x</div>", "<span>x</span>", 1)
    # 402 tags each, one differs: 1 - 2/804.
    assert structural_similarity(many, other, "difflib") == pytest.approx(1 - 2 / 804)
    assert structural_similarity(many, other, "indel") == pytest.approx(1 - 2 / 804)


# --- layout algorithms ------------------------------------------------------------------------

LIST_PAGE = (
    "<html><head><title>t</title><meta charset='utf-8'></head><body><div id='nav'><a>1</a>"
    "<a>2</a></div><ul class='r'><li>a</li><li>b</li><li>c</li></ul></body></html>"
)


def test_identical_pages_have_layout_similarity_one() -> None:
    assert template_comparison(LIST_PAGE, LIST_PAGE).score == 1.0
    assert tag_comparison(LIST_PAGE, LIST_PAGE).score == 1.0
    # head, title and meta are not layout vertices: html body div a a ul li li li = 9 each.
    assert template_comparison(LIST_PAGE, LIST_PAGE).vertices == 18


def test_tag_comparison_counts_matched_pairs() -> None:
    other = LIST_PAGE.replace("<li>c</li>", "")
    match = tag_comparison(LIST_PAGE, other)
    assert match.matched_pairs == 8
    assert match.score == pytest.approx(16 / 17)


def test_template_comparison_penalises_different_children() -> None:
    fewer = LIST_PAGE.replace("<li>c</li>", "")
    match = template_comparison(LIST_PAGE, fewer, penalty=0.5)
    # 8 vertex pairs are covered, but ul/body/html lose weight for their differing children.
    assert match.matched_pairs == 8
    assert match.score < tag_comparison(LIST_PAGE, fewer).score
    assert match.score > 0.8
    no_penalty = template_comparison(LIST_PAGE, fewer, penalty=0.0)
    assert no_penalty.score == pytest.approx(16 / 17)


def test_template_comparison_of_unrelated_layouts_is_low() -> None:
    table = (
        "<html><body><table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>"
        "<form><input name=q><input type=submit></form></body></html>"
    )
    match = template_comparison(LIST_PAGE, table)
    assert match.score < 0.4
    assert (
        template_comparison(LIST_PAGE, table).score == template_comparison(LIST_PAGE, table).score
    )


def test_template_comparison_of_empty_pages_is_defined() -> None:
    assert template_comparison(None, None).score == 1.0
    assert template_comparison(None, LIST_PAGE).score == 0.0
    with pytest.raises(ConfigError):
        template_comparison(LIST_PAGE, LIST_PAGE, penalty=2.0)


def test_deeply_nested_pages_do_not_hit_the_recursion_limit() -> None:
    deep = "<html><body>" + "<div>" * 3000 + "x" + "</div>" * 3000 + "</body></html>"
    assert template_comparison(deep, deep).score == 1.0


# --- text and links ---------------------------------------------------------------------------


def test_text_similarity_is_the_tfidf_cosine() -> None:
    assert text_similarity({"appl": 2, "pie": 1}, {"appl": 2, "pie": 1}) == pytest.approx(1.0)
    assert text_similarity({"appl": 1}, {"pear": 1}) == 0.0
    assert text_similarity({}, {"pear": 1}) == 0.0
    idf = InverseDocumentFrequency.fit([{"a": 1, "b": 1}, {"a": 1}, {"c": 1}])
    # idf(a) = ln(4/3) + 1, idf(b) = ln(4/2) + 1.
    assert idf.weight("a") == pytest.approx(np.log(4 / 3) + 1)
    a_weight, b_weight = idf.weight("a"), idf.weight("b")
    expected = a_weight / np.hypot(a_weight, b_weight)
    assert text_similarity({"a": 1, "b": 1}, {"a": 1}, idf) == pytest.approx(expected)


def test_link_similarities_with_support() -> None:
    graph = LinkGraph(
        {
            "http://s/1": ["http://s/a", "http://s/b", "http://s/x"],
            "http://s/2": ["http://s/a", "http://s/b", "http://s/y"],
            "http://s/3": ["http://s/1", "http://s/2"],
            "http://s/4": ["http://s/1"],
        }
    )
    successors = successor_similarity(graph, "http://s/1", "http://s/2")
    assert (successors.score, successors.support) == (0.5, 4)
    predecessors = predecessor_similarity(graph, "http://s/1", "http://s/2")
    assert (predecessors.score, predecessors.support) == (0.5, 2)
    group = group_predecessor_similarity(graph, ["http://s/1"], ["http://s/2", "http://s/a"])
    # prd(1) = {3, 4}; prd(2) | prd(a) = {3} | {1, 2}: one shared of four.
    assert (group.score, group.support) == (0.25, 4)
    nothing = successor_similarity(graph, "http://s/a", "http://s/b")
    assert (nothing.score, nothing.support) == (0.0, 0)
    pooled = link_similarity(["http://s/a"], ["http://s/a", "http://s/b"], ["p"], ["q"])
    assert (pooled.score, pooled.support) == (pytest.approx(1 / 4), 4)


# --- visual -----------------------------------------------------------------------------------


def _png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels.astype("uint8")).save(buffer, "PNG")
    return buffer.getvalue()


def _rubner_emd_by_linprog(first: np.ndarray, second: np.ndarray, cost: np.ndarray) -> float:
    rows, cols = cost.shape
    total = min(first.sum(), second.sum())
    supply = np.zeros((rows, rows * cols))
    for i in range(rows):
        supply[i, i * cols : (i + 1) * cols] = 1
    demand = np.zeros((cols, rows * cols))
    for j in range(cols):
        demand[j, j::cols] = 1
    result = linprog(
        cost.ravel(),
        A_ub=np.vstack([supply, demand]),
        b_ub=np.concatenate([first, second]),
        A_eq=np.ones((1, rows * cols)),
        b_eq=[total],
        bounds=(0, None),
        method="highs",
    )
    assert result.success
    return float(result.fun / total)


def test_emd_agrees_with_rubners_linear_program() -> None:
    rng = np.random.default_rng(7)
    for rows, cols in ((5, 5), (4, 9), (10, 3), (1, 6)):
        first = rng.random(rows)
        second = rng.random(cols) * rng.uniform(0.3, 2.0)
        cost = rng.random((rows, cols))
        expected = _rubner_emd_by_linprog(first, second, cost)
        assert earth_movers_distance(first, second, cost) == pytest.approx(expected, abs=1e-6)


def test_emd_of_real_signatures_agrees_with_linear_program() -> None:
    rng = np.random.default_rng(3)
    params = SimilarityParams(visual_width=16, visual_height=16, signature_colours=12)
    first = colour_signature(_png(rng.integers(0, 256, (40, 60, 3)) // 64 * 64), params)
    second = colour_signature(_png(rng.integers(0, 256, (70, 30, 3)) // 64 * 64), params)
    cost = ground_distances(first, second)
    assert first.weights.sum() < 1.0  # top-12 colours only: partial matching is exercised
    expected = _rubner_emd_by_linprog(first.weights, second.weights, cost)
    assert earth_movers_distance(first.weights, second.weights, cost) == pytest.approx(
        expected, abs=1e-6
    )


def test_colour_signature_of_a_two_colour_page() -> None:
    pixels = np.full((100, 100, 3), 255)
    pixels[:50] = [255, 0, 0]
    signature = colour_signature(_png(pixels), SimilarityParams(degrading_factor=32))
    assert signature.weights.tolist() == [0.5, 0.5]
    colours = {tuple(colour) for colour in signature.colours.tolist()}
    assert colours == {(7, 7, 0, 0), (7, 7, 7, 7)}
    # Red fills the top half: its centroid is at y = 2 of rows 0..9 (10x10 resize).
    red = signature.colours.tolist().index([7, 7, 0, 0])
    assert signature.centroids[red][1] == pytest.approx(2.0, abs=0.01)


def test_visual_similarity_on_blank_one_colour_and_different_sizes() -> None:
    white = _png(np.full((300, 200, 3), 255))
    white_small = _png(np.full((40, 90, 3), 255))
    black = _png(np.zeros((50, 80, 3)))
    half = np.full((300, 200, 3), 255)
    half[:150] = [0, 0, 0]
    assert visual_similarity(white, white_small) == 1.0
    black_white = visual_similarity(white, black)
    half_white = visual_similarity(white, _png(half))
    assert 0.0 <= black_white < half_white < 1.0
    with pytest.raises(InputFormatError):
        visual_similarity(b"", white)
    with pytest.raises(InputFormatError):
        visual_similarity(b"not a png", white)


# --- the comparison ---------------------------------------------------------------------------


def _features(layout: str, keywords: dict[str, int], links: list[str]) -> PageFeatures:
    return page_features(layout, url="http://s/", keywords=keywords, links=links)


def test_cascade_stops_at_the_first_dissimilar_stage() -> None:
    table = "<html><body><table><tr><td>1</td></tr></table><form><input></form></body></html>"
    first = _features(LIST_PAGE, {"appl": 1}, ["http://s/a"])
    second = _features(table, {"appl": 1}, ["http://s/a"])
    cascade = compare_pages(first, second, "cascade")
    assert cascade.stopped_at == "layout"
    assert cascade.verdict == "dissimilar"
    assert [r.verdict for r in cascade.stages][1:] == ["not_run", "not_run", "not_run"]
    full = compare_pages(first, second, "full")
    assert full.stopped_at is None
    assert full.stage("text").score == pytest.approx(1.0)
    assert full.stage("links").verdict == "similar"
    assert full.stage("visual").verdict == "skipped"
    assert full.verdict == "dissimilar"


def test_cascade_runs_every_stage_when_all_pass() -> None:
    first = _features(LIST_PAGE, {"appl": 2, "pie": 1}, ["http://s/a", "http://s/b"])
    second = _features(LIST_PAGE, {"appl": 1, "pie": 1}, ["http://s/a", "http://s/b"])
    report = compare_pages(first, second, "cascade")
    assert report.verdict == "similar"
    assert report.stopped_at is None
    assert [r.verdict for r in report.stages] == ["similar", "similar", "similar", "skipped"]
    # The default weights (fitted on big9) put everything on links.
    assert report.combined_score == report.stage("links").score == 1.0
    equal_weights = SimilarityParams(stage_weights=(1.0, 1.0, 1.0, 1.0))
    equal = compare_pages(first, second, "cascade", equal_weights)
    assert equal.combined_score == pytest.approx(np.mean([r.score for r in equal.stages[:3]]))
    stopped_at_text = compare_pages(first, _features(LIST_PAGE, {"zzz": 1}, []), "cascade")
    assert stopped_at_text.stopped_at == "text"


def test_combined_verdict_falls_back_to_the_stages_without_links() -> None:
    with_links = _features(LIST_PAGE, {"appl": 1}, ["http://s/a", "http://s/b"])
    other_links = _features(LIST_PAGE, {"appl": 1}, ["http://t/c"])
    # Same layout and text, no shared link: the links-weighted combined score decides.
    report = compare_pages(with_links, other_links)
    assert (report.mode, report.combined_score, report.verdict) == ("combined", 0.0, "dissimilar")
    assert report.stage("layout").verdict == "similar"
    # Neither page has links: no weighted stage has data, the stages judge as in full mode.
    alike = [_features(LIST_PAGE, {"appl": 1}, []) for _ in range(2)]
    same = compare_pages(*alike)
    assert (same.combined_score, same.verdict) == (None, "similar")
    table = _features(
        "<html><body><table><tr><td>1</td></tr></table></body></html>", {"appl": 1}, []
    )
    different = compare_pages(alike[0], table)
    assert (different.combined_score, different.verdict) == (None, "dissimilar")


def test_empty_pages_compare_to_defined_results() -> None:
    empty = page_features("", url="http://s/e")
    also_empty = page_features(b"   ", url="http://s/f")
    assert empty.document is None and empty.problems
    report = compare_pages(empty, also_empty, "full")
    assert report.verdict == "undetermined"
    assert all(r.verdict == "skipped" for r in report.stages)
    assert report.combined_score is None
    against_page = compare_pages(empty, page_features(LIST_PAGE, url="http://s/"), "full")
    assert against_page.stage("layout").score == 0.0
    assert against_page.verdict == "dissimilar"
    with pytest.raises(ConfigError):
        compare_pages(empty, empty, "sideways")


def test_page_features_take_keywords_and_links_from_the_analysis() -> None:
    html = (
        "<html><head><title>Apple pie</title></head><body><div><p>Apple pie recipes with "
        "apples and cinnamon, baked apples and more apple pie.</p><a href='/x'>x</a></div>"
        "</body></html>"
    )
    features = page_features(html, url="http://site.test/")
    assert features.keywords.get("appl", 0) >= 3
    assert "site.test/x" in features.links


def test_similar_pairs_with_and_without_blocking() -> None:
    pages: list[PageFeatures] = []
    for number in range(12):
        # A tag of its own on each page: none is identical to another (those form groups).
        own = f"<x{number}>z</x{number}>"
        forum = "<html><body>" + "<div class='post'><p>t</p><span>u</span></div>" * 30 + own
        shop = "<html><body><table>" + "<tr><td>p</td><td>$</td></tr>" * 30 + "</table>" + own
        layout = forum if number % 2 else shop
        words = {"forum": 2, "post": 1} if number % 2 else {"shop": 2, "price": 1}
        pages.append(page_features(layout, url=f"http://s/{number}", keywords=words, links=[]))
    exhaustive = find_similar_pairs(pages, SimilarityParams(blocking_min_pages=100))
    blocked = find_similar_pairs(pages, SimilarityParams(blocking_min_pages=2))
    assert exhaustive.blocking == "all-pairs" and exhaustive.candidate_pairs == 66
    assert blocked.blocking == "minhash-lsh"
    # Only same-kind pairs are candidates: 2 * C(6, 2) = 30 of 66.
    assert blocked.candidate_pairs == 30
    assert len(blocked.pairs) == len(exhaustive.pairs) == 30
    for pair in blocked.pairs:
        assert int(pair["url_1"].rsplit("/", 1)[1]) % 2 == int(pair["url_2"].rsplit("/", 1)[1]) % 2
    assert blocked.identical_groups == exhaustive.identical_groups == ()


def test_identical_pages_collapse_into_one_group_compared_once() -> None:
    """400 identical pages and 2 others: one group, compared as one page (not C(400, 2) pairs)."""
    same = "<html><body>" + "<div class='post'><p>t</p><span>u</span></div>" * 20 + "</body>"
    pages = [page_features(same, url=f"http://s/{n}", keywords={"post": 2}) for n in range(400)]
    for number in range(2):
        table = "<html><body><table>" + "<tr><td>p</td><td>$</td></tr>" * 20 + f"<x{number}>"
        pages.append(page_features(table, url=f"http://o/{number}", keywords={"shop": 1}))
    result = find_similar_pairs(pages, SimilarityParams(blocking_min_pages=200))
    assert result.blocking == "minhash-lsh"
    assert result.identical_groups == (tuple(f"http://s/{n}" for n in range(400)),)
    assert result.candidate_pairs <= 3  # three distinct pages
    assert result.to_dict()["identical_groups"][0][:2] == ["http://s/0", "http://s/1"]


def test_an_lsh_bucket_over_the_cap_pairs_each_page_with_its_next_neighbours_only() -> None:
    """300 near-identical pages share every bucket: candidates grow as pages x cap, counted."""
    pages = []
    for number in range(300):
        html = "<html><body>" + "<div><p>t</p></div>" * 40 + f"<p>{number}</p>"
        pages.append(page_features(html, url=f"http://s/{number}", keywords={f"w{number}": 1}))
    params = SimilarityParams(blocking_min_pages=2, lsh_max_bucket=8)
    result = find_similar_pairs(pages, params)
    assert result.identical_groups == ()
    assert result.capped_buckets >= 1
    assert 299 <= result.candidate_pairs <= 300 * 7  # each page with at most its next 7


def test_a_saved_page_resolves_its_links_on_the_url_it_states() -> None:
    body = "<p><a href='/x'>x</a> <a href='https://o.org/y'>y</a></p></body></html>"
    og = "<html><head><meta property='og:url' content='https://s.org/a'></head><body>"
    stated = page_features(og + body, url="file:///tmp/a.html")
    assert stated.links_resolved and stated.links == {"s.org/x", "o.org/y"}
    relative_base = "<html><head><base href='/sub/'></head><body>"  # not a URL by itself
    unknown = page_features(relative_base + body, url="file:///tmp/b.html")
    assert not unknown.links_resolved and unknown.links == {"o.org/y"}
    given_links = page_features(og + body, url="file:///tmp/a.html", links=["http://t.org/z"])
    assert given_links.links == {"s.org/x", "o.org/y"}  # resolved again on the stated URL
