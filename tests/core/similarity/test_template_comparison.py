"""The fast template comparison returns exactly what the seed's slow implementation returns."""

from __future__ import annotations

import copy
import itertools
import random
import tarfile
from pathlib import Path

import lxml.etree
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import template_reference as reference

import websim_crawler.core.similarity.template_matching as template_matching
from websim_crawler.core.similarity import as_parsed_document, template_comparison
from websim_crawler.core.similarity.documents import ParsedDocument

TESTS = Path(__file__).resolve().parents[2]
BOOKS_AND_SITES = TESTS.parents[0] / ".." / "shared" / "datasets" / "books-and-sites"
# Few tags and attributes, so that templates tie on size and penalty and the order matters.
TAGS = ("div", "span", "p", "a", "ul", "li", "script")
ATTRIBUTES = ("class", "id", "href")


@st.composite
def trees(draw: st.DrawFn, max_vertices: int = 40) -> lxml.etree._Element:
    """A random element tree: each new element goes under a randomly drawn earlier one."""
    root = lxml.etree.Element("html")
    elements = [lxml.etree.SubElement(root, "body")]
    for _ in range(draw(st.integers(0, max_vertices))):
        parent = elements[draw(st.integers(0, len(elements) - 1))]
        child = lxml.etree.SubElement(parent, draw(st.sampled_from(TAGS)))
        for name in sorted(draw(st.sets(st.sampled_from(ATTRIBUTES), max_size=2))):
            child.set(name, "x")
        elements.append(child)
    return root


@st.composite
def edited(draw: st.DrawFn, tree: lxml.etree._Element) -> lxml.etree._Element:
    """A copy of a tree with a few random edits: subtrees removed, elements added or renamed."""
    result = copy.deepcopy(tree)
    for _ in range(draw(st.integers(0, 4))):
        elements = list(result.iter())[1:]
        if not elements:
            break
        element = elements[draw(st.integers(0, len(elements) - 1))]
        edit = draw(st.sampled_from(("remove", "add", "rename", "attribute")))
        parent = element.getparent()
        if edit == "remove" and parent is not None and parent is not result:
            parent.remove(element)
        elif edit == "add":
            element.insert(draw(st.integers(0, len(element))), lxml.etree.Element("div"))
        elif edit == "rename":
            element.tag = draw(st.sampled_from(TAGS[:-1]))
        else:
            element.set(draw(st.sampled_from(ATTRIBUTES)), "y")
    return result


@st.composite
def tree_pairs(draw: st.DrawFn) -> tuple[lxml.etree._Element, lxml.etree._Element]:
    """Two unrelated random trees, or a random tree and an edited copy of it."""
    first = draw(trees())
    if draw(st.booleans()):
        return first, draw(trees())
    return first, draw(edited(first))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=tree_pairs(),
    penalty=st.sampled_from((0.0, 0.5, 1.0)) | st.floats(0.0, 1.0),
    seed_candidates=st.integers(1, 6),
    identical_min_size=st.sampled_from((2, 8)),
)
@pytest.mark.slow
def test_template_comparison_equals_the_reference_on_random_trees(
    pair: tuple[lxml.etree._Element, lxml.etree._Element],
    penalty: float,
    seed_candidates: int,
    identical_min_size: int,
) -> None:
    first, second = (as_parsed_document(tree) for tree in pair)
    options = {"penalty": penalty, "seed_candidates": seed_candidates}
    # A small threshold sends most identical subtrees, partly covered ones too, the fast way.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(template_matching, "_IDENTICAL_MIN_SIZE", identical_min_size)
        for one, other in ((first, second), (second, first)):
            expected = reference.template_comparison(one, other, **options)
            assert template_comparison(one, other, **options) == expected


def _assert_same_on_all_pairs(documents: list[ParsedDocument]) -> int:
    compared = 0
    for first, second in itertools.product(documents, repeat=2):
        assert template_comparison(first, second) == reference.template_comparison(first, second)
        compared += 1
    return compared


def test_template_comparison_equals_the_reference_on_the_test_sites() -> None:
    paths = sorted((TESTS / "support" / "site").glob("*.html")) + sorted(
        (TESTS / "support" / "pages_site").glob("*.html")
    )
    documents = [as_parsed_document(path.read_bytes()) for path in paths]
    assert len(documents) >= 12
    assert _assert_same_on_all_pairs(documents) == len(documents) ** 2


