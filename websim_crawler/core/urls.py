"""URL helpers, one home: the normal form of a URL, the key pages are compared by, and sites.

A "site" has three senses here, each with its own name:

* ``hostname_of``: the host name alone (what Scrapy's ``allowed_domains`` takes);
* ``host_port_of``: host and port, the site a template memory is kept for; with the scheme
  (``origin_of``), the site a crawl stays on;
* ``registered_domain_of``: the domain a name was registered under by the Public Suffix List
  (``news.example.co.uk`` -> ``example.co.uk``), the site of the near-duplicate relations.

``name_labels_of`` is the other half of a host: its labels without the public suffix
(``news.example.co.uk`` -> ``news.example``), the words a brand names itself by.

All three are lower-cased and drop a leading ``www.``; a URL without a host, or one that cannot
be split (an unclosed IPv6 bracket, a port out of range), has the site ``""``.
"""

from __future__ import annotations

import ipaddress
import re
from functools import cache, lru_cache
from typing import NamedTuple
from urllib.parse import urljoin, urlsplit, urlunsplit

from publicsuffixlist import PublicSuffixList

_DEFAULT_PORTS = {"http": 80, "https": 443}
# An archived capture (<archive host>/web/<timestamp><flags>/<original url>, the Wayback Machine's
# replay path on web.archive.org, web-beta.archive.org or an archive page's own host when a relative
# link was resolved against it) stands for the original URL, so pages captured in different years
# still share their links. DOTALL: the tail matches any character, so a line break in a link
# cannot send the match back through every split of a long host-like run (quadratic).
_WAYBACK_RE = re.compile(
    r"^(?:https?:)?//[^/]+/web/\d{4,14}[a-z_]*\*?/((?:https?:/{1,2})?[\w.-]+\.\w+.*)$",
    re.IGNORECASE | re.DOTALL,
)
_SCHEME_RE = re.compile(r"^https?:/{1,2}", re.IGNORECASE)
# A URL that names a scheme (``http:``, ``mailto:``) or starts scheme-relative (``//``).
_SCHEMED_RE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)
# Links to these are never pages (Scrapy's LinkExtractor skips a similar list); every other
# scheme but http(s) is left out too, once the link is resolved.
_SKIPPED_SCHEMES = ("javascript:", "mailto:", "tel:", "data:", "ftp:", "file:", "about:")
# Links to files with these extensions are not pages (Scrapy's LinkExtractor skips a similar
# list).
_NOT_PAGE_EXTENSIONS = frozenset(
    {
        "7z", "avi", "bin", "bmp", "bz2", "css", "csv", "doc", "docx", "exe", "gif", "gz",
        "ico", "iso", "jpeg", "jpg", "js", "json", "m4a", "mov", "mp3", "mp4", "mpeg", "ogg",
        "pdf", "png", "ppt", "pptx", "rar", "rss", "svg", "tar", "tgz", "tif", "tiff", "wav",
        "webm", "webp", "woff", "woff2", "xls", "xlsx", "xml", "zip",
    }
)  # fmt: skip
# An href already absolute (no dot segments, brackets or white space) is taken as written: most
# links of a page are such links, and joining them would change nothing but the time spent.
_NEEDS_JOIN_RE = re.compile(r"/\.|[\[\]\s]")
# A root- or scheme-relative href that urljoin would only put after the base's host: ASCII, no
# dot segments, brackets, white space, ';' parameters, or an empty query (urljoin drops the '?').
_PLAIN_RELATIVE_RE = re.compile(r"(?!.*(?:/\.|[\[\]\s;]|\?(?:#|$)))[\x21-\x7e]+\Z")


class _Authority(NamedTuple):
    scheme: str
    host: str  # lower-cased, without brackets, ``www.`` kept
    port: int | None  # None when absent or the scheme's default


