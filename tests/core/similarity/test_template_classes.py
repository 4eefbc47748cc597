"""Template classes: the chrome of a collection discounted, pages share a template by classes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from websim_crawler.core.similarity import page_features
from websim_crawler.core.similarity.pairs import find_similar_pairs
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.core.similarity.questions import ask
from websim_crawler.core.similarity.template_classes import (
    BARE_SHARE,
    CHROME_MIN_PAGES,
    chrome_classes,
    pair_class_similarity,
    template_class_similarity,
)

CHROME = (
    "<div class='site-header'><a class='logo' href='/'>Shop</a><ul class='main-nav'>"
    "<li class='nav-item'><a href='/a'>a</a></li><li class='nav-item'><a href='/b'>b</a></li>"
    "</ul></div>{main}<div class='site-footer'><p class='legal'>(c) shop</p></div>"
)
RESULTS = (
    "<div class='results'><p class='result-count'>{n} results</p><ol class='result-list'>"
    + "".join(
        f"<li class='result'><a class='result-title' href='/r/{k}'>r{k}</a></li>" for k in range(8)
    )
    + "</ol><a class='next-page' href='/s?p=2'>next</a></div>"
)
RECORD = (
    "<article class='record'><h1 class='record-title'>Record {n}</h1>"
    "<dl class='fields'><dt>Author</dt><dd class='author'>A {n}</dd></dl></article>"
)


def page(main: str, number: int, host: str = "shop.test") -> str:
    body = CHROME.format(main=main.format(n=number))
    return f"<html><head><title>Page {number}</title></head><body>{body}</body></html>"


def test_chrome_is_what_most_pages_of_a_collection_use() -> None:
    sets = [frozenset({"header", "footer", f"own{n}"}) for n in range(CHROME_MIN_PAGES)]
    assert chrome_classes(sets) == {"header", "footer"}
    assert chrome_classes(sets[: CHROME_MIN_PAGES - 1]) == frozenset()  # too few to tell
    # Used by fewer than 70% of the pages: a template, not the chrome.
    mixed = [frozenset({"header", "list"}) for _ in range(6)] + [
        frozenset({"header", "record"}) for _ in range(4)
    ]
    assert chrome_classes(mixed) == {"header"}


def test_template_classes_are_compared_by_containment_outside_the_chrome() -> None:
    chrome = frozenset({"header", "footer"})
    short = frozenset({"header", "record", "title"})
    long = frozenset({"header", "footer", "record", "title", "author", "date"})
    assert template_class_similarity(short, long, chrome) == 1.0  # a record with fewer fields
    assert template_class_similarity(short, frozenset({"header", "list"}), chrome) == 0.0
    assert template_class_similarity(frozenset({"header"}), frozenset({"footer"}), chrome) == 1.0
    assert template_class_similarity(frozenset({"header"}), short, chrome) == 0.0


def test_pages_that_wear_the_chrome_with_a_few_content_classes_share_its_template() -> None:
    chrome = frozenset(f"theme-{n}" for n in range(20))
    few = int(BARE_SHARE * 20)  # a code block's language, an admonition: content, not template
    with_code = chrome | {f"language-{n}" for n in range(few)}
    assert template_class_similarity(chrome, with_code, chrome) == 1.0
    record = chrome | {f"record-{n}" for n in range(few + 3)}  # a template of its own
    assert template_class_similarity(chrome, record, chrome) == 0.0


def test_two_pages_alone_share_a_template_when_what_both_use_is_most_of_each() -> None:
    theme = frozenset(f"theme-{n}" for n in range(20))
    assert pair_class_similarity(theme, theme | {"language-python"}) == 20 / 21
    results = theme | {f"result-{n}" for n in range(8)}
    records = theme | {f"record-{n}" for n in range(6)}
    assert pair_class_similarity(results, records) == 20 / 28  # the chrome alone: apart
    assert pair_class_similarity(theme, frozenset()) == 0.0


@settings(deadline=None)  # a loaded machine: invariants, not timings
@given(
    st.frozensets(st.sampled_from("abcdefgh")),
    st.frozensets(st.sampled_from("abcdefgh")),
    st.frozensets(st.sampled_from("abcd")),
)
def test_template_class_similarity_is_a_symmetric_share(
    first: frozenset[str], second: frozenset[str], chrome: frozenset[str]
) -> None:
    score = template_class_similarity(first, second, chrome)
    assert 0.0 <= score <= 1.0
    assert score == template_class_similarity(second, first, chrome)


def one_site(results: int, records: int) -> list[str]:
    return [page(RESULTS, n) for n in range(results)] + [
        page(RECORD, n) for n in range(results, results + records)
    ]


def test_same_template_tells_a_sites_result_lists_from_its_records() -> None:
    html = one_site(6, 10)
    pages = [page_features(text, url=f"http://shop.test/{n}") for n, text in enumerate(html)]
    params = ask(SimilarityParams(), "same-template")
    result = find_similar_pairs(pages, params)
    groups = sorted(sorted(int(url.rsplit("/", 1)[1]) for url in group) for group in result.groups)
    assert groups == [list(range(6)), list(range(6, 16))]
    assert all(set(pair["scores"]) == {"template_classes"} for pair in result.pairs)


def test_a_small_collection_is_judged_pair_by_pair_and_pages_without_classes_by_the_stages() -> (
    None
):
    params = ask(SimilarityParams(), "same-template")
    few = [
        page_features(text, url=f"http://shop.test/{n}") for n, text in enumerate(one_site(2, 2))
    ]
    small = find_similar_pairs(few, params)
    assert small.decided_by == ("template_classes", "layout")
    groups = sorted(sorted(int(url.rsplit("/", 1)[1]) for url in group) for group in small.groups)
    assert groups == [[0, 1], [2, 3]]  # the chrome both share is not a template of its own
    assert all(pair["scores"]["template_classes"] >= 0.8 for pair in small.pairs)
    plain = "<html><body><h1>Plain {n}</h1><p>No classes at all here, {n}.</p></body></html>"
    bare = [page_features(plain.format(n=n), url=f"http://old.test/{n}") for n in range(12)]
    result = find_similar_pairs(bare, params)
    assert result.pairs and all("layout" in pair["scores"] for pair in result.pairs)