def test_template_comparison_equals_the_reference_on_real_pages() -> None:
    if not BOOKS_AND_SITES.is_dir():
        pytest.skip(f"books-and-sites not found at {BOOKS_AND_SITES}")
    documents = []
    for archive_name, names in (
        ("sites.tar.gz", ("1.html", "2.html", "3.html", "5.html", "8.html")),
        ("bookfiles.tar.gz", ("1.html", "2.html", "3.html")),
    ):
        with tarfile.open(BOOKS_AND_SITES / archive_name) as archive:
            for name in names:
                member = archive.extractfile(name)
                assert member is not None
                documents.append(as_parsed_document(member.read()))
    # Home pages of different sites and product pages of one site: small and large templates.
    assert _assert_same_on_all_pairs(documents) == 64


def test_the_shape_cache_shared_by_comparisons_is_bounded_and_changes_no_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths = sorted((TESTS / "support" / "site").glob("*.html"))[:6]
    documents = [as_parsed_document(path.read_bytes()) for path in paths]
    monkeypatch.setattr(template_matching, "PAIR_SHAPE_CACHE_SIZE", 5)
    template_matching._PAIR_SHAPES.clear()
    for penalty in (0.5, 0.25):  # the penalty is part of the key: no weight of another penalty
        for first, second in itertools.product(documents, repeat=2):
            expected = reference.template_comparison(first, second, penalty=penalty)
            assert template_comparison(first, second, penalty=penalty) == expected
            assert len(template_matching._PAIR_SHAPES) <= 5
    template_matching._PAIR_SHAPES.clear()


TRAFILATURA_EVAL = TESTS.parents[0] / ".." / "shared" / "datasets" / "trafilatura-eval"
# The four heaviest pages of trafilatura's evaluation set (5,600 to 10,100 elements).
HEAVY_PAGES = (
    "tests/eval/siegfried-marcus-berufsschule.at.kft.html",
    "tests/eval/leichtathletik-ostalbkreis.de.1952007.html",
    "tests/eval/umweltbundesamt.de-atomkraft.html",
    "tests/eval/dailymail.co.uk.food.html",
)


def _edited_copy(document: ParsedDocument, every: int) -> ParsedDocument:
    """A copy of a page with every ``every``-th element of its body removed or renamed."""
    root = copy.deepcopy(document.root)
    for index, element in enumerate(list(root.iter("div", "li", "tr", "p", "span", "a"))):
        parent = element.getparent()
        if index % every == 0 and parent is not None:
            parent.remove(element)
        elif index % every == 1:
            element.tag = "section"
    return as_parsed_document(root)


@pytest.mark.slow
def test_template_comparison_equals_the_reference_on_heavy_real_pages() -> None:
    archive_path = TRAFILATURA_EVAL / "trafilatura-eval.tar.xz"
    if not archive_path.is_file():
        pytest.skip(f"trafilatura-eval not found at {archive_path}")
    with tarfile.open(archive_path) as archive:
        documents = []
        for name in HEAVY_PAGES:
            member = archive.extractfile(name)
            assert member is not None
            documents.append(as_parsed_document(member.read()))
    assert min(len(document.vertices) for document in documents) >= 3000
    # Different sites, each page with itself, and a page with an edited copy of it (one large
    # template partly covered by smaller ones).
    assert _assert_same_on_all_pairs(documents) == 16
    for document in documents[:2]:
        edited = _edited_copy(document, 9)
        for one, other in ((document, edited), (edited, document)):
            assert template_comparison(one, other) == reference.template_comparison(one, other)


def _blog_page(posts: int, seed: int) -> str:
    """A generated page of many posts that share a template but vary in their parts."""
    rng = random.Random(seed)
    parts = []
    for _ in range(posts):
        paragraphs = "".join(
            "<p><a href=x>link</a> text</p>" if rng.random() < 0.4 else "<p>text</p>"
            for _ in range(rng.randint(1, 5))
        )
        tags = "<ul>" + "<li><a href=t>tag</a></li>" * rng.randint(1, 4) + "</ul>"
        parts.append(
            f"<article class=post><h2><a href=p>title</a></h2><div class=meta><span>a</span>"
            f"<span>b</span></div>{paragraphs}{tags if rng.random() < 0.5 else ''}</article>"
        )
        if rng.random() < 0.1:
            parts.append(
                "<table>" + "<tr><td>1</td><td>2</td></tr>" * rng.randint(1, 3) + "</table>"
            )
    menu = "<nav><ul>" + "<li><a href=m>menu</a></li>" * 8 + "</ul></nav>"
    return f"<html><body><header>{menu}</header><main>{''.join(parts)}</main></body></html>"


