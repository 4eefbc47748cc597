"""Near-duplicate pages: sentences, content region, index, classes, relations, MinHash, CLI."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from websim_crawler.cli import main
from websim_crawler.core.neardup import NearDuplicateFinder, NeardupParams, find_near_duplicates
from websim_crawler.core.neardup.content import content_texts, join_blocks
from websim_crawler.core.neardup.index import ExactSentenceIndex, SiteTemplateRule
from websim_crawler.core.neardup.lsh import CountMinSketch
from websim_crawler.core.neardup.pages import PageSentences, page_sentences
from websim_crawler.core.neardup.relations import (
    PagePair,
    pair_class,
    path_similarity,
    relation_kind,
)
from websim_crawler.core.neardup.sentences import (
    normalize_sentence,
    sentence_hash,
    split_sentences,
)
from websim_crawler.core.page import analyse_page
from websim_crawler.core.urls import registered_domain_of
from websim_crawler.demo.site import Archive, record_page
from websim_crawler.errors import ConfigError, PageError

TOPICS = ["harbour", "glacier", "orchard", "violin", "lantern", "compass", "meadow", "falcon"]
SENTENCES = [
    f"The {TOPICS[i % 8]} report number {i} describes event {i * 37 % 101} in great detail."
    for i in range(80)
]


def page_html(sentences: list[str], links: tuple[str, ...] = (), menu: bool = True) -> str:
    """A page with a link menu, the given content sentences and optional in-text links."""
    menu_html = (
        "<div class='nav'><ul>"
        + "".join(f"<li><a href='/m{i}'>Menu entry {i}</a></li>" for i in range(8))
        + "</ul></div>"
        if menu
        else ""
    )
    body = "".join(f"<p>{sentence}</p>" for sentence in sentences)
    body += "".join(f"<p>Read the original <a href='{url}'>here</a>.</p>" for url in links)
    return (
        f"<html><head><title>Page</title></head><body>{menu_html}"
        f"<div class='main'>{body}</div></body></html>"
    )


def item(url: str, sentences: list[str], links: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"url": url, "html": page_html(sentences, links), "links": list(links)}


def pairs_by_urls(report_pairs: list[Any]) -> dict[frozenset[str], dict[str, Any]]:
    return {frozenset((pair.a, pair.b)): pair.to_dict() for pair in report_pairs}


# --- sentences ---------------------------------------------------------------------------------


def test_split_sentences_in_several_languages() -> None:
    text = (
        "Pi is 3.14 at example.com today. Is it? Yes!\n"
        "これは日本語の文です。次の文！\n"
        "这是中文句子。\n"
        "यह हिंदी वाक्य है। दूसरा वाक्य"
    )
    assert split_sentences(text) == [
        "Pi is 3.14 at example.com today.",
        "Is it?",
        "Yes!",
        "これは日本語の文です。",
        "次の文！",
        "这是中文句子。",
        "यह हिंदी वाक्य है।",
        "दूसरा वाक्य",
    ]
    assert split_sentences('He said "stop." Then he left') == ['He said "stop."', "Then he left"]
    assert split_sentences("  \n\n ") == []


def test_normalised_sentences_hash_alike() -> None:
    assert normalize_sentence("  «Ｈｅｌｌｏ   World!» ") == "hello world"
    assert sentence_hash(normalize_sentence("The  CAT sat.")) == sentence_hash(
        normalize_sentence("the cat sat")
    )
    assert sentence_hash("the cat sat") != sentence_hash("the cat sits")
    assert 0 <= sentence_hash("x") < 2**64


# --- content region ----------------------------------------------------------------------------


def test_content_region_drops_link_menus_and_keeps_text() -> None:
    params = NeardupParams()
    analysis = analyse_page(page_html(SENTENCES[:3], menu=True), "http://a.test/")
    texts = "\n".join(content_texts(analysis.chunks, params))
    assert "Menu entry" not in texts
    for sentence in SENTENCES[:3]:
        assert sentence in texts


def test_link_block_with_a_long_sentence_is_content() -> None:
    long_link = (
        "A long linked headline that tells the whole story of the harbour and its ships in one go"
    )
    html = f"<html><body><div><a href='/x'>{long_link}</a></div><div><p>x</p></div></body></html>"
    analysis = analyse_page(html, "http://a.test/")
    assert any(long_link in text for text in content_texts(analysis.chunks, NeardupParams()))
    strict = NeardupParams(noncontent_sentence_chars=200)
    assert not any(long_link in text for text in content_texts(analysis.chunks, strict))


def test_same_depth_same_tag_siblings_join_into_one_block() -> None:
    chunks = [
        {"parent_id": "C1", "depth": 2, "tag": "td", "text": "one", "n_keywords": 1,
         "n_link_keywords": 1, "fate": "kept"},
        {"parent_id": "C1", "depth": 2, "tag": "td", "text": "two", "n_keywords": 1,
         "n_link_keywords": 1, "fate": "kept"},
        {"parent_id": "C1", "depth": 2, "tag": "td", "text": "plain words", "n_keywords": 2,
         "n_link_keywords": 0, "fate": "kept"},
        {"parent_id": "C1", "depth": 2, "tag": "div", "text": "", "n_keywords": 0,
         "n_link_keywords": 0, "fate": "container"},
    ]  # fmt: skip
    blocks = join_blocks(chunks, NeardupParams())
    assert [block.text for block in blocks] == ["one\ntwo", "plain words"]
    assert blocks[0].hyperlink_percentage == 1.0 and blocks[1].hyperlink_percentage == 0.0
    assert content_texts(chunks, NeardupParams()) == ["plain words"]


def test_items_with_analysis_chunks_are_not_parsed_again() -> None:
    analysis = analyse_page(page_html(SENTENCES[:4]), "http://a.test/p")
    from_chunks = page_sentences(
        {"url": "http://a.test/p", "chunks": analysis.to_dict()["chunks"]}, NeardupParams()
    )
    from_html = page_sentences(item("http://a.test/p", SENTENCES[:4]), NeardupParams())
    assert len(from_chunks.sentence_hashes) == 4
    assert np.array_equal(from_chunks.sentence_hashes, from_html.sentence_hashes)


# --- classes and relations ---------------------------------------------------------------------


def test_pair_classes_and_rates() -> None:
    assert pair_class(5, 5, 5) == "identical"
    assert pair_class(3, 3, 7) == "inclusion"
    assert pair_class(3, 7, 3) == "inclusion"
    assert pair_class(2, 4, 5) == "partial"


def test_inclusion_tolerates_a_heading_or_a_date_line() -> None:
    assert pair_class(6, 7, 10, tolerance=1) == "inclusion"  # one own line, 6 shared
    assert pair_class(6, 7, 10, tolerance=0) == "partial"
    assert pair_class(2, 3, 10, tolerance=1) == "partial"  # one own line but only 2 shared
    assert pair_class(6, 8, 10, tolerance=1) == "partial"  # two own lines
    assert pair_class(6, 8, 10, tolerance=2) == "inclusion"
    s = SENTENCES
    heading = "Our correspondent filed this summary from the northern harbour office"
    dated = "Updated on Tuesday the fourth of March at half past ten in the morning"
    items = [
        item("http://a.com/story.html", s[0:12]),
        item("http://b.org/summary.html", [heading, *s[0:5]]),
        item("http://c.net/dated.html", [dated, *s[0:4]]),
        item("http://d.info/own.html", [heading, dated, *s[0:5]]),
    ]
    found = run_pages(items)
    by_copy = {next(iter(key - {"http://a.com/story.html"})): pair for key, pair in found.items()
               if "http://a.com/story.html" in key}  # fmt: skip
    assert by_copy["http://b.org/summary.html"]["class"] == "inclusion"
    assert by_copy["http://c.net/dated.html"]["class"] == "inclusion"
    assert by_copy["http://d.info/own.html"]["class"] == "partial"
    strict = run_pages(items, inclusion_tolerance=0)
    assert [strict[frozenset(("http://a.com/story.html", url))]["class"] for url in by_copy] == [
        "partial"
    ] * 3


def demo_items(analysed: bool) -> list[dict[str, Any]]:
    archive = Archive.bundled()
    items = []
    for record in archive.records:
        url = f"http://127.0.0.1:8000/record/{record.number}"
        html = record_page(archive, record)
        if analysed:
            chunks = [vars(chunk) for chunk in analyse_page(html, url).chunks]
            items.append({"url": url, "chunks": chunks, "links": []})
        else:
            items.append({"url": url, "html": html})
    return items


def test_one_sites_template_is_no_near_duplicate() -> None:
    items = demo_items(analysed=False)
    rng = random.Random(15)
    for size in (40, 5, 6, 12, 30, *(rng.randint(5, 40) for _ in range(3))):
        report = find_near_duplicates(rng.sample(items, size))
        assert report.pairs == [], size
        assert report.stats["sentences"]["site_template_ignored"] >= 4 or size > 30
    # the same template sentences count when the rule is off (the demo site's ads and footer)
    loose = find_near_duplicates(items[:12], NeardupParams(site_template_min_pages=20))
    assert len(loose.pairs) == 66 and {pair.pair_class for pair in loose.pairs} == {"partial"}
    # the MinHash method's site sketch applies the same rule
    minhash = {"method": "minhash", "lsh_threshold": 0.1}
    assert find_near_duplicates(items[:12], NeardupParams(**minhash)).pairs == []
    loose_minhash = NeardupParams(**minhash, site_template_min_pages=20)
    assert len(find_near_duplicates(items[:12], loose_minhash).pairs) > 30
    # a real copy inside the site is still found: record 1 again under a print URL
    copy = {**items[0], "url": "http://127.0.0.1:8000/record/1?print=1"}
    report = find_near_duplicates([*items[:9], copy])
    assert [(pair.pair_class, pair.relation) for pair in report.pairs] == [
        ("identical", "in-site inclusion")
    ]


def test_main_chunks_keep_small_samples_of_a_site_apart() -> None:
    analysed = demo_items(analysed=True)[:8]
    for size in (2, 3, 4, 8):
        assert find_near_duplicates(analysed[:size]).pairs == [], size
    # the content blocks of every chunk hold the template: 2 pages share it (below the site rule)
    both = find_near_duplicates(analysed[:2], NeardupParams(region="content"))
    assert len(both.pairs) == 1 and both.pairs[0].relation == "in-site related"


def test_path_similarity() -> None:
    assert path_similarity("http://a.com/docs/x/page.html", "http://m.org/mirror/x/page.html") == (
        2 / 3
    )
    assert path_similarity("http://a.com/", "http://b.com/index.html") == 1.0
    assert path_similarity("http://a.com/a", "http://b.com/b") == 0.0


def run_pages(items: list[dict[str, Any]], **overrides: Any) -> dict[frozenset[str], Any]:
    report = find_near_duplicates(items, NeardupParams(**overrides))
    return pairs_by_urls(report.pairs)


def test_every_class_and_relation_on_hand_made_pages() -> None:
    s = SENTENCES
    items = [
        item("http://a.com/doc/p1.html", s[0:5]),
        item("http://mirror.org/pub/doc/p1.html", s[0:5]),  # mirror of p1
        item("http://a.com/digest.html", s[0:5] + s[5:8]),  # includes p1 (same site)
        item("http://a.com/other.html", s[6:8] + s[10:14]),  # shares 2 with digest (same site)
        item("http://blog.net/q.html", s[10:12] + s[20:24], ("http://a.com/other.html",)),
        item("http://copy.biz/c.html", s[30:34] + s[34:36]),
        item("http://teaser.info/t.html", s[30:33], ("http://copy.biz/c.html",)),
        item("http://spam.biz/x.html", s[40:44]),
        item("http://spam2.info/y.html", s[40:44] + s[44:46]),
        item("http://one.org/u.html", s[50:53] + s[60:63]),
        item("http://two.org/v.html", s[50:53] + s[70:73]),
    ]
    found = run_pages(items)
    expected = {
        ("http://a.com/doc/p1.html", "http://mirror.org/pub/doc/p1.html"): ("identical", "mirror"),
        ("http://a.com/doc/p1.html", "http://a.com/digest.html"): (
            "inclusion", "in-site inclusion",
        ),
        ("http://a.com/digest.html", "http://a.com/other.html"): ("partial", "in-site related"),
        ("http://blog.net/q.html", "http://a.com/other.html"): ("partial", "citing/cited"),
        ("http://copy.biz/c.html", "http://teaser.info/t.html"): ("inclusion", "linked"),
        ("http://spam.biz/x.html", "http://spam2.info/y.html"): ("inclusion", "cross-site copy"),
        ("http://one.org/u.html", "http://two.org/v.html"): ("partial", "sentence-set sharing"),
        ("http://mirror.org/pub/doc/p1.html", "http://a.com/digest.html"): (
            "inclusion", "cross-site copy",
        ),
    }  # fmt: skip
    assert set(found) == {frozenset(pair) for pair in expected}
    for (first, second), (pair_kind, relation) in expected.items():
        pair = found[frozenset((first, second))]
        assert (pair["class"], pair["relation"]) == (pair_kind, relation), (first, second)
    citing = found[frozenset(("http://blog.net/q.html", "http://a.com/other.html"))]
    assert (citing["a"], citing["b"]) == ("http://blog.net/q.html", "http://a.com/other.html")
    partial = found[frozenset(("http://one.org/u.html", "http://two.org/v.html"))]
    assert partial["shared_sentences"] == 3
    assert partial["overlap"] == pytest.approx(3 / 9)
    assert partial["inclusion"] == pytest.approx(3 / 6)
    inclusion = found[frozenset(("http://a.com/doc/p1.html", "http://a.com/digest.html"))]
    assert inclusion["inclusion"] == 1.0 and inclusion["overlap"] == pytest.approx(5 / 8)


def test_citing_direction_follows_the_link() -> None:
    pair = PagePair("http://x.org/a", "http://y.org/b", False, True, 2, 5, 6)
    assert relation_kind(pair, 0.5) == ("citing/cited", True)  # b cites a: swap
    copy = PagePair("http://x.org/a", "http://y.org/b", False, True, 5, 5, 5)
    assert relation_kind(copy, 0.5) == ("linked", False)


def test_frequent_sentences_are_boilerplate_and_short_ones_are_ignored() -> None:
    boilerplate = "This notice is printed on every single page of the collection here."
    short = "Short line."
    items = [
        item(f"http://site{i}.org/p.html", [boilerplate, short, SENTENCES[i], SENTENCES[i + 1]])
        for i in range(0, 8, 2)
    ]
    items.append(item("http://copy.org/p.html", [boilerplate, short, SENTENCES[0], SENTENCES[1]]))
    report = find_near_duplicates(items, NeardupParams(max_sentence_frequency=3))
    assert len(report.pairs) == 1
    pair = report.pairs[0].to_dict()
    assert pair["class"] == "identical" and pair["shared_sentences"] == 2
    assert report.stats["sentences"]["frequent_ignored"] == 1
    # with F above the boilerplate's frequency, every page pair shares it (but only one sentence)
    loose = find_near_duplicates(items, NeardupParams(max_sentence_frequency=10))
    assert len(loose.pairs) == 1 and loose.pairs[0].shared_sentences == 3
    one = find_near_duplicates(
        items, NeardupParams(max_sentence_frequency=10, min_shared_sentences=1)
    )
    assert len(one.pairs) == 10


def test_bad_items_are_counted_not_raised() -> None:
    items: list[dict[str, Any]] = [
        {"html": page_html(SENTENCES[:3])},
        {"url": "http://a.org/empty", "html": ""},
        {"url": "http://a.org/none"},
        {"url": "http://a.org/number", "html": 42},
        item("http://a.org/ok", SENTENCES[:3]),
        item("http://a.org/ok", SENTENCES[:3]),
    ]
    report = find_near_duplicates(items)
    pages = report.stats["pages"]
    assert pages["seen"] == 6 and pages["indexed"] == 1
    assert pages["dropped"]["no_url"] == 1
    assert pages["dropped"]["no_html"] == 3
    assert pages["dropped"]["duplicate_url"] == 1
    assert sum(pages["dropped"].values()) == 5
    assert report.pairs == []
    with pytest.raises(PageError) as error:
        page_sentences({"url": "http://a.org/bin", "html": bytes(range(256)) * 20}, NeardupParams())
    assert error.value.reason == "binary"


def test_params_are_validated() -> None:
    with pytest.raises(ConfigError, match="WEBSIM_NEARDUP_MAX_SENTENCE_FREQUENCY"):
        NeardupParams(max_sentence_frequency=1)
    with pytest.raises(ConfigError, match="WEBSIM_NEARDUP_SKETCH_WIDTH"):
        NeardupParams(sketch_width=3000)
    with pytest.raises(ConfigError, match="WEBSIM_NEARDUP_METHOD"):
        NeardupParams(method="fuzzy")


# --- the index at small scale against brute force ----------------------------------------------


def random_collection(n_pages: int, seed: int) -> list[PageSentences]:
    rng = random.Random(seed)
    pages = []
    pool = list(range(1, 400))
    for number in range(n_pages):
        hashes = set(rng.sample(pool, rng.randint(0, 12)))
        pages.append(
            PageSentences(
                f"http://s{number % 5}.test/{number}",
                np.zeros(0, dtype=np.uint64),
                np.sort(np.fromiter(hashes, dtype=np.uint64, count=len(hashes))),
            )
        )
    return pages


def brute_force(
    pages: list[PageSentences], max_frequency: int, min_shared: int, rule: SiteTemplateRule
) -> dict:
    frequency: Counter[int] = Counter()
    on_site: Counter[tuple[int, str]] = Counter()
    site_pages = Counter(registered_domain_of(page.url) for page in pages)
    for page in pages:
        for value in page.sentence_hashes.tolist():
            frequency[value] += 1
            on_site[(value, registered_domain_of(page.url))] += 1
    sets = [
        {
            v
            for v in p.sentence_hashes.tolist()
            if frequency[v] <= max_frequency
            and not rule.is_template(
                on_site[(v, registered_domain_of(p.url))], site_pages[registered_domain_of(p.url)]
            )
        }
        for p in pages
    ]
    expected = {}
    for i, j in itertools.combinations(range(len(pages)), 2):
        shared = len(sets[i] & sets[j])
        if shared >= min_shared:
            expected[(i, j)] = (shared, len(sets[i]), len(sets[j]))
    return expected


@pytest.mark.parametrize(("partitions", "buffer_entries"), [(1, 10**6), (7, 13)])
def test_spilled_index_matches_brute_force(
    tmp_path: Path, partitions: int, buffer_entries: int
) -> None:
    pages = random_collection(120, seed=partitions)
    rule = SiteTemplateRule(share=0.1, min_pages=2)  # on 3 of a site's 24 pages: its template
    index = ExactSentenceIndex(
        tmp_path, max_frequency=6, min_shared=2, partitions=partitions,
        buffer_entries=buffer_entries, site_template=rule,
    )  # fmt: skip
    for page in pages:
        index.add(page, int(registered_domain_of(page.url)[1]))
    found = {}
    for firsts, seconds, shared in index.pairs():
        for i, j, n in zip(firsts.tolist(), seconds.tolist(), shared.tolist(), strict=True):
            found[(i, j)] = n
    counts = index.page_counts_
    assert counts is not None
    expected = brute_force(pages, 6, 2, rule)
    assert len(expected) > 20
    assert index.stats.site_template_sentences > 5
    assert found == {pair: value[0] for pair, value in expected.items()}
    for (i, j), (_, count_i, count_j) in expected.items():
        assert (counts[i], counts[j]) == (count_i, count_j)
    if buffer_entries == 13:
        assert index.stats.spills > 10
    assert not list(tmp_path.glob("sentences-*.bin"))  # partitions are removed once read


def test_count_min_sketch_never_undercounts() -> None:
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**63, size=5000, dtype=np.uint64)
    sketch = CountMinSketch(1 << 14)
    for repeat in range(3):
        sketch.add(keys[: 1000 * (repeat + 1)])
    estimates = sketch.estimate(keys)
    truth = np.array([3] * 1000 + [2] * 1000 + [1] * 1000 + [0] * 2000)
    assert np.all(estimates >= truth)
    assert np.mean(estimates == truth) > 0.95


def test_minhash_method_finds_the_close_pairs_of_the_exact_one() -> None:
    s = SENTENCES
    items = [
        item("http://a.com/1", s[0:6]),
        item("http://b.org/1", s[0:6]),
        item("http://c.net/x", s[10:16]),
        item("http://c.net/y", s[10:16] + s[16:17]),
        item("http://d.org/z", s[20:22] + s[30:40]),  # small overlap: LSH may miss it
        item("http://e.org/z", s[20:22] + s[40:50]),
    ]
    exact = run_pages(items)
    approximate = run_pages(items, method="minhash")
    assert len(exact) == 3
    close = {key: value for key, value in exact.items() if value["overlap"] >= 0.8}
    assert len(close) == 2
    for key, value in close.items():
        assert approximate[key] == value
    assert set(approximate) <= set(exact)


def test_finder_cleans_its_temporary_folder(tmp_path: Path) -> None:
    with NearDuplicateFinder(NeardupParams(spill_dir=str(tmp_path))) as finder:
        finder.add(item("http://a.com/1", SENTENCES[:3]))
        assert len(list(tmp_path.iterdir())) == 1
        report = finder.finish()
    assert report.stats["pages"]["indexed"] == 1
    assert list(tmp_path.iterdir()) == []


# --- CLI ---------------------------------------------------------------------------------------


def test_cli_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    feed = tmp_path / "pages.jsonl"
    rows = [
        item("http://a.com/p", SENTENCES[0:4]),
        item("http://b.org/p", SENTENCES[0:4]),
        item("http://a.com/q", SENTENCES[0:4] + SENTENCES[8:10]),
    ]
    feed.write_text("".join(json.dumps(row) + "\n" for row in rows) + "{broken\n")
    output = tmp_path / "neardup.json"
    assert main(["neardup", str(feed), "-o", str(output), "--no-progress"]) == 1  # {broken
    report = json.loads(output.read_text(encoding="utf-8"))
    assert set(report) == {"pairs", "identical_groups", "stats"}
    assert {tuple(sorted(pair)) for pair in report["pairs"]} == {
        ("a", "b", "class", "inclusion", "overlap", "relation", "shared_sentences")
    }
    kinds = sorted((pair["class"], pair["relation"]) for pair in report["pairs"])
    assert kinds == [
        ("identical", "mirror"),
        ("inclusion", "cross-site copy"),
        ("inclusion", "in-site inclusion"),
    ]
    assert report["stats"]["input_lines_skipped"] == {"invalid_json": 1}
    assert "3 pages, 3 pairs" in capsys.readouterr().out
    assert main(["neardup", str(tmp_path / "missing.jsonl"), "-o", str(output)]) == 2
