"""What a page says about itself: its title and its declared language."""

from __future__ import annotations

import lxml.etree

from websim_crawler.core.urls import is_http_url

# The first match of each in document order: ``/descendant::x[1]`` (unlike ``//x``) lets libxml2
# stop at the first one instead of collecting all of them.
_TITLE_XPATHS = tuple(
    lxml.etree.XPath(expression, smart_strings=False)
    for expression in (
        "/descendant::title[1]",
        "/descendant::meta[@property='og:title'][@content][1]/@content",
        "/descendant::h1[1]",
    )
)
_LANGUAGE_META_XPATH = lxml.etree.XPath("//meta[@http-equiv and @content]")
# Where a saved page states its own URL: canonical link, Open Graph URL, base element.
_STATED_URL_XPATHS = tuple(
    lxml.etree.XPath(path)
    for path in (
        "/descendant::link[@href][contains(concat(' ', normalize-space(translate(@rel, "
        "'CANONICAL', 'canonical')), ' '), ' canonical ')]/@href",
        "/descendant::meta[@property='og:url'][@content]/@content",
        "/descendant::base[@href]/@href",
    )
)


def page_title(root: lxml.etree._Element) -> str:
    """Return the page title: ``<title>``, else ``og:title``, else the first ``<h1>``."""
    for xpath in _TITLE_XPATHS:
        found = xpath(root)
        if found:
            value = found[0] if isinstance(found[0], str) else "".join(found[0].itertext())
            title = " ".join(str(value).split())
            if title:
                return title
    return ""


def declared_language(root: lxml.etree._Element) -> str | None:
    """Return the language the page declares (``<html lang>`` or Content-Language meta)."""
    lang = root.get("lang") or root.get("xml:lang")
    if lang:
        return lang
    found = _LANGUAGE_META_XPATH(root)
    for meta in found:
        if meta.get("http-equiv", "").lower() == "content-language":
            return str(meta.get("content"))
    return None


def stated_url(root: lxml.etree._Element) -> str | None:
    """Return the absolute http(s) URL a page states for itself (``<link rel=canonical>``,
    ``og:url``, ``<base href>``, in this order), or ``None``: a saved page's own address."""
    for xpath in _STATED_URL_XPATHS:
        for value in xpath(root):
            candidate = str(value).strip()
            if is_http_url(candidate):
                return candidate
    return None