def test_template_comparison_equals_the_reference_on_heavy_generated_pages() -> None:
    first, second = (as_parsed_document(_blog_page(300, seed)) for seed in (1, 2))
    assert min(len(first.vertices), len(second.vertices)) >= 3000
    edited = _edited_copy(first, 13)
    nested = [as_parsed_document(_nested_page(200, seed)) for seed in (1, 2)]
    for one, other in ((first, second), (first, edited), (edited, first), tuple(nested)):
        for penalty in (0.5, 1.0):
            expected = reference.template_comparison(one, other, penalty=penalty)
            assert template_comparison(one, other, penalty=penalty) == expected


def _nested_page(depth: int, seed: int) -> str:
    """A generated page of nested blocks, each holding a small varying part and the next."""
    rng = random.Random(seed)
    opening = "".join(
        "<div><span>a</span>" if rng.random() < 0.5 else "<div><p>b</p>" for _ in range(depth)
    )
    return f"<html><body>{opening}{'</div>' * depth}</body></html>"


def test_template_comparison_work_grows_linearly_with_the_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pairs expanded and pairs walked per vertex, pages growing eightfold: counted, not timed.

    On nested blocks every seed's template holds the blocks below it; fitting each in turn
    (the seed's way, and this package's until the whole-template sizes) grows quadratically.
    """
    work = [0]
    expand, fit = template_matching.TemplateMatcher.expand, template_matching.TemplateMatcher.fit

    def counted_expand(self: template_matching.TemplateMatcher, u: int, v: int) -> object:
        work[0] += 1
        return expand(self, u, v)

    def counted_fit(self: template_matching.TemplateMatcher, *args: object) -> object:
        fitted = fit(self, *args)  # type: ignore[arg-type]
        work[0] += len(fitted[1])
        return fitted

    monkeypatch.setattr(template_matching.TemplateMatcher, "expand", counted_expand)
    monkeypatch.setattr(template_matching.TemplateMatcher, "fit", counted_fit)
    for page, sizes in ((_blog_page, (100, 200, 400, 800)), (_nested_page, (30, 60, 120, 240))):
        per_vertex = []
        for size in sizes:
            first, second = (as_parsed_document(page(size, seed)) for seed in (3, 4))
            work[0] = 0
            template_comparison(first, second)
            per_vertex.append(work[0] / (len(first.vertices) + len(second.vertices)))
        # Work per vertex stays within a factor of 2 while the pages grow eightfold.
        assert max(per_vertex) <= 2 * min(per_vertex), (page.__name__, per_vertex)


def test_the_child_blocks_cache_is_bounded_and_changes_no_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths = sorted((TESTS / "site").glob("*.html"))[:6]
    documents = [as_parsed_document(path.read_bytes()) for path in paths]
    monkeypatch.setattr(template_matching, "CHILD_BLOCKS_CACHE_SIZE", 5)
    monkeypatch.setattr(
        template_matching, "_PAIR_SHAPES", {}
    )  # every shape's blocks looked up afresh
    monkeypatch.setattr(template_matching, "_CHILD_BLOCKS", {})
    for first, second in itertools.product(documents, repeat=2):
        assert template_comparison(first, second) == reference.template_comparison(first, second)
        assert len(template_matching._CHILD_BLOCKS) <= 5


def test_subtree_classes_and_child_tag_masks_say_what_they_claim() -> None:
    document = as_parsed_document(_blog_page(40, 5))
    vertices = document.vertices
    classes, digests = vertices.subtree_classes.tolist(), vertices.subtree_digests
    by_digest: dict[bytes, int] = {}
    for vertex_class, digest in zip(classes, digests, strict=True):
        assert by_digest.setdefault(digest, vertex_class) == vertex_class
    assert len(set(by_digest.values())) == len(by_digest) < len(vertices)
    masks = vertices.child_tag_masks.tolist()
    child_tags = [{vertices.tags[child] for child in kids} for kids in vertices.children]
    for u, v in itertools.combinations(range(0, len(vertices), 7), 2):
        if child_tags[u] & child_tags[v]:
            assert masks[u] & masks[v]
    assert all(mask == 0 for mask, kids in zip(masks, vertices.children, strict=True) if not kids)
