"""Pair classes (identical, inclusion, partial) and relation kinds from URLs and links.

Classes follow Shibata, Kang and Kurohashi (2010): over the selected sentences of two pages, the
pair is *identical* when every sentence is shared, *inclusion* when every sentence of the smaller
page is shared, else *partial*. Inclusion tolerates a few sentences of the smaller page's own
(a heading, a date line): at most ``tolerance`` missing, with at least
``TOLERANCE_SHARED_PER_MISSING`` shared sentences for each missing one. Relation rules, tried in
this order (the README explains each):

1. ``mirror``: identical pages on different hosts whose paths match (path similarity, the share
   of trailing path segments in common, at least ``mirror_path_similarity``).
2. ``in-site inclusion``: same site, identical or inclusion.
3. ``in-site related``: same site, partial.
4. ``citing/cited``: different sites, a page links to the other and also has sentences of its own
   besides the shared ones, so it quotes the other page; ``a`` is the citing page.
5. ``linked``: different sites with a link between them, the linking page adds nothing of its
   own (a copy or teaser linking to its source).
6. ``cross-site copy``: different sites, no link, identical or inclusion (syndication, spam and
   plagiarism are not told apart without more evidence).
7. ``sentence-set sharing``: different sites, no link, partial (both reuse some text).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import urlsplit

from websim_crawler.core.urls import host_port_of, normalize_url, registered_domain_of

IDENTICAL, INCLUSION, PARTIAL = "identical", "inclusion", "partial"
CLASSES = (IDENTICAL, INCLUSION, PARTIAL)
MIRROR = "mirror"
IN_SITE_INCLUSION = "in-site inclusion"
IN_SITE_RELATED = "in-site related"
CITING = "citing/cited"
LINKED = "linked"
CROSS_SITE_COPY = "cross-site copy"
SENTENCE_SET_SHARING = "sentence-set sharing"
RELATIONS = (
    MIRROR,
    IN_SITE_INCLUSION,
    IN_SITE_RELATED,
    CITING,
    LINKED,
    CROSS_SITE_COPY,
    SENTENCE_SET_SHARING,
)
# Inclusion with missing sentences needs this many shared sentences per missing one.
TOLERANCE_SHARED_PER_MISSING = 3
_INDEX_FILES = frozenset(
    {"index.html", "index.htm", "index.php", "index.shtml", "default.asp", "default.aspx"}
)


def pair_class(shared: int, count_a: int, count_b: int, tolerance: int = 0) -> str:
    """Classify a pair by its shared selected sentences and each page's selected sentences.

    ``tolerance``: sentences of the smaller page the larger may lack and still include it.
    """
    if shared >= count_a and shared >= count_b:
        return IDENTICAL
    missing = min(count_a, count_b) - shared
    if missing <= 0 or (missing <= tolerance and shared >= TOLERANCE_SHARED_PER_MISSING * missing):
        return INCLUSION
    return PARTIAL


def overlap_rate(shared: int, count_a: int, count_b: int) -> float:
    """Shared sentences over the union of both pages' sentences."""
    union = count_a + count_b - shared
    return shared / union if union else 0.0


def inclusion_rate(shared: int, count_a: int, count_b: int) -> float:
    """Shared sentences over the smaller page's sentences."""
    smaller = min(count_a, count_b)
    return shared / smaller if smaller else 0.0


def url_hash(url: str) -> int:
    """Return a 64-bit fingerprint of a normalised URL (link targets are stored this way)."""
    digest = hashlib.blake2b(normalize_url(url).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def path_segments(url: str) -> list[str]:
    """Return the path segments of a URL, an index file name dropped, the query on the last."""
    parts = urlsplit(normalize_url(url))
    segments = [segment for segment in parts.path.split("/") if segment]
    if segments and segments[-1].lower() in _INDEX_FILES:
        segments.pop()
    if parts.query:
        segments.append(f"?{parts.query}")
    return segments


def path_similarity(url_a: str, url_b: str) -> float:
    """Share of trailing path segments the two URLs have in common (1.0 for two site roots)."""
    first, second = path_segments(url_a), path_segments(url_b)
    longest = max(len(first), len(second))
    if longest == 0:
        return 1.0
    common = 0
    for left, right in zip(reversed(first), reversed(second), strict=False):
        if left != right:
            break
        common += 1
    return common / longest


@dataclass(frozen=True)
class PagePair:
    """What the relation rules look at for one pair: URLs, links and sentence counts."""

    url_a: str
    url_b: str
    a_links_b: bool
    b_links_a: bool
    shared: int
    count_a: int
    count_b: int


def relation_kind(
    pair: PagePair, mirror_path_similarity: float, inclusion_tolerance: int = 0
) -> tuple[str, bool]:
    """Return the relation and whether ``a`` and ``b`` must swap (so ``a`` cites ``b``)."""
    kind = pair_class(pair.shared, pair.count_a, pair.count_b, inclusion_tolerance)
    if (
        kind == IDENTICAL
        and host_port_of(pair.url_a) != host_port_of(pair.url_b)
        and path_similarity(pair.url_a, pair.url_b) >= mirror_path_similarity
    ):
        return MIRROR, False
    if registered_domain_of(pair.url_a) == registered_domain_of(pair.url_b):
        return (IN_SITE_RELATED if kind == PARTIAL else IN_SITE_INCLUSION), False
    a_quotes_b = pair.a_links_b and pair.shared < pair.count_a
    b_quotes_a = pair.b_links_a and pair.shared < pair.count_b
    if a_quotes_b or b_quotes_a:
        return CITING, not a_quotes_b
    if pair.a_links_b or pair.b_links_a:
        return LINKED, False
    return (SENTENCE_SET_SHARING if kind == PARTIAL else CROSS_SITE_COPY), False
