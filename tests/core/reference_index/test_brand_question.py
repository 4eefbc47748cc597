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

from websim_crawler.core.reference_index import ReferenceIndex
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
