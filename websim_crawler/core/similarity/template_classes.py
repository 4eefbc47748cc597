"""Template classes: do two pages of a collection share a template, the site's chrome discounted?

The layout stage compares whole trees, so two pages of one site score high on the header,
navigation and footer they share (the site's chrome) whatever their main part is: a site's
result lists and its records score 0.7-0.8 against each other, as high as two records of two
different sites share. Within a collection the chrome can be told apart: it is what nearly
every page uses. Following the site-level templates of Bar-Yossef and Rajagopalan ("Template
detection via data mining and its applications", WWW 2002: the parts many pages of a site
share) and html-similarity's style measure (the CSS class names two pages use), a page's
template classes are the class names it uses that fewer than ``CHROME_SHARE`` of the
collection's pages use; two pages share a template when one's template classes are mostly the
other's (containment, ``|A & B| / min(|A|, |B|)``), which keeps a short page (a record with few
fields) with the longer pages of its template.

In a collection of several sites no class name reaches that share (each site's chrome is in its
own pages only) and nothing is discounted; in a collection of fewer than ``CHROME_MIN_PAGES``
pages nothing is either (two pages alone cannot tell chrome from template). Linear in the
class names of the collection; each page's class set is bounded by its elements.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

# A class name used by at least this share of a collection's pages is its chrome (fitted with
# ``benchmarks/similarity_questions.py``: 0.5 discounts a template that half the pages use,
# 0.9 keeps the Wayback Machine's toolbar of archived captures).
CHROME_SHARE = 0.7
CHROME_MIN_PAGES = 10


def chrome_classes(class_sets: Iterable[frozenset[str]]) -> frozenset[str]:
    """Return the class names used by at least ``CHROME_SHARE`` of the pages (none when there
    are fewer than ``CHROME_MIN_PAGES`` pages)."""
    used: Counter[str] = Counter()
    pages = 0
    for classes in class_sets:
        used.update(classes)
        pages += 1
    if pages < CHROME_MIN_PAGES:
        return frozenset()
    return frozenset(name for name, count in used.items() if count >= CHROME_SHARE * pages)


def template_class_similarity(
    first: frozenset[str], second: frozenset[str], chrome: frozenset[str] = frozenset()
) -> float:
    """Containment of the two pages' class names outside ``chrome``: 1.0 when both use none
    (chrome only: the same bare template), 0.0 when only one does."""
    own_first, own_second = first - chrome, second - chrome
    if not own_first or not own_second:
        return float(not own_first and not own_second)
    return len(own_first & own_second) / min(len(own_first), len(own_second))
