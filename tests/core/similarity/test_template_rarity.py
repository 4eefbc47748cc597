"""Rarity across references: a toolkit's skeleton, common to its pages, weighs nothing."""

from __future__ import annotations

import numpy as np
import pytest
from support.kit_pages import kit_page, own_page

from websim_crawler.core.similarity.documents import as_parsed_document
from websim_crawler.core.similarity.layout import template_comparison
from websim_crawler.core.similarity.rarity import (
    TemplateRarity,
    rare_link_similarity,
    rare_template_similarity,
    rarity_weight,
    template_features,
)
from websim_crawler.errors import InputFormatError

KIT_BRANDS = ("alpha", "gamma", "delta", "omega")


def test_the_rarity_weight_is_one_for_a_feature_of_one_reference_and_zero_for_all() -> None:
    assert rarity_weight(8, 8) == 0.0
    assert rarity_weight(8, 1) == 1.0 and rarity_weight(8, 0) == 1.0
    assert rarity_weight(8, 2) == pytest.approx(2 / 3)  # log(8/2) / log(8)
    assert rarity_weight(1, 1) == 1.0  # one reference: nothing to weigh against


def test_template_features_are_shapes_tag_pairs_and_class_names() -> None:
    document = as_parsed_document('<html><body><p class="a b" id="x"><em>t</em></p></body></html>')
    features = template_features(document)
    assert features["p[class,id]"] == 1 and features["em[]"] == 1
    assert features["p>em"] == 1 and features["body>p"] == 1
    assert features[".a"] == 1 and features[".b"] == 1
    assert template_features(None) == {}


def kit_rarity() -> TemplateRarity:
    rarity = TemplateRarity()
    for brand in KIT_BRANDS:
        rarity.add(as_parsed_document(kit_page("kita", brand)), [f"http://{brand}.example/"])
    rarity.add(as_parsed_document(own_page("bravo")), ["http://bravo.example/"])
    return rarity


def test_a_feature_every_reference_has_weighs_nothing_and_one_of_a_single_reference_all() -> None:
    rarity = kit_rarity()
    weights = rarity.weights([".kita-row", "form[class]", ".bravo-login", ".never-seen"])
    assert weights[".kita-row"] == pytest.approx(rarity_weight(5, 4))  # four kit pages of five
    assert weights["form[class]"] == 0.0  # every reference has it
    assert weights[".bravo-login"] == 1.0 and weights[".never-seen"] == 1.0
    # references counted after a look-up are merged into the sorted counts on the next one
    rarity.add(as_parsed_document(kit_page("kita", "sigma")), [])
    assert rarity.weights([".kita-row"])[".kita-row"] == pytest.approx(rarity_weight(6, 5))
    hashes, counts = rarity.arrays()
    assert bool((hashes[1:] > hashes[:-1]).all()) and int(counts.max()) == 6


def test_the_kit_skeleton_stops_outweighing_the_brand() -> None:
    rarity = kit_rarity()
    query = as_parsed_document(kit_page("kita", "bravo"))  # bravo's form in kit A's skeleton
    same_kit = as_parsed_document(kit_page("kita", "alpha"))
    same_brand = as_parsed_document(own_page("bravo"))
    # the plain layout measures the skeleton: the kit's other brand looks most alike
    plain = template_comparison(query, same_kit).score, template_comparison(query, same_brand).score
    assert plain[0] > 0.8 > plain[1]
    # weighed by rarity, the skeleton every kit page has tells little, the brand's form much
    kit_score, _, _ = rare_template_similarity(query, same_kit, rarity)
    brand_score, _, detail = rare_template_similarity(query, same_brand, rarity)
    assert kit_score < 0.3 < 0.4 < brand_score
    assert ".bravo-" in detail  # the shared features that weighed most are named
    # two pages alone weigh every feature alike: the skeleton then leads
    assert (
        rare_template_similarity(query, same_kit)[0]
        > rare_template_similarity(query, same_brand)[0]
    )


def test_links_every_reference_has_count_nothing() -> None:
    rarity = TemplateRarity()
    for brand in KIT_BRANDS:
        rarity.add(None, ["http://kit.example/help", f"http://{brand}.example/"])
    shared_kit = rare_link_similarity(
        frozenset({"http://kit.example/help", "http://alpha.example/"}),
        frozenset({"http://kit.example/help", "http://gamma.example/"}),
        rarity,
    )
    assert shared_kit.score == 0.0 and shared_kit.support == 3
    shared_brand = rare_link_similarity(
        frozenset({"http://kit.example/help", "http://alpha.example/"}),
        frozenset({"http://alpha.example/"}),
        rarity,
    )
    assert shared_brand.score == 1.0
    assert rare_link_similarity(frozenset(), frozenset(), rarity).support == 0


def test_counts_that_do_not_fit_their_references_are_refused() -> None:
    hashes, counts = kit_rarity().arrays()
    TemplateRarity(5, hashes, counts).check("ok")
    with pytest.raises(InputFormatError, match="template feature counts"):
        TemplateRarity(3, hashes, counts).check("more references counted than there are")
    with pytest.raises(InputFormatError):
        TemplateRarity(5, hashes[::-1].copy(), counts).check("unsorted")
    with pytest.raises(InputFormatError):
        TemplateRarity(5, hashes, counts.astype(np.int64)).check("wrong type")
