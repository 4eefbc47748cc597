"""The brand question on real phishing-kit pages (``../shared/datasets/phishing-kits``).

HiddenEye's pages are held out of the tuning (ShellPhish's were tuned on): each case here is a
HiddenEye page made independently of zphisher's page of its brand, which ``looks-alike`` ranks
behind another brand's page and ``brand`` ranks first, naming the brand words that decided.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import pytest
from support.datasets import datasets_dir
from support.kit_pages import kit_page, own_page

from websim_crawler.core.reference_index import MatchParams, ReferenceIndex, rarity_counts
from websim_crawler.core.similarity.comparison import page_features


def kits_folder() -> Path:
    folder = datasets_dir()
    kits = folder / "phishing-kits" if folder else None
    if kits is None or not (kits / "labels.csv").is_file():
        pytest.skip("../shared/datasets/phishing-kits not found (set WEBSIM_DATASETS)")
    return kits


@cache
def kit_index() -> tuple[ReferenceIndex, dict[str, str]]:
    """Index zphisher's references and distractors; return it and each reference's brand."""
    kits = kits_folder()
    index = ReferenceIndex()
    brands: dict[str, str] = {}
    with (kits / "labels.csv").open(encoding="utf-8") as labels:
        for row in csv.DictReader(labels):
            if row["role"] in ("reference", "distractor"):
                path = kits / row["page_path"]
                url = path.resolve().as_uri()
                assert index.add(page_features(path.read_bytes(), url=url)) is None
                brands[url] = row["brand"]
    return index, brands


@pytest.mark.parametrize("brand", ["dropbox", "ebay", "linkedin", "wordpress"])
def test_a_held_out_kit_page_is_matched_to_its_brand_by_its_brand_words(brand: str) -> None:
    index, brands = kit_index()
    path = kits_folder() / "hiddeneye" / brand / "index.html"
    query = page_features(path.read_bytes(), url=path.resolve().as_uri())
    [looks_alike] = index.query(query, "looks-alike")
    assert brands[looks_alike.url] != brand  # the template outweighs the brand
    [best] = index.query(query, "brand")
    assert brands[best.url] == brand
    assert best.brand is not None and "brand" in best.decided_by
    assert best.brand.explain().startswith("brand words: ")
    assert f" {brand} (" in best.brand.explain()  # among the three words that weighed most
    assert best.to_dict()["brand"]["features"] == best.brand.explain()


def brand_page(name: str, words: str) -> str:
    body = f"<body><h1>{name}</h1><form>x</form></body>"
    return f"<html><head><title>{words}</title></head>{body}</html>"


def test_brand_candidates_are_bounded_and_the_cap_is_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = ReferenceIndex()
    for number, words in enumerate(["acme shared", "acme shared", "zenith other", "vortex other"]):
        url = f"http://protected.example/{number}"
        assert index.add(page_features(brand_page(f"page {number}", words), url=url)) is None
    query = page_features(brand_page("query", "acme zenith"), url="http://suspicious.example/")
    [best] = index.query(query, "brand")
    assert best.brand is not None and best.url.startswith("http://protected.example/")
    assert index.capped_brand_queries == 0
    monkeypatch.setattr(rarity_counts, "MAX_BRAND_SCORED", 1)
    index.query(query, "brand")
    # zenith (one reference) is scored, acme (two) passes the bound: counted once
    assert index.capped_brand_queries == 1


def test_a_brand_made_with_another_kits_skeleton_is_matched_to_its_brand() -> None:
    # Four references made with toolkit A's skeleton and the brand's own page; the query is the
    # brand's form pasted into toolkit A's skeleton.
    index = ReferenceIndex()
    for brand in ("alpha", "gamma", "delta", "omega"):
        page = page_features(kit_page("kita", brand), url=f"http://{brand}.example/")
        assert index.add(page) is None
    assert index.add(page_features(own_page("bravo"), url="http://bravo.example/")) is None
    query = page_features(kit_page("kita", "bravo"), url="http://suspicious.example/")
    [looks_alike] = index.query(query, "looks-alike")
    assert looks_alike.url != "http://bravo.example/"  # the skeleton outweighs the brand
    matches = index.query(query, "brand", top=5)
    assert matches[0].url == "http://bravo.example/"
    # the layout stage itself ranks the brand first: the kit's skeleton weighs little
    layouts = {match.url: match.stages["layout"] or 0.0 for match in matches}
    assert layouts["http://bravo.example/"] > max(
        score for url, score in layouts.items() if url != "http://bravo.example/"
    )
    # the answer names what decided: the brand words and the template features both share
    reason = matches[0].to_dict()["reason"]
    assert reason == matches[0].reason and reason.startswith("question brand: ")
    assert "brand words: bravo (class/id)" in reason and "shared most: .bravo-" in reason


def test_the_best_brand_scores_are_compared_whatever_the_skeletons_rank() -> None:
    # Twelve references share toolkit A's skeleton, which the layout sketches rank first; the
    # brand's own page is compared all the same, as one of the best brand scores.
    index = ReferenceIndex(match=MatchParams(candidates=2, margin=0.0))
    for number in range(12):
        page = page_features(kit_page("kita", f"brand{chr(97 + number)}"), url=f"http://{number}/")
        assert index.add(page) is None
    assert index.add(page_features(own_page("bravo"), url="http://bravo.example/")) is None
    query = page_features(kit_page("kita", "bravo"), url="http://suspicious.example/")
    bravo = index.urls.index("http://bravo.example/")
    assert bravo not in index.candidates(query, index.asked("looks-alike"))
    assert bravo in index.candidates(query, index.asked("brand"))
    assert index.query(query, "brand")[0].url == "http://bravo.example/"
