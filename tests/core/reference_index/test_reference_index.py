"""The reference index: the right reference first for phishing-kit imitations of real pages, the
candidate step agreeing with the exhaustive comparison, files that round-trip or are refused."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import numpy as np
import orjson
import pytest
from support.datasets import article_pages
from support.imitations import imitate

from websim_crawler.core.reference_index import MatchParams, ReferenceIndex
from websim_crawler.core.reference_index import links as links_module
from websim_crawler.core.reference_index.links import LinkPostings
from websim_crawler.core.similarity.comparison import PageFeatures, compare_pages, page_features
from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.errors import ConfigError, InputFormatError

SITE = Path(__file__).resolve().parents[2] / "support" / "site"
REAL_PAGES = 40  # references: pages of 40 different sites
OTHER_SITES = 20  # pages of further sites, imitating none of them


@pytest.fixture(scope="module")
def real_pages() -> list[tuple[str, bytes]]:
    pages = article_pages(REAL_PAGES + OTHER_SITES)
    if len(pages) < REAL_PAGES + OTHER_SITES:
        pytest.skip("article-extraction-benchmark not found (set WEBSIM_DATASETS)")
    return pages


@pytest.fixture(scope="module")
def real_index(real_pages: list[tuple[str, bytes]]) -> ReferenceIndex:
    index = ReferenceIndex()
    for url, html in real_pages[:REAL_PAGES]:
        assert index.add(page_features(html, url=url)) is None
    return index


def imitation_features(url: str, html: bytes, seed: int) -> PageFeatures:
    copy = imitate(html, url, seed)
    return page_features(copy.html, url=copy.url)


def test_imitations_find_their_reference_first(
    real_pages: list[tuple[str, bytes]], real_index: ReferenceIndex
) -> None:
    firsts = [
        real_index.query(imitation_features(url, html, seed))[0].url == url
        for seed, (url, html) in enumerate(real_pages[:REAL_PAGES])
    ]
    assert sum(firsts) / len(firsts) >= 0.95


def test_pages_of_other_sites_are_rarely_similar_to_any_reference(
    real_pages: list[tuple[str, bytes]], real_index: ReferenceIndex
) -> None:
    similar = [
        real_index.query(page_features(html, url=url))[0].verdict == "similar"
        for url, html in real_pages[REAL_PAGES:]
    ]
    assert sum(similar) / len(similar) <= 0.1


@pytest.mark.slow
def test_the_candidate_step_keeps_the_exhaustive_best(
    real_pages: list[tuple[str, bytes]], real_index: ReferenceIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shortlist of 4 of 40 references: the candidate step, not the whole index, is tested.
    monkeypatch.setattr(real_index, "match", MatchParams(candidates=4))
    narrow = real_index
    kept = 0
    for seed, (url, html) in enumerate(real_pages[:REAL_PAGES]):
        page = imitation_features(url, html, seed + 1000)
        best = narrow.exhaustive(page, top=1)[0]
        candidates = narrow.candidates(page, narrow.asked(None))
        assert len(candidates) <= 4
        kept += narrow.urls.index(best.url) in candidates
    assert kept / REAL_PAGES >= 0.95


def site_pages() -> list[tuple[str, bytes]]:
    names = ("about.html", "help.html", "index.html", "noform.html", "post.html", "results.html")
    return [(f"http://site.example/{name}", (SITE / name).read_bytes()) for name in names]


def built_index(params: SimilarityParams | None = None) -> ReferenceIndex:
    index = ReferenceIndex(params)
    for url, html in site_pages():
        assert index.add(page_features(html, url=url, params=params)) is None
    return index


@pytest.mark.parametrize("question", [None, "brand"])
def test_a_saved_index_answers_as_the_built_one(tmp_path: Path, question: str | None) -> None:
    # brand: the references' brand identities and template feature counts are saved too
    index = built_index()
    queries = [page_features(html, url=url + "?copy") for url, html in site_pages()]
    before = [[m.to_dict() for m in index.query(page, question, 3)] for page in queries]
    index.save(tmp_path / "refs.idx")
    loaded = ReferenceIndex.load(tmp_path / "refs.idx")
    assert loaded.urls == index.urls
    assert [[m.to_dict() for m in loaded.query(page, question, 3)] for page in queries] == before
    for (url, _html), answer in zip(site_pages(), before, strict=True):
        assert answer[0]["url"] == url
        assert answer[0]["verdict"] == "similar"


def test_add_keeps_the_old_references_and_skips_what_is_known(tmp_path: Path) -> None:
    index = built_index()
    index.save(tmp_path / "refs.idx")
    loaded = ReferenceIndex.load(tmp_path / "refs.idx")
    url, html = site_pages()[0]
    assert loaded.add(page_features(html, url=url)) == "duplicate_url"
    extra = (SITE / "results-2.html").read_bytes()
    assert loaded.add(page_features(extra, url="http://site.example/results-2.html")) is None
    loaded.save(tmp_path / "refs.idx")
    again = ReferenceIndex.load(tmp_path / "refs.idx")
    assert len(again) == len(site_pages()) + 1
    assert again.skipped == {"duplicate_url": 1}
    query = page_features(html, url=url + "?copy")
    assert again.query(query)[0].url == url


def test_a_reference_that_failed_analysis_is_skipped_and_counted() -> None:
    index = ReferenceIndex()
    assert index.add(page_features(b"", url="http://a.example/")) == "problem_html"
    broken = page_features(
        (SITE / "about.html").read_bytes(), url="http://b.example/", screenshot=b"not a png"
    )
    assert index.add(broken) == "problem_screenshot"
    assert index.add(page_features(b"<p>x</p>", url=None)) == "no_url"
    assert len(index) == 0
    assert index.skipped == {"problem_html": 1, "problem_screenshot": 1, "no_url": 1}
    assert index.query(page_features((SITE / "about.html").read_bytes(), url="http://c/")) == []


def rewrite_meta(path: Path, **changes: object) -> None:
    with zipfile.ZipFile(path) as archive:
        members = {info: archive.read(info) for info in archive.infolist()}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info, data in members.items():
            if info.filename == "meta.json":
                data = orjson.dumps({**orjson.loads(data), **changes})
            archive.writestr(info, data)
    path.write_bytes(buffer.getvalue())


def test_an_index_of_another_format_is_refused_in_one_line(tmp_path: Path) -> None:
    built_index().save(tmp_path / "refs.idx")
    rewrite_meta(tmp_path / "refs.idx", format=99, websim_version="9.0.0")
    with pytest.raises(InputFormatError) as refused:
        ReferenceIndex.load(tmp_path / "refs.idx")
    message = str(refused.value)
    assert "\n" not in message
    assert "format 99" in message and "9.0.0" in message and "rebuild" in message


def test_a_format_4_index_without_template_counts_is_refused_in_one_line(tmp_path: Path) -> None:
    built_index().save(tmp_path / "refs.idx")
    rewrite_meta(tmp_path / "refs.idx", format=4)
    with pytest.raises(InputFormatError) as refused:
        ReferenceIndex.load(tmp_path / "refs.idx")
    message = str(refused.value)
    assert "\n" not in message
    assert "format 4" in message and "reads format 6" in message and "rebuild" in message


def test_an_index_built_with_other_feature_settings_is_refused(tmp_path: Path) -> None:
    built_index().save(tmp_path / "refs.idx")
    with pytest.raises(ConfigError, match="WEBSIM_SIMILARITY_VISUAL_WIDTH"):
        ReferenceIndex.load(tmp_path / "refs.idx", SimilarityParams(visual_width=20))


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"not a zip at all",
        lambda data: data[: len(data) // 2],
        lambda data: data.replace(b"ann-layout.faiss", b"ann-layout.gone!"),
        lambda data: data.replace(b"brand.json", b"brand.gone"),
        lambda data: data.replace(b'[{"words"', b'[{"wordz"', 1),
        lambda data: data.replace(b"template-counts.npy", b"template-county.npy"),
    ],
    ids=["not-a-zip", "cut", "member-missing", "brand-missing", "brand-damaged", "counts-missing"],
)
def test_a_damaged_index_is_a_clear_error(tmp_path: Path, damage: object) -> None:
    built_index().save(tmp_path / "refs.idx")
    data = (tmp_path / "refs.idx").read_bytes()
    (tmp_path / "refs.idx").write_bytes(damage(data))  # type: ignore[operator]
    with pytest.raises(InputFormatError):
        ReferenceIndex.load(tmp_path / "refs.idx")


def test_a_damaged_record_is_a_clear_error(tmp_path: Path) -> None:
    index = built_index()
    index.save(tmp_path / "refs.idx")
    with zipfile.ZipFile(tmp_path / "refs.idx") as archive:
        info = archive.getinfo("references.bin")
    data = bytearray((tmp_path / "refs.idx").read_bytes())
    start = info.header_offset + 30 + len(info.filename)
    data[start : start + 16] = b"\xff" * 16  # the first record's zlib header
    (tmp_path / "refs.idx").write_bytes(bytes(data))
    loaded = ReferenceIndex.load(tmp_path / "refs.idx")
    with pytest.raises(InputFormatError, match="damaged"):
        loaded.reference(0)


def linking_page(url: str, targets: list[str]) -> PageFeatures:
    links = "".join(f'<li><a href="{target}">page {n}</a></li>' for n, target in enumerate(targets))
    html = f"<html><head><title>t</title></head><body><ul>{links}</ul></body></html>"
    return page_features(html.encode(), url=url)


def test_same_site_candidates_are_ranked_by_their_exact_link_jaccard() -> None:
    # Pages of one site share a few links of many (a Jaccard of about 0.01: 8 of 792), within
    # the noise of a 256-bucket sketch; the shortlist ranks them by the links' exact Jaccard.
    rng = random.Random(7)

    def links(count: int) -> list[str]:
        return [f"http://web.example/{rng.randrange(10**9)}.html" for _ in range(count)]

    index = ReferenceIndex(match=MatchParams(candidates=3, margin=0.0))
    queries = []
    for number in range(10):
        shared = links(8)
        index.add(linking_page(f"http://ref.example/{number}", shared + links(392)))
        queries.append((number, linking_page(f"http://q.example/{number}", shared + links(392))))
    for number in range(10, 40):  # pages sharing no link with any query
        index.add(linking_page(f"http://ref.example/{number}", links(400)))
    for number, page in queries:
        assert index.exhaustive(page, question="same-site", top=1)[0].url == index.urls[number]
        assert index.candidates(page, index.asked("same-site"))[0] == number


def test_link_postings_count_the_links_each_reference_shares() -> None:
    rng = random.Random(3)
    sets = [{rng.randrange(50) for _ in range(rng.randrange(12))} for _ in range(30)]
    rows = [np.sort(np.fromiter(found, np.uint64, len(found))) for found in sets]
    postings = LinkPostings()
    postings.add(rows[:11])
    postings.add(rows[11:])  # merged into the sorted postings
    postings.check(len(rows), "test")
    everyone = np.arange(len(rows))
    for query_set, query in zip(sets, rows, strict=True):
        shared = postings.shared(query)
        assert shared.tolist() == [len(query_set & other) for other in sets]
        expected = [len(query_set & o) / len(query_set | o) if query_set | o else 0.0 for o in sets]
        assert postings.jaccards(query, shared, everyone).tolist() == pytest.approx(expected)


def test_link_postings_read_at_most_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(links_module, "MAX_POSTINGS_READ", 25)
    common = np.arange(1, 21, dtype=np.uint64)  # 20 links every reference has
    postings = LinkPostings()
    postings.add([np.append(common, np.uint64(100 + n)) for n in range(10)])
    shared = postings.shared(np.append(common[:3], np.uint64(103)))
    # The rare link (1 posting) and two of the common ones (10 each) fit in 25: the third common
    # one is left out, not the rare one.
    assert postings.capped_queries == 1
    assert shared.tolist() == [2, 2, 2, 3, 2, 2, 2, 2, 2, 2]


def _without_absolute_links(html: bytes) -> bytes:
    return html.replace(b'href="https://elsewhere.example.org/"', b'href="/elsewhere"')


def _site_features(name: str, html: bytes | None = None) -> PageFeatures:
    # A saved file that states no URL: its relative links are unknown (compared absolute only).
    html = (SITE / name).read_bytes() if html is None else html
    return page_features(html, url=f"file:///saved/{name}")


def test_a_page_without_links_gets_same_site_candidates_by_layout_and_text() -> None:
    # Identical pages without absolute links: compare_pages judges them by the stages that have
    # data (layout, text), so the index must find the reference by those stages too.
    names = ("about.html", "help.html", "index.html", "results.html", "post.html")
    index = ReferenceIndex()
    for name in names:
        assert index.add(_site_features(name)) is None
    twin = _without_absolute_links((SITE / "help.html").read_bytes())
    index.add(_site_features("twin/help.html", twin))
    query = _site_features("query.html", twin)
    assert not query.links
    params = index.asked("same-site")
    expected = compare_pages(query, _site_features("twin/help.html", twin), None, params)
    assert expected.verdict == "similar"
    [best] = index.query(query, question="same-site")
    assert best.url == "file:///saved/twin/help.html"
    assert best.verdict == expected.verdict
    assert best.decided_by == expected.decided_by
    assert best.stages == {result.stage: result.score for result in expected.stages}


@pytest.mark.parametrize("question", ["same-site", "same-template", "looks-alike", "same-content"])
def test_the_index_answers_every_pair_as_compare_pages(question: str) -> None:
    # Every reference asked (candidates, top and margin wide open) scores and judges each pair
    # as compare_pages does on the pages' own features: the stored form loses nothing a
    # question reads (same-template's class names among them).
    names = ("about.html", "help.html", "index.html", "results.html", "results-2.html")
    pages = {name: _site_features(name) for name in names}
    index = ReferenceIndex(match=MatchParams(candidates=100, margin=1.0))
    for page in pages.values():
        assert index.add(page) is None
    params = index.asked(question)
    for query_name in ("results-3.html", "help.html"):
        query = _site_features(query_name)
        matches = index.query(query, question=question, top=len(names))
        assert len(matches) == len(names)
        for match in matches:
            reference = _site_features(match.url.removeprefix("file:///saved/"))
            report = compare_pages(query, reference, None, params)
            assert (match.score, match.verdict, match.decided_by) == (
                report.combined_score,
                report.verdict,
                report.decided_by,
            ), (query_name, match.url)
            assert match.stages == {result.stage: result.score for result in report.stages}
