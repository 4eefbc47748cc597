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

A page whose own class names are at most ``BARE_SHARE`` of its class names wears the chrome
with a few classes its content brought (a code block's language, an admonition): it is *bare*,
and two bare pages share the template of a site whose template is its chrome (a documentation
site built by one theme, every page alike), where their few own classes would part them.

In a collection of several sites no class name reaches that share (each site's chrome is in its
own pages only) and nothing is discounted; in a collection of fewer than ``CHROME_MIN_PAGES``
pages nothing is either. Two pages alone (``websim compare``, a small collection) cannot tell
chrome from template: what both use stands for their template, and they share it when it is
most of each (``pair_class_similarity``). Linear in the class names of the collection; each
page's class set is bounded by its elements.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

# A class name used by at least this share of a collection's pages is its chrome (fitted with
# ``benchmarks/similarity_questions.py``: 0.5 discounts a template that half the pages use,
# 0.9 keeps the Wayback Machine's toolbar of archived captures).
CHROME_SHARE = 0.7
CHROME_MIN_PAGES = 10
# A page whose class names outside the chrome are at most this share of its class names is bare
# (fitted with ``benchmarks/similarity_questions.py``: 0.05 leaves pages of one theme with a
# few content classes apart, 0.15 joins Python docs pages of two templates).
BARE_SHARE = 0.1
TEMPLATE_CLASSES = "template_classes"  # what a pair judged by its class names is scored by


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
    """Containment of the two pages' class names outside ``chrome``: 1.0 when both pages are
    bare (their own class names at most ``BARE_SHARE`` of theirs), 0.0 when only one uses
    any."""
    own_first, own_second = first - chrome, second - chrome
    if _bare(own_first, first) and _bare(own_second, second):
        return 1.0
    if not own_first or not own_second:
        return 0.0
    return len(own_first & own_second) / min(len(own_first), len(own_second))


def _bare(own: frozenset[str], classes: frozenset[str]) -> bool:
    return len(own) <= BARE_SHARE * len(classes)


def pair_class_similarity(first: frozenset[str], second: frozenset[str]) -> float:
    """The class names two pages both use, as a share of the page that uses more (both pages
    bare when what they share is their template); 0.0 when either uses none."""
    if not first or not second:
        return 0.0
    return len(first & second) / max(len(first), len(second))
