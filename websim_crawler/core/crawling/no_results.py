"""A result page that says it found nothing ("No results", "Nothing was found").

Search applications answer an empty query, or a pager followed past the last result, with a
page saying so; such a page is counted as an empty result page, not as a page whose records
were missed. The words are read from the start of the page's visible text (``visible_text``),
in a few languages.
"""

from __future__ import annotations

import re

from lxml import etree

from websim_crawler.core.html import visible_text

_NO_RESULTS = re.compile(
    r"\b(?:no (?:search )?(?:results?|matches|matching (?:pages|documents|records|entries|items)"
    r"|(?:pages|documents|records|entries|items|hits) (?:were )?found)"
    r"|(?:there (?:were|are) )?no results? (?:matching|for|found)"
    r"|nothing (?:was |has been )?found|found nothing|did not match any|didn't match any"
    r"|0 (?:results|matches|hits|records|documents)|zero results"
    r"|keine (?:treffer|ergebnisse)|aucun résultat|ningún resultado|sin resultados"
    r"|nessun risultato|geen resultaten|nenhum resultado)\b",
    re.IGNORECASE,
)


def says_no_results(root: etree._Element) -> bool:
    """Tell whether a page's visible text says its search found nothing."""
    return _NO_RESULTS.search(visible_text(root)) is not None
