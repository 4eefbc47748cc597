"""A page's brand identity: the words that name a brand, and the hashes of the page's own images.

A copied login page keeps its brand where an author seldom edits: the title, headings, alt and
aria texts, the file names of its logo, favicon and assets, the host its form posts to, the hosts
it links to, its ``meta`` and Open Graph tags and its class and id names. ``brand_identity``
collects those words (each with the places it was found) and a difference hash of each image
file found beside a saved page; ``BrandRarity`` weighs a word by how few references have it
(a word most references share tells nothing: weight 0), and ``brand_similarity`` scores a page
against a reference by the rare words and images both have, naming them.
"""

from __future__ import annotations

import io
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from PIL import Image, UnidentifiedImageError

from websim_crawler.core.similarity.rarity import rarity_weight
from websim_crawler.core.urls import name_labels_of

if TYPE_CHECKING:
    from websim_crawler.core.html import HtmlTree

# Bounds of one page's identity, each counted in ``BrandIdentity.limits_hit`` when hit.
MAX_ELEMENTS = 20_000  # elements read
MAX_WORDS = 1_000  # distinct words kept
MAX_IMAGES = 24  # image files hashed
MAX_IMAGE_BYTES = 2_000_000  # an image file larger than this is not read
MAX_IMAGE_PIXELS = 16_000_000  # an image larger than this is not decoded
# Two image hashes this close (bits of 64) are taken for the same picture.
IMAGE_HASH_DISTANCE = 10
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".ico", ".webp", ".bmp")
_META_NAMES = re.compile(
    r"^(og:|twitter:|application-name|apple-mobile-web-app-title|description|author|"
    r"keywords|msapplication)"
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_WORD = re.compile(r"[a-z][a-z0-9]*")
_HOST_PART = re.compile(r"[^a-z0-9]+")
_URL_IN_CSS = re.compile(r"url\(\s*['\"]?([^'\")]+)")
# A path part that is a content hash or build id (``8YeTNIlTZjm.png``): mixed case and digits.
_HASHED = re.compile(r"^(?=[^.]*\d)(?=[^.]*[A-Z])(?=[^.]*[a-z])[A-Za-z0-9_-]{6,}(\.\w+)?$")
# How much a word found in each place says about the brand (class and id names are the
# author's as often as the brand's).
PLACE_WEIGHTS = {
    "title": 1.0,
    "heading": 1.0,
    "alt": 1.0,
    "aria": 0.7,
    "image file": 1.0,
    "favicon": 1.0,
    "asset path": 0.7,
    "form host": 1.0,
    "link host": 1.0,
    "meta": 1.0,
    "class/id": 0.5,
}
# A page names its brand by a word in its document title or form host that also stands in one
# of its addresses (a host, or the file name of a logo, favicon or image; not a folder or the
# path of a stylesheet or script, ``Login_files/login.css``): a brand's name is in its domains
# and logo files, a headline word or a page's machinery is not. The brand question judges a
# pair below its threshold for unnamed pairs only when both pages name one brand by a word few
# references name themselves by, which a publisher's sister sites (one template and assets,
# their own names) do not.
NAME_PLACES = frozenset(["title", "form host"])
ADDRESS_PLACES = frozenset(["link host", "form host", "image file", "favicon"])
# Where a two-letter word is a brand's name (VK, HP) rather than a word of a sentence or path.
SHORT_NAME_PLACES = frozenset(["title", "form host", "link host"])
NAME_RARITY = 0.5  # the least ``BrandRarity.name_weight`` of a word that names a brand
# Words of file names, paths and hosts that name no brand (any page has them).
_NOT_WORDS = frozenset(
    [
        "png",
        "jpg",
        "jpeg",
        "gif",
        "svg",
        "ico",
        "webp",
        "bmp",
        "css",
        "js",
        "html",
        "htm",
        "php",
        "aspx",
        "www",
        "com",
        "net",
        "org",
        "http",
        "https",
        "static",
        "assets",
        "asset",
        "images",
        "image",
        "img",
        "css",
        "fonts",
        "font",
        "min",
        "the",
        "and",
        "for",
        "with",
        "you",
        "your",
    ]
)


@dataclass(frozen=True)
class BrandIdentity:
    """A page's brand words (each with where it was found) and its images' difference hashes."""

    words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    image_hashes: dict[str, int] = field(default_factory=dict)  # file name -> 64-bit dHash
    limits_hit: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe form (hashes as hex: JSON numbers lose 64-bit integers)."""
        return {
            "words": {word: list(places) for word, places in sorted(self.words.items())},
            "image_hashes": {name: f"{value:016x}" for name, value in self.image_hashes.items()},
            "limits_hit": dict(self.limits_hit),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BrandIdentity:
        """Rebuild ``to_dict`` data (``ValueError``/``TypeError``/``KeyError`` if malformed)."""
        return cls(
            {str(word): tuple(map(str, places)) for word, places in data["words"].items()},
            {str(name): int(value, 16) for name, value in data["image_hashes"].items()},
            {str(name): int(count) for name, count in data["limits_hit"].items()},
        )


def page_folder(url: str | None) -> Path | None:
    """Return the folder of a page saved as a file (a ``file://`` URL), else ``None``."""
    if not url or not url.startswith("file:"):
        return None
    return Path(url2pathname(urlsplit(url).path)).parent


def brand_words(text: str, shortest: int = 3) -> list[str]:
    """Return the words of a text, file name or host: lower case, camelCase also split,
    ``shortest``-30 letters, file suffixes and generic path words dropped."""
    text = unquote(text)
    whole = _WORD.findall(text.lower())
    # a name written in camelCase (WordPress, LinkedIn) is kept whole beside its parts
    parts = _WORD.findall(_CAMEL.sub(" ", text).lower())
    return [
        word
        for word in (whole + parts if len(parts) > len(whole) else whole)
        if shortest <= len(word) <= 30
        and word not in _NOT_WORDS
        and sum(c.isdigit() for c in word) < 3
    ]


def _host_labels(url: str) -> str:
    """Return the host of a URL without its public suffix (``com``, ``co.uk`` and ``in`` name a
    registry, not a brand) and without the parts of two letters or less of its subdomains
    (``in.``, ``bn-in.``, ``m.``: a language or a device; a two-letter brand owns its domain,
    ``vk.com``)."""
    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""
    *subdomains, registered = name_labels_of(host).split(".")
    parts = _HOST_PART.split(".".join(subdomains))
    return " ".join([part for part in parts if len(part) > 2] + [registered])


def brand_identity(root: HtmlTree, folder: Path | None = None) -> BrandIdentity:
    """Collect the brand words of a parsed page (lxml root) and hash its image files found in
    ``folder`` (the saved page's own folder; files outside it are never read)."""
    found: dict[str, set[str]] = {}
    limits: Counter[str] = Counter()
    images: list[str] = []

    def add(text: str | None, place: str) -> None:
        if not text:
            return
        for word in brand_words(text, 2 if place in SHORT_NAME_PLACES else 3):
            if word not in found and len(found) >= MAX_WORDS:
                limits["words"] += 1
                return
            found.setdefault(word, set()).add(place)

    def add_path(path: str | None, place: str) -> None:
        if not path or path.startswith("data:"):
            return
        host = _host_labels(path) if "//" in path else ""
        add(host, "link host" if place == "asset path" else place)
        file_path = urlsplit(path).path if "//" in path else path.split("?")[0]
        *folders, name = [part for part in file_path.split("/") if not _HASHED.match(part)] or [""]
        # a logo's or favicon's own file name is the brand's; its folders are the site's (a
        # saved page's ``Login_files/`` is its title again)
        add(" ".join(folders), "asset path")
        add(name, place)

    for count, element in enumerate(root.iter()):
        if count >= MAX_ELEMENTS:
            limits["elements"] += 1
            break
        tag = element.tag if isinstance(element.tag, str) else ""
        get = element.get
        if tag == "title":
            # an SVG icon's <title> is its accessible name, not the document's title
            in_svg = next(element.iterancestors("svg", "{http://www.w3.org/2000/svg}svg"), None)
            add(
                element.text_content() if hasattr(element, "text_content") else element.text,
                "title" if in_svg is None else "aria",
            )
        elif tag in ("h1", "h2", "h3"):
            add(
                element.text_content() if hasattr(element, "text_content") else element.text,
                "heading",
            )
        elif tag == "meta":
            name = (get("property") or get("name") or "").lower()
            if _META_NAMES.match(name):
                add(get("content"), "meta")
        elif tag == "form":
            add(_host_labels(get("action") or ""), "form host")
        elif tag == "a" and "//" in (get("href") or ""):
            add(_host_labels(get("href") or ""), "link host")
        elif tag == "link":
            relation = (get("rel") or "").lower()
            place = "favicon" if "icon" in relation else "asset path"
            add_path(get("href"), place)
            if place == "favicon" and get("href"):
                images.append(get("href") or "")
        elif tag in ("img", "source", "input", "image", "script"):
            source = get("src") or get("href") or get("{http://www.w3.org/1999/xlink}href")
            add_path(source, "asset path" if tag == "script" else "image file")
            if tag != "script" and source:
                images.append(source)
            for candidate in (get("srcset") or "").split(","):
                add_path(candidate.strip().split(" ")[0], "image file")
        if tag == "style" and element.text:
            for link in _URL_IN_CSS.findall(element.text[:200_000]):
                add_path(link, "image file")
                images.append(link)
        style = get("style") if tag else None
        if style and "url(" in style:
            for link in _URL_IN_CSS.findall(style):
                add_path(link, "image file")
                images.append(link)
        add(get("alt") if tag else None, "alt")
        add(get("aria-label") if tag else None, "aria")
        add(get("title") if tag else None, "aria")
        add(get("class") if tag else None, "class/id")
        add(get("id") if tag else None, "class/id")
    hashes = _image_hashes(images, folder, limits) if folder is not None else {}
    words = {word: tuple(sorted(places)) for word, places in found.items()}
    return BrandIdentity(words, hashes, dict(limits))


def _image_hashes(links: Iterable[str], folder: Path, limits: Counter[str]) -> dict[str, int]:
    """Return the dHash of each image file the page links to inside its folder (bounded)."""
    hashes: dict[str, int] = {}
    try:
        base = folder.resolve()
    except OSError:
        return hashes
    seen: set[Path] = set()
    for link in links:
        if "//" in link or link.startswith("data:"):
            continue
        relative = unquote(link.split("?")[0].split("#")[0]).lstrip("/")
        if not relative.lower().endswith(_IMAGE_SUFFIXES):
            continue
        try:
            path = (base / relative).resolve()
        except (OSError, ValueError):
            continue
        if path in seen or not path.is_relative_to(base) or not path.is_file():
            continue
        seen.add(path)
        if len(hashes) >= MAX_IMAGES:
            limits["images"] += 1
            break
        if path.stat().st_size > MAX_IMAGE_BYTES:
            limits["image_bytes"] += 1
            continue
        value = difference_hash(path.read_bytes(), limits)
        if value is not None:
            hashes[path.relative_to(base).as_posix()] = value
    return hashes


def difference_hash(data: bytes, limits: Counter[str] | None = None) -> int | None:
    """Return the 64-bit difference hash of an image (Krawetz's dHash: 9x8 grey, each pixel
    brighter than its right neighbour), or ``None`` when unreadable, too large or featureless."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_IMAGE_PIXELS:
                if limits is not None:
                    limits["image_pixels"] += 1
                return None
            image.seek(0)
            picture: Image.Image = image
            if image.mode in ("RGBA", "LA", "P"):
                backdrop = Image.new("RGBA", image.size, (255, 255, 255, 255))
                picture = Image.alpha_composite(backdrop, image.convert("RGBA"))
            grey = picture.convert("L").resize((9, 8), Image.Resampling.LANCZOS)
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError, EOFError):
        return None
    pixels = grey.tobytes()
    value = 0
    for row in range(8):
        for column in range(8):
            value = value << 1 | (pixels[row * 9 + column] > pixels[row * 9 + column + 1])
    # An image with (nearly) no edges (a blank, a solid sprite) identifies nothing.
    return value if 4 <= value.bit_count() <= 60 else None


def names(identity: BrandIdentity) -> set[str]:
    """Return the words a page names its brand by: in its title or form host and in one of its
    addresses (``NAME_PLACES``, ``ADDRESS_PLACES``)."""
    return {
        word
        for word, places in identity.words.items()
        if NAME_PLACES.intersection(places) and ADDRESS_PLACES.intersection(places)
    }


class BrandRarity:
    """How many references have each brand word and image hash (the IDF of brand features)."""

    def __init__(self) -> None:
        self.references = 0
        self.word_counts: Counter[str] = Counter()
        self.name_counts: Counter[str] = Counter()  # references naming themselves by the word
        self.image_counts: Counter[int] = Counter()

    def add(self, identity: BrandIdentity | None) -> None:
        """Count one reference's features."""
        self.references += 1
        if identity is not None:
            self.word_counts.update(identity.words.keys())
            self.name_counts.update(names(identity))
            self.image_counts.update(set(identity.image_hashes.values()))

    def weight(self, word: str) -> float:
        """Return the word's ``rarity.rarity_weight``: 1 for a word of one reference (or none),
        0 for all's."""
        return self._weight(self.word_counts.get(word, 0))

    def name_weight(self, word: str) -> float:
        """Return the rarity weight of the word as a name: by the references named by it
        (``names``; a brand every page links to is the name of few)."""
        return self._weight(self.name_counts.get(word, 0))

    def image_weight(self, value: int) -> float:
        """Return the rarity weight of an image hash (as ``weight``)."""
        return self._weight(self.image_counts.get(value, 0))

    def _weight(self, count: int) -> float:
        return rarity_weight(self.references, count)


@dataclass(frozen=True)
class BrandScore:
    """A page's brand score against a reference and the features that decided it."""

    score: float
    words: tuple[tuple[str, tuple[str, ...]], ...] = ()  # the shared words, strongest first
    image_distance: int | None = None  # bits between the closest shared image hashes
    names: tuple[str, ...] = ()  # rare words both pages name their brand with (``NAME_PLACES``)

    @property
    def named(self) -> bool:
        """Whether both pages name one brand: a rare word in a naming place, or one picture."""
        return bool(self.names) or self.image_distance is not None

    def explain(self) -> str:
        """Say which features decided, e.g. ``brand words: instagram (title, alt); logo hash
        distance 4``."""
        parts = []
        if self.words:
            parts.append(
                "brand words: "
                + ", ".join(f"{word} ({', '.join(places)})" for word, places in self.words)
            )
        if self.names:
            parts.append(f"named on both by: {', '.join(self.names)}")
        if self.image_distance is not None:
            parts.append(f"image hash distance {self.image_distance}")
        return "; ".join(parts) or "no brand feature shared"


def _word_vector(identity: BrandIdentity, rarity: BrandRarity) -> dict[str, float]:
    return {
        word: rarity.weight(word) * math.sqrt(sum(PLACE_WEIGHTS.get(p, 0.5) for p in places))
        for word, places in identity.words.items()
    }


def brand_similarity(
    page: BrandIdentity | None,
    reference: BrandIdentity | None,
    rarity: BrandRarity | None = None,
    shown: int = 3,
) -> BrandScore | None:
    """Score the brand features two pages share (cosine of rarity-weighted words, raised by a
    shared image); ``None`` when either page has no brand features."""
    if page is None or reference is None or not (page.words or page.image_hashes):
        return None
    if not (reference.words or reference.image_hashes):
        return None
    rarity = rarity or BrandRarity()
    first, second = _word_vector(page, rarity), _word_vector(reference, rarity)
    shared = {word: first[word] * second[word] for word in first.keys() & second.keys()}
    norm = math.sqrt(sum(v * v for v in first.values()) * sum(v * v for v in second.values()))
    word_score = sum(shared.values()) / norm if norm > 0 else 0.0
    image_score, distance = 0.0, None
    for value in page.image_hashes.values():
        for other in reference.image_hashes.values():
            bits = (value ^ other).bit_count()
            if bits <= IMAGE_HASH_DISTANCE and (distance is None or bits < distance):
                distance = bits
                image_score = (1.0 - bits / (2 * IMAGE_HASH_DISTANCE)) * rarity.image_weight(other)
    score = 1.0 - (1.0 - min(1.0, word_score)) * (1.0 - image_score)
    strongest = sorted((w for w in shared if shared[w] > 0), key=lambda w: (-shared[w], w))
    words = tuple((word, page.words[word]) for word in strongest[:shown])
    named = sorted(
        word for word in names(page) & names(reference) if rarity.name_weight(word) >= NAME_RARITY
    )
    return BrandScore(score, words, distance, tuple(named[:shown]))
