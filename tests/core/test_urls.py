"""URL helpers: the normal form, links resolved, the page key and the three senses of a site."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from websim_crawler.core.crawling import site_template_links
from websim_crawler.core.html import document_base_url, outgoing_links, parse_html
from websim_crawler.core.similarity import LinkGraph
from websim_crawler.core.urls import (
    absolute_url,
    host_port_of,
    hostname_of,
    name_labels_of,
    normalize_url,
    page_key,
    registered_domain_of,
    same_host_port,
)


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("HTTP://Example.COM", "http://example.com/"),
        ("http://example.com:80/A/b?Q=1#top", "http://example.com/A/b?Q=1"),
        ("https://example.com:443/", "https://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("http://user:secret@www.example.com/x", "http://www.example.com/x"),
        ("  http://example.com/a  ", "http://example.com/a"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://[::1", "http://[::1"),  # cannot be split: returned as it is
        ("http://example.com:99999/", "http://example.com:99999/"),  # port out of range
    ],
)
def test_normal_form(url: str, normal: str) -> None:
    assert normalize_url(url) == normal


def test_normal_form_is_idempotent() -> None:
    for url in ("HTTP://A.org:80", "https://b.org:8443/x?y=1#f", "http://[::1]:81/"):
        assert normalize_url(normalize_url(url)) == normalize_url(url)


def test_archived_urls_share_the_original_page_key() -> None:
    archived = "https://web.archive.org/web/20050902035602/http://www.cnn.com/US/#top"
    assert page_key(archived) == page_key("http://cnn.com/US") == "cnn.com/US"
    original = page_key("https://www.latimes.com/politics/")
    assert original == "latimes.com/politics"
    for replayed in (
        "https://web-beta.archive.org/web/20170203173512/https://www.latimes.com/politics/",
        "//web.archive.org/web/2017im_/www.latimes.com/politics",
        # a relative replay link resolved against the page's own URL
        "http://www.cnn.com/web/20050409130612*/http:/www.latimes.com/politics/",
    ):
        assert page_key(replayed) == original
    assert page_key("http://shop.example/web/2020/catalogue") == "shop.example/web/2020/catalogue"
    assert page_key("http://A.org:8080/x?b=2") == "a.org/x?b=2"  # the port is no part of a page
    assert page_key("http://a.org") == page_key("https://a.org/") == "a.org/"


def test_three_senses_of_site() -> None:
    url = "http://User@WWW.News.Example.co.uk:8080/a"
    assert hostname_of(url) == "news.example.co.uk"
    assert host_port_of(url) == "news.example.co.uk:8080"
    assert registered_domain_of(url) == "example.co.uk"
    assert registered_domain_of("https://blog.example.com/") == "example.com"
    assert registered_domain_of("https://a.b.example.com.au/") == "example.com.au"
    assert registered_domain_of("https://www.city.kawasaki.jp/") == "city.kawasaki.jp"  # a PSL rule
    assert registered_domain_of("https://alice.github.io/x") == "alice.github.io"  # private suffix
    assert registered_domain_of("https://x.y.example.org/") == "example.org"  # not co/com-style
    assert registered_domain_of("http://localhost:8000/") == "localhost"
    assert registered_domain_of("http://co.uk/") == "co.uk"  # a bare suffix is its own domain
    assert registered_domain_of("http://127.0.0.1:8001/x") == "127.0.0.1"
    assert registered_domain_of("http://[::1]:8001/x") == "::1"
    assert host_port_of("http://[::1]:8001/x") == "[::1]:8001"
    assert host_port_of("https://x.org:443/") == host_port_of("http://www.x.org/") == "x.org"


@pytest.mark.parametrize(
    ("host", "labels"),
    [
        ("accounts.spotify.com", "accounts.spotify"),
        ("VK.COM.", "vk"),
        ("news.bbc.co.uk", "news.bbc"),  # a two-label public suffix
        ("alice.github.io", "alice"),  # a private suffix names no one either
        ("www.newsnation.in", "www.newsnation"),
        ("co.uk", ""),  # a bare suffix
        ("localhost", ""),
        ("127.0.0.1", ""),
        ("::1", ""),
        ("", ""),
    ],
)
def test_name_labels_are_a_host_without_its_public_suffix(host: str, labels: str) -> None:
    assert name_labels_of(host) == labels


@pytest.mark.parametrize(
    "url", [None, "", "not a url", "mailto:a@b.org", "http://[::1", "http://x.org:99999/"]
)
def test_a_url_without_a_usable_host_has_no_site(url: str | None) -> None:
    assert host_port_of(url) == ""
    assert hostname_of(url) == ""
    assert registered_domain_of(url) == ""


def test_same_host_port() -> None:
    assert same_host_port("http://www.x.org/a", "https://x.org/b")
    assert not same_host_port("http://x.org:8001/", "http://x.org:8002/")
    assert not same_host_port("http://[::1", "http://[::1")  # no site is nobody's site


@given(
    host=st.sampled_from(["a.org", "www.a.org", "News.Example.COM", "127.0.0.1:8080", "[::1]:80"]),
    path=st.lists(st.sampled_from(["x", "y.html", "", "web", "2017"]), max_size=3),
    slash=st.booleans(),
    query=st.sampled_from(["", "?q=1", "?next=http://b.org/"]),
)
def test_a_page_key_is_its_own_key(host: str, path: list[str], slash: bool, query: str) -> None:
    """Keying a key again changes nothing (the link graph keys links that are keys already)."""
    url = f"http://{host}/{'/'.join(path)}{'/' if slash else ''}{query}"
    key = page_key(url)
    assert page_key(key) == key


def test_page_keys_of_other_schemes_and_ipv6_hosts() -> None:
    assert page_key("http://[::1]:8000/x/") == "[::1]/x"
    assert page_key("mailto:a@b.org") == "a@b.org"  # not the site root of b.org
    assert page_key("//cdn.a.org/lib.js") == "cdn.a.org/lib.js"


def test_links_to_a_site_root_give_it_predecessors() -> None:
    pages = {"http://www.a.org/": ["http://a.org/x"], "http://a.org/x": ["http://a.org/"]}
    graph = LinkGraph({url: [page_key(link) for link in links] for url, links in pages.items()})
    assert graph.predecessors_of(["http://www.a.org/"]) == {"a.org/x"}


@pytest.mark.parametrize(
    ("href", "resolved"),
    [
        ("a.html#part", "http://x.org/docs/a.html"),
        ("  /b?q=1  ", "http://x.org/b?q=1"),
        ("//z.org/map", "http://z.org/map"),
        ("http://y.org/b?#top", "http://y.org/b?"),  # an absolute link is kept as written
        ("http://y.org/./b", "http://y.org/./b"),  # (joined first: urljoin keeps its path)
        ("HTTP://Y.org/c", "http://Y.org/c"),  # joined: the scheme lower-cased
        ("http:d", "http://x.org/docs/d"),  # no host of its own: resolved
        ("#top", None),
        ("", None),
        ("JavaScript:go()", None),
        ("mailto:a@x.org", None),
        ("tel:+1", None),
        ("data:text/html,x", None),
        ("ftp://y.org/f", None),
        ("file:///etc/passwd", None),
        ("about:blank", None),
        ("gopher://y.org/", None),  # any other scheme too
        ("http:///p", "http:///p"),  # no host check: the page records always kept these
        ("http://[broken/", None),
    ],
)
def test_one_rule_resolves_links(href: str, resolved: str | None) -> None:
    assert absolute_url(href, "http://x.org/docs/") == resolved


def test_the_records_and_the_crawl_resolve_links_alike() -> None:
    page = parse_html(
        '<html><head><base href="/docs/"></head><body><a href="a.html#part">a</a>'
        '<a href="JavaScript:go()">js</a><a href="ftp://y.org/f">ftp</a>'
        '<a href="http://y.org/b?">b</a><a href="a.html">again</a>'
        '<map><area href="//z.org/map"></map></body></html>'
    )
    links = ["http://x.org/docs/a.html", "http://y.org/b?", "http://z.org/map"]
    assert document_base_url(page, "http://x.org/start") == "http://x.org/docs/"
    assert outgoing_links(page, "http://x.org/start") == links  # page records
    assert site_template_links(page, "http://x.org/start") == frozenset(links)  # the crawl
    assert outgoing_links(page, None) == ["http://y.org/b?"]  # no page URL: absolute links only


def test_a_base_that_cannot_be_resolved_is_ignored() -> None:
    page = parse_html('<html><head><base href="http://[oops/"></head><a href="a">a</a></html>')
    assert document_base_url(page, "http://x.org/d/p") == "http://x.org/d/p"
    assert outgoing_links(page, "http://x.org/d/p") == ["http://x.org/d/a"]


def _joined_by_urljoin(href: str, base: str) -> str | None:
    """What ``absolute_url`` gave a relative href before its root-relative shortcut."""
    absolute = urljoin(base, href.strip()).split("#", 1)[0]
    return absolute if urlsplit(absolute).scheme in ("http", "https") else None


@given(
    href=st.lists(
        st.sampled_from(["/", "a", "B.org", "?", "#", ";", ":", "@", "%2e", ".", "..", "x=1", "é"]),
        max_size=7,
    ).map(lambda parts: "/" + "".join(parts)),
    scheme_relative=st.booleans(),
    base=st.sampled_from(
        [
            "http://a.org/d/p.html",
            "https://U:P@A.org:8080/d/",
            "HTTP://a.org",
            "http:///p",
            "file:///x/y",
            "",
            "http://a.org/d/p?q#f",
        ]
    ),
)
def test_root_relative_links_resolve_as_urljoin_does(
    href: str, scheme_relative: bool, base: str
) -> None:
    href = "/" + href if scheme_relative else href
    assert absolute_url(href, base) == _joined_by_urljoin(href, base)
