"""What a link of a result page is: the result list shown again, or something the list lists.

Path alone says nothing on sites routed by their query string: MediaWiki behind CGI serves its
pages at ``/index.php?title=Some_Page`` and its search at ``/index.php?search=word&title=
Special:Search``, WordPress at ``/?p=123`` and ``/?s=word``. A link is read here by its path and
its query parameters together, against what the search form sets (its query field, the hidden
fields it always sends with their values) and what the result page's own URL carries: on the
path of a result list, a link carrying the query field, the form's fixed fields, or nothing but
the list's own parameters and view parameters (sort, page size, format, print) shows the list
again; one whose parameters identify something else (``title=Some_Page``, ``id=7``) is a
candidate record, even on the same path. The place of a link (data region, template, pager) is
judged elsewhere (``records``, ``regions``); this module only reads URLs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

# Parameters that change how a list is shown, not what it lists (compared without leading "_"
# or "-" and in lower case): sorting, page size, format, printing, language, display mode.
_VIEW_PARAMETERS = frozenset(
    {
        "sort", "sortby", "sort_by", "order", "orderby", "order_by", "dir", "direction",
        "sort_desc", "desc", "asc", "view", "display", "mode", "layout", "format", "fmt",
        "limit", "size", "page_size", "pagesize", "per_page", "perpage", "rows", "count", "num",
        "results", "printable", "print", "lang", "language", "uselang", "setlang", "locale",
        "profile", "fulltext", "go", "submit", "ns", "filter", "facet", "type", "next", "cursor",
        "after", "before", "offset", "start",
    }
)  # fmt: skip
# Page and offset parameters are not among them: WordPress's ``p`` is a post's id, ``id`` and
# ``page`` name records on some sites; the pager is told by the page's own parameters it keeps.


@dataclass(frozen=True)
class SearchTarget:
    """What makes a URL one of a site's result lists.

    ``paths``: the paths result lists are served at (the form's action, a query template's);
    ``query_fields``: the parameter names that carry the query; ``fixed_fields``: the
    ``(name, value)`` pairs the search form always sends (its hidden fields: MediaWiki's
    ``title=Special:Search``, DokuWiki's ``do=search``).
    """

    paths: frozenset[str] = frozenset()
    query_fields: frozenset[str] = frozenset()
    fixed_fields: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def of_form(
        cls, action: str, query_field: str, fixed_fields: Iterable[tuple[str, str]] = ()
    ) -> SearchTarget:
        """Return the target of a search form: its action, its query field, its hidden fields."""
        return cls(
            frozenset({urlsplit(action).path}),
            frozenset({query_field}),
            frozenset((name, value) for name, value in fixed_fields if name != query_field),
        )

    @classmethod
    def of_template(cls, template: str, placeholder: str = "{query}") -> SearchTarget:
        """Return the target of a result URL template: the parameter holding ``placeholder``
        carries the query, the template's other parameters are fixed."""
        parts = urlsplit(template)
        query_fields: set[str] = set()
        fixed: set[tuple[str, str]] = set()
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if placeholder in value:
                query_fields.add(name)
            else:
                fixed.add((name, value))
        return cls(frozenset({parts.path}), frozenset(query_fields), frozenset(fixed))

    @classmethod
    def of_urls(cls, urls: Iterable[str]) -> SearchTarget:
        """Return a target known only by the paths of its result lists."""
        return cls(frozenset(urlsplit(url).path for url in urls))

    def joined(self, other: SearchTarget) -> SearchTarget:
        """Return a target that is both this one and ``other`` (a form and a template)."""
        return SearchTarget(
            self.paths | other.paths,
            self.query_fields | other.query_fields,
            self.fixed_fields | other.fixed_fields,
        )


NO_SEARCH_TARGET = SearchTarget()
"""A site known only by its result page's own URL."""


def shows_result_list(
    link: str, results_url: str, search: SearchTarget = NO_SEARCH_TARGET, query: str | None = None
) -> bool:
    """Tell whether ``link``, found on the result page ``results_url``, shows a result list again.

    True for a link on a result list's path (``search.paths`` or the result page's own) that
    carries a query field (another query, another page of this one), all of the form's fixed
    fields (the form's target), all of the result page's own parameters (its pager, its
    sorting), or no parameter beyond the result page's own, the form's fixed
    ones and view parameters (the page itself, sorted or printed). A parameter of the result
    page whose value is the ``query`` is a query field too (a URL template's, unnamed).
    False for a link on another path, or one whose parameters identify something else.
    """
    parts = urlsplit(link)
    results = urlsplit(results_url)
    if parts.path not in search.paths and parts.path != results.path:
        return False
    params = parse_qsl(parts.query, keep_blank_values=True)
    own = parse_qsl(results.query, keep_blank_values=True)
    query_fields = set(search.query_fields)
    if query:
        folded = " ".join(query.lower().split())
        query_fields.update(
            name for name, value in own if " ".join(value.lower().split()) == folded
        )
    if any(name in query_fields and value.strip() for name, value in params):
        return True
    if search.fixed_fields and search.fixed_fields <= set(params):
        return True
    if own and set(own) <= set(params):
        return True  # the page's own parameters and more: another page or order of this list
    listed = set(own) | search.fixed_fields
    return not any(
        value and (name, value) not in listed and not is_view_parameter(name)
        for name, value in params
    )


def is_view_parameter(name: str) -> bool:
    """Tell whether a query parameter changes how a list is shown (sort, page, size, format)."""
    return name.lstrip("_-").lower() in _VIEW_PARAMETERS
