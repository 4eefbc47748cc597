"""Surfacing without Scrapy: the core's decisions driven over HTTP, for tests and benchmarks.

``surface`` does what the ``deepweb`` spider does with a search form on the start page (find the
form, seed the planner, submit each chosen query, read each result page's records, snippets and
counts with the same core functions, follow the next page) with ``urllib`` on loopback, so a
site of the gallery is surfaced in about a second. Given ``queries``, it asks those instead
(the baselines). The spider's own end-to-end tests check that a real crawl does the same.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from lxml import html as lxml_html

from websim_crawler.core.crawling import (
    ResultListMemory,
    SearchTarget,
    find_records,
    find_search_form,
    form_words,
    next_page,
    site_template_links,
)
from websim_crawler.core.html import visible_text
from websim_crawler.core.surfacing import (
    QueryPlanner,
    SurfacingParams,
    record_key,
    record_snippets,
    result_count,
)
from websim_crawler.core.text import detect_language


def fetch(url: str) -> str | None:
    """GET a loopback URL; ``None`` for an HTTP error answer."""
    assert urllib.parse.urlsplit(url).hostname == "127.0.0.1", url
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return str(response.read().decode("utf-8", errors="replace"))
    except urllib.error.HTTPError:
        return None


def surface(
    start_url: str,
    *,
    params: SurfacingParams | None = None,
    queries: Sequence[str] | None = None,
    max_pages: int = 5,
    planner: QueryPlanner | None = None,
    journal: list[dict[str, Any]] | None = None,
) -> QueryPlanner:
    """Surface the site whose start page has the search form; return the planner.

    Records are known by their result-page text only (as without ``follow=1``); ``planner``
    continues an existing one (a resumed crawl); ``journal`` receives the events the spider's
    JOBDIR journal would hold.
    """
    body = fetch(start_url)
    assert body is not None, start_url
    home = lxml_html.fromstring(body)
    form = find_search_form(home, start_url)
    assert form is not None, "the driver needs a search form on the start page"
    text = visible_text(home)
    if planner is None:
        planner = QueryPlanner(
            params or SurfacingParams(), language=detect_language(text), max_pages=max_pages
        )
        planner.seed(form_words(home.xpath("//form")[form.form_number]))
        planner.seed(text)
    template_links = site_template_links(home, start_url)
    search = SearchTarget.of_form(form.action, form.query_field, form.fixed_fields)
    memory = ResultListMemory()
    given = list(queries) if queries is not None else None
    while True:
        query = (given.pop(0) if given else None) if given is not None else planner.next_query()
        if query is None:
            break
        if journal is not None:
            journal.append({"event": "chosen", "query": query})
        url = form.action + "?" + urllib.parse.urlencode({form.query_field: query})
        for page in range(1, max_pages + 1):
            answer = fetch(url)
            if answer is None:
                planner.add_failure(query)
                break
            root = lxml_html.fromstring(answer)
            found = find_records(
                root, url, template_links=template_links, search=search, memory=memory, query=query
            )
            memory.observe(found.other_shapes, found.regions)
            way = next_page(
                root, url, page, results_on_page=len(found.links), record_links=found.links
            )
            goes_on = way is not None and (way.shown or page < max_pages)
            snippets = record_snippets(root, url, found.links)
            records = {record_key(link, query): snippets.get(link, "") for link in found.links}
            count = result_count(root)
            planner.add_result_page(query, records, count, has_next=goes_on)
            if journal is not None:
                journal.append(
                    {
                        "event": "page",
                        "query": query,
                        "records": records,
                        "count": {"matches": count.matches, "shown_cap": count.shown_cap},
                        "has_next": goes_on,
                    }
                )
            if way is None or way.url is None or page == max_pages:
                break
            url = way.url
        planner.finish(query)
        if journal is not None:
            journal.append({"event": "finished", "query": query})
    return planner
