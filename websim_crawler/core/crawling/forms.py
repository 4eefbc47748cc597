"""Find a site's search form: the form with a query text box, told apart from login/contact forms.

Pure: works on an ``lxml.html`` tree (Scrapy's ``response.selector.root`` or ``parse_html``).
Forms are numbered in document order (``//form``), as ``FormRequest.from_response(formnumber=)``
counts them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

from lxml import etree

from websim_crawler.core.html import document_base_url

# Input types that take free text; a missing or unknown type is a text box too (HTML spec).
_TEXT_INPUT_TYPES = frozenset({"", "text", "search"})
_NON_TEXT_INPUT_TYPES = frozenset(
    {
        "hidden", "password", "email", "tel", "number", "date", "datetime-local", "month",
        "week", "time", "url", "color", "range", "checkbox", "radio", "file", "submit",
        "image", "reset", "button",
    }
)  # fmt: skip
# Field names of search boxes on real sites (q: Google/Bing/DuckDuckGo, s: WordPress, wd: Baidu).
_QUERY_FIELD_NAMES = frozenset(
    {
        "q", "s", "k", "w", "wd", "qs", "query", "search", "searchterm", "search_query",
        "searchstring", "keyword", "keywords", "kw", "term", "terms", "text", "find", "words",
    }
)  # fmt: skip
_QUERY_NAME_PARTS = re.compile(r"search|query|keyword|term|suche|recherche|busca", re.IGNORECASE)
# Text boxes that ask for personal data belong to login, sign-up, newsletter and contact forms.
_PERSONAL_FIELD = re.compile(
    r"e-?mail|user|login|name|phone|tel|address|city|zip|postcode|company|subject|captcha",
    re.IGNORECASE,
)
_FORM_WORDS = (
    ".//label//text() | .//option//text() | .//legend//text() | .//button//text() | "
    ".//input/@placeholder | .//input[@type='submit']/@value | .//@aria-label | .//@title"
)
_SEARCH_WORDS = re.compile(r"search|find|query|lookup|suche|recherche|buscar|検索|搜索", re.I)


@dataclass(frozen=True)
class SearchForm:
    """A form judged to be a search form: where it is, which field takes the query."""

    form_number: int
    query_field: str
    method: str
    action: str
    score: float
    fixed_fields: tuple[tuple[str, str], ...] = ()  # hidden fields sent with every query


def find_search_form(root: etree._Element, base_url: str) -> SearchForm | None:
    """Return the most search-like form of a page, or ``None`` when no form takes a query."""
    candidates = rank_search_forms(root, base_url)
    return candidates[0] if candidates else None


def form_words(form: etree._Element) -> str:
    """Return the words a form shows its user (labels, options, legends, buttons, placeholders,
    titles): what the site calls the things it holds, so a crawl's first query terms. Only this
    form's: a log-in form beside it says "password"."""
    return " ".join(str(text) for text in form.xpath(_FORM_WORDS))


def rank_search_forms(root: etree._Element, base_url: str) -> list[SearchForm]:
    """Score every form with a query text box; best first (ties: earlier form first).

    A form's action resolves against the document base URL (``<base href>``, else the page's
    URL ``base_url``), as a browser and the submission (form2request) resolve it.
    """
    document_base = document_base_url(root, base_url)
    ranked: list[SearchForm] = []
    for form_number, form in enumerate(root.xpath("//form")):
        judged = _judge_form(form, form_number, document_base)
        if judged is not None:
            ranked.append(judged)
    ranked.sort(key=lambda candidate: (-candidate.score, candidate.form_number))
    return ranked


def _judge_form(form: etree._Element, form_number: int, base_url: str) -> SearchForm | None:
    inputs = form.xpath(".//input | .//textarea | .//select")
    types = [_input_type(element) for element in inputs]
    if "password" in types or "file" in types:
        return None  # login, sign-up and upload forms
    text_boxes = [
        element
        for element, kind in zip(inputs, types, strict=True)
        if kind in _TEXT_INPUT_TYPES and element.get("name")
    ]
    query_boxes = [box for box in text_boxes if not _PERSONAL_FIELD.search(_field_label(box))]
    if not query_boxes:
        return None
    best_box = max(query_boxes, key=_query_box_score)
    score = _query_box_score(best_box)
    form_attributes = " ".join(
        form.get(attribute, "") for attribute in ("action", "id", "class", "name", "role")
    )
    if _SEARCH_WORDS.search(form_attributes):
        score += 2.0
    if form.get("role", "").lower() == "search" or form.xpath("ancestor::*[@role='search']"):
        score += 3.0
    if any(_SEARCH_WORDS.search(text) for text in _submit_labels(form)):
        score += 1.0
    # Contact and sign-up forms have several text boxes, an e-mail field or a message area.
    score -= 1.0 * (len(text_boxes) - 1)
    if "email" in types or any(_PERSONAL_FIELD.search(_field_label(box)) for box in text_boxes):
        score -= 3.0
    score -= 2.0 * sum(1 for element in inputs if element.tag == "textarea")
    method = (form.get("method") or "GET").strip().upper()
    return SearchForm(
        form_number=form_number,
        query_field=str(best_box.get("name")),
        method="POST" if method == "POST" else "GET",
        action=urljoin(base_url, (form.get("action") or "").strip()),
        score=score,
        fixed_fields=tuple(
            (str(element.get("name")), str(element.get("value") or ""))
            for element, kind in zip(inputs, types, strict=True)
            if kind == "hidden" and element.get("name")
        ),
    )


def _input_type(element: etree._Element) -> str:
    if element.tag == "textarea":
        return "textarea"
    if element.tag == "select":
        return "select"
    kind = (element.get("type") or "").strip().lower()
    return kind if kind in _NON_TEXT_INPUT_TYPES or kind in _TEXT_INPUT_TYPES else ""


def _field_label(element: etree._Element) -> str:
    return " ".join(
        element.get(attribute, "")
        for attribute in ("name", "id", "placeholder", "aria-label", "autocomplete")
    )


def _query_box_score(element: etree._Element) -> float:
    name = (element.get("name") or "").lower()
    score = 1.0
    if (element.get("type") or "").lower() == "search":
        score += 3.0
    if name in _QUERY_FIELD_NAMES:
        score += 3.0
    elif _QUERY_NAME_PARTS.search(_field_label(element)):
        score += 2.0
    if _SEARCH_WORDS.search(element.get("placeholder", "") + element.get("aria-label", "")):
        score += 1.0
    return score


def _submit_labels(form: etree._Element) -> list[str]:
    labels: list[str] = []
    for button in form.xpath(".//button | .//input[@type='submit' or @type='image']"):
        labels.append(" ".join(button.itertext()) if button.tag == "button" else "")
        labels.extend(button.get(attribute, "") for attribute in ("value", "alt", "aria-label"))
    return labels
