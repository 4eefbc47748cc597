"""The listing order a site's answers follow, and what an unasked word would show under it."""

from __future__ import annotations

import numpy as np
import pytest

from websim_crawler.core.surfacing.order import ListingOrder


def listing(ids: list[int], *, pages: list[list[int]] | None = None) -> ListingOrder:
    """A listing of records ``/record/ID`` (index = place in ``ids``) and the pages it saw."""
    order = ListingOrder()
    for number in ids:
        order.add_record(f"http://127.0.0.1/record/{number}")
    for query, page in enumerate(pages or []):
        order.observe(f"q{query}", page)
    return order


def test_answers_listed_by_ascending_or_descending_ids_are_believed_after_enough_pairs() -> None:
    ids = list(range(1, 31))
    few = listing(ids, pages=[list(range(10))])  # 9 neighbouring pairs
    assert few.direction is None
    ascending = listing(ids, pages=[list(range(0, 15)), list(range(10, 30, 2))])
    assert ascending.direction == 1
    descending = listing(ids, pages=[list(range(29, 5, -1))])
    assert descending.direction == -1


def test_pages_of_one_answer_continue_its_order_and_one_disorder_ends_the_model() -> None:
    order = listing(list(range(1, 41)))
    order.observe("word", list(range(0, 12)))
    order.observe("word", list(range(12, 24)))  # page 2 goes on where page 1 ended
    assert order.direction == 1
    order.observe("other", [30, 31, 5])  # one answer listed otherwise: relevance, not ids
    assert order.direction is None
    order.observe("third", list(range(0, 40)))
    assert order.direction is None  # for good


def test_keys_without_a_number_have_no_listing_order() -> None:
    order = ListingOrder()
    for name in ("alpha", "beta", "gamma"):
        order.add_record(f"http://127.0.0.1/wiki/{name}")
    order.observe("q", [0, 1, 2])
    assert order.direction is None
    assert order.expected_new(np.array([0]), 20, 10.0, np.ones(1)).tolist() == [0.0]


def catalogue(step: int = 1, *, descending: bool = False) -> tuple[ListingOrder, list[int]]:
    """Records 1-40 all reached and shown by three answers each, then 41-119 every other one
    reached and shown once (ids times ``step``); term 0 is in the first 40 records, term 1 in
    8 of the rest, term 2 in one. Returns the listing and the records' capture counts."""
    numbers = [*range(1, 41), *range(41, 121, 2)]
    ids = [(1000 - number if descending else number) * step for number in numbers]
    order = listing(ids, pages=[list(range(80))])
    for index in range(80):
        order.add_terms(index, [0] if index < 40 else [1] if index < 48 else [])
    order.add_terms(79, [2])
    return order, [3] * 40 + [1] * 40


def expected(order: ListingOrder, captures: list[int], likeness: float = 1.0) -> list[float]:
    candidates = np.array([0, 1, 2], dtype=np.int64)
    values = order.expected_new(candidates, 20, captures, np.full(3, likeness))
    return [float(value) for value in values]


def test_a_word_whose_known_matches_fill_its_answer_before_any_unseen_record_expects_none() -> None:
    order, captures = catalogue()
    common, rare, rarest = expected(order, captures)
    assert common == 0.0  # its first 20 matches are ids 1-20, all reached
    # The first band is complete (one record per id), so the 39 ids missing among 41-119 are
    # unseen records; a word in a tenth of the records reached expects a tenth of them.
    assert rare == pytest.approx(0.1 * 39)
    assert rarest == pytest.approx(39 / 80)
    assert expected(order, captures, likeness=2.0)[1] == pytest.approx(0.2 * 39)
    assert max(expected(order, captures, likeness=1000.0)) <= 20.0  # at most one answer


def test_sparse_ids_and_newest_first_listings_expect_the_same() -> None:
    order, captures = catalogue()
    dense = expected(order, captures)
    sparse_order, _ = catalogue(step=3)  # one id in three holds a record: deletions
    assert expected(sparse_order, captures) == pytest.approx(dense, rel=0.05)
    newest_first, _ = catalogue(descending=True)
    assert newest_first.direction == -1
    assert expected(newest_first, captures) == pytest.approx(dense)


def test_answers_say_how_much_more_a_word_matches_than_result_texts_show() -> None:
    order, captures = catalogue()
    before = expected(order, captures)
    order.calibrate(0.25, list(range(20)), capped=False)  # 20 of the 80: as the texts showed
    assert expected(order, captures) == pytest.approx(before)
    fresh, _ = catalogue()
    # A word in a tenth of the result texts whose capped answer showed every record up to its
    # last one (ids 1-20): it matched ten times what the texts showed.
    fresh.calibrate(0.1, list(range(20)), capped=True)
    _, rare, rarest = expected(fresh, captures)
    assert rarest == pytest.approx(10 * before[2])  # its answer still reaches every unseen id
    assert rare == 0.0  # in every record now: 20 matches end at id 20, before any unseen one