def _authority(url: str) -> _Authority | None:
    """Split a URL's scheme, host and port; ``None`` when it cannot be split."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if _DEFAULT_PORTS.get(scheme) == port:
        port = None
    return _Authority(scheme, parts.hostname or "", port)


def _with_port(host: str, port: int | None) -> str:
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return host if port is None else f"{host}:{port}"


def normalize_url(url: str) -> str:
    """Return a URL in its normal form (RFC 3986 syntax-based normalisation).

    The normal form is ``scheme://host[:port]/path[?query]``: scheme and host lower-cased, user
    info, the scheme's default port (80, 443) and the fragment dropped, an empty path made ``/``;
    path and query are kept as written. A URL that cannot be split is returned stripped.
    """
    authority = _authority(url)
    if authority is None:
        return url.strip()
    parts = urlsplit(url.strip())
    netloc = _with_port(authority.host, authority.port)
    return urlunsplit((authority.scheme, netloc, parts.path or "/", parts.query, ""))


def is_http_url(url: str | None) -> bool:
    """Tell whether a URL is absolute http(s) with a host (relative links can resolve on it)."""
    if not url or not url[:8].lower().startswith(("http://", "https://")):
        return False
    try:
        return bool(urlsplit(url.strip()).hostname)
    except ValueError:
        return False


def absolute_url(href: str, base_url: str | None) -> str | None:
    """Resolve a link's ``href`` against a base URL: an absolute http(s) URL without fragment.

    An href that is already an absolute http(s) URL without dot segments, brackets or white
    space is kept as written (its fragment dropped); any other is resolved by ``urljoin``
    against ``base_url``. ``None`` for an empty href, a bare fragment, a skipped scheme
    (``javascript:``, ``mailto:``, ``tel:``, ``data:``, ``ftp:``, ``file:``, ``about:``) or any
    other non-http(s) one, a relative href without a base URL, or one that cannot be split (an
    unclosed IPv6 bracket). The crawl's links and the page records' ``links`` are resolved here.
    """
    raw = href.strip()
    if not raw or raw[0] == "#" or raw[:11].lower().startswith(_SKIPPED_SCHEMES):
        return None
    if raw.startswith(("http://", "https://")):
        if not _NEEDS_JOIN_RE.search(raw):
            return raw.split("#", 1)[0]
    elif raw[0] == "/" and _PLAIN_RELATIVE_RE.match(raw):
        # A third of a news page's links are root-relative: no path to resolve, so what
        # urljoin would give is the base's scheme and host before the href.
        origin = _http_origin(base_url or "")
        if origin is None:
            return None
        scheme, netloc = origin
        if raw[1:2] != "/":
            return f"{scheme}://{netloc}{raw}".split("#", 1)[0]
        if raw[2:3] not in ("", "/", "?", "#"):  # a host of its own (else urljoin keeps base's)
            return f"{scheme}:{raw}".split("#", 1)[0]
    try:
        absolute = urljoin(base_url or "", raw).split("#", 1)[0]
        scheme = urlsplit(absolute).scheme
    except ValueError:
        return None
    return absolute if scheme in ("http", "https") else None


@lru_cache(maxsize=256)
def _http_origin(base_url: str) -> tuple[str, str] | None:
    """Return the scheme and netloc of an http(s) base URL; ``None`` for any other base."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return None
    return (parts.scheme, parts.netloc) if parts.scheme in ("http", "https") else None


def looks_like_page(url: str) -> bool:
    """Tell whether a URL may be an HTML page (not an image, archive, feed or document)."""
    path = urlsplit(url).path
    last_segment = path.rsplit("/", 1)[-1]
    if "." not in last_segment:
        return True
    return last_segment.rsplit(".", 1)[-1].lower() not in _NOT_PAGE_EXTENSIONS


def page_key(url: str) -> str:
    """Return the key under which two URLs are taken for one page (link similarity).

    The key is ``host/path[?query]``: a Wayback Machine capture stands for its original URL, the
    scheme, port, user info, fragment, ``www.`` and trailing slashes are dropped and the host is
    lower-cased (an IPv6 host kept in brackets), so ``https://www.a.org/x/`` and an archived
    ``http://a.org/x`` share one key. The key of an http(s) URL is its own key (a site's root
    ``a.org/`` stays ``a.org/``), so keying twice is harmless.
    """
    url = url.strip()
    wrapped = _WAYBACK_RE.match(url)
    if wrapped:
        url = "http://" + _SCHEME_RE.sub("", wrapped.group(1))
    elif not _SCHEMED_RE.match(url):
        url = "//" + url  # a key (no scheme, no port): the host comes first
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    host = (parts.hostname or "").removeprefix("www.")
    if ":" in host:
        host = f"[{host}]"
    path = parts.path.rstrip("/") or "/"
    return f"{host}{path}?{parts.query}" if parts.query else f"{host}{path}"


def hostname_of(url: str | None) -> str:
    """Return the host name of a URL without port, lower-cased, ``www.`` dropped."""
    authority = _authority(url) if url else None
    return authority.host.removeprefix("www.") if authority else ""


def host_port_of(url: str | None) -> str:
    """Return ``host[:port]`` of a URL: lower-cased, ``www.`` and the default port dropped."""
    authority = _authority(url) if url else None
    if authority is None or not authority.host:
        return ""
    return _with_port(authority.host.removeprefix("www."), authority.port)


def origin_of(url: str | None) -> str:
    """Return ``scheme://host[:port]`` of a URL (``host_port_of`` with the lower-cased scheme),
    or ``""`` without a host: the site a crawl stays on, as browsers' same-origin rule has it."""
    site = host_port_of(url)
    if not site or url is None:
        return ""
    return f"{url.split(':', 1)[0].lower()}://{site}"


def same_host_port(url: str, other: str) -> bool:
    """Tell whether two URLs are on the same host and port (``www.`` and scheme ignored)."""
    site = host_port_of(url)
    return bool(site) and site == host_port_of(other)


def registered_domain_of(url: str | None) -> str:
    """The registered domain of a URL's host by the Public Suffix List (``publicsuffixlist``).

    Private suffixes count (``alice.github.io`` and ``bob.github.io`` are two sites); an IP
    address, a bare public suffix or a single-label name (``localhost``) is its own domain.
    """
    host = hostname_of(url)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return (_public_suffixes().privatesuffix(host) or host) if host else ""
    return host


def name_labels_of(host: str) -> str:
    """Return a host name without its public suffix by the Public Suffix List (``accounts.
    spotify.com`` -> ``accounts.spotify``, ``bbc.co.uk`` -> ``bbc``): a registry's suffix names
    no one. An IP address, a bare suffix or a single-label name gives ``""``."""
    host = host.lower().rstrip(".")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        suffix = _public_suffixes().publicsuffix(host) if host else None
        return host[: -len(suffix) - 1] if suffix and host.endswith("." + suffix) else ""
    return ""


@cache
def _public_suffixes() -> PublicSuffixList:
    """The list bundled with the package, loaded once per process (about 0.1 s)."""
    return PublicSuffixList()
