"""The fast template comparison returns exactly what the seed's slow implementation returns."""

from __future__ import annotations

import copy
import itertools
import tarfile
from pathlib import Path

import lxml.etree
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import template_reference as reference

from websim_crawler.core.similarity import as_parsed_document, layout, template_comparison
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
        patch.setattr(layout, "_IDENTICAL_MIN_SIZE", identical_min_size)
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
    monkeypatch.setattr(layout, "PAIR_SHAPE_CACHE_SIZE", 5)
    layout._PAIR_SHAPES.clear()
    for penalty in (0.5, 0.25):  # the penalty is part of the key: no weight of another penalty
        for first, second in itertools.product(documents, repeat=2):
            expected = reference.template_comparison(first, second, penalty=penalty)
            assert template_comparison(first, second, penalty=penalty) == expected
            assert len(layout._PAIR_SHAPES) <= 5
    layout._PAIR_SHAPES.clear()
