"""Brand identity: the words that name a brand and where they were found, rarity, image hashes."""

from __future__ import annotations

import io
from pathlib import Path

import lxml.html
import pytest
from PIL import Image, ImageDraw

from websim_crawler.core.similarity import brand
from websim_crawler.core.similarity.brand import (
    BrandIdentity,
    BrandRarity,
    brand_identity,
    brand_similarity,
    difference_hash,
)

PAGE = b"""<html><head><title>Instagram</title>
<meta property="og:site_name" content="Instagram">
<link rel="icon" href="favicon.png"><link rel="stylesheet" href="css/igLogin.css">
</head><body class="igLoginBox"><h1>Log in</h1>
<img src="img/instagram_logo.png" alt="Instagram logo">
<img src="../outside.png" alt="elsewhere">
<form action="https://www.instagram.com/accounts/login/"><input aria-label="Phone number">
<input type="password"></form>
<div style="background:url(img/8YeTNIlTZjm.png)">footer</div>
<a href="https://help.instagram.com/">Help</a></body></html>"""


def logo(size: int = 64) -> bytes:
    """Return a PNG of a ring and a bar, drawn at ``size`` pixels."""
    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)
    unit = size / 8
    draw.ellipse([unit, unit, 7 * unit, 7 * unit], outline="black", width=max(1, size // 10))
    draw.rectangle([2 * unit, 3.5 * unit, 6 * unit, 4.5 * unit], fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def saved_page(folder: Path) -> Path:
    (folder / "img").mkdir(parents=True)
    (folder / "img" / "instagram_logo.png").write_bytes(logo(64))
    (folder / "favicon.png").write_bytes(logo(32))
    (folder / "login.html").write_bytes(PAGE)
    return folder / "login.html"


def test_brand_words_are_collected_with_the_places_they_were_found(tmp_path: Path) -> None:
    page = saved_page(tmp_path / "kit")
    identity = brand_identity(lxml.html.fromstring(page.read_bytes()), page.parent)
    places = identity.words["instagram"]
    assert {"title", "meta", "alt", "image file", "form host", "link host"} <= set(places)
    assert "class/id" in identity.words["login"]  # camelCase split: igLoginBox
    assert "aria" in identity.words["phone"]
    assert "heading" in identity.words["log"]
    # a content hash in a file name names nothing: 8YeTNIlTZjm gives no words
    assert not {"tnil", "tzjm", "yetnil"} & identity.words.keys()
    assert not {"png", "img", "www", "com"} & identity.words.keys()


def test_the_page_images_beside_it_are_hashed_and_nothing_outside_its_folder(
    tmp_path: Path,
) -> None:
    page = saved_page(tmp_path / "kit")
    (tmp_path / "outside.png").write_bytes(logo(48))
    identity = brand_identity(lxml.html.fromstring(page.read_bytes()), page.parent)
    assert set(identity.image_hashes) == {"img/instagram_logo.png", "favicon.png"}
    assert brand_identity(lxml.html.fromstring(PAGE), None).image_hashes == {}


def test_image_bounds_are_counted_when_hit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = saved_page(tmp_path / "kit")
    root = lxml.html.fromstring(page.read_bytes())
    monkeypatch.setattr(brand, "MAX_IMAGES", 1)
    assert brand_identity(root, page.parent).limits_hit == {"images": 1}
    monkeypatch.setattr(brand, "MAX_IMAGES", 24)
    monkeypatch.setattr(brand, "MAX_IMAGE_BYTES", 10)
    limited = brand_identity(root, page.parent)
    assert limited.image_hashes == {} and limited.limits_hit == {"image_bytes": 2}
    monkeypatch.setattr(brand, "MAX_IMAGE_BYTES", 2_000_000)
    monkeypatch.setattr(brand, "MAX_IMAGE_PIXELS", 32 * 32 - 1)
    limited = brand_identity(root, page.parent)
    assert limited.image_hashes == {} and limited.limits_hit == {"image_pixels": 2}


def test_a_logo_resized_keeps_its_hash_and_another_picture_does_not() -> None:
    original = difference_hash(logo(64))
    larger = io.BytesIO()
    Image.open(io.BytesIO(logo(64))).resize((200, 200)).save(larger, format="PNG")
    resized = difference_hash(larger.getvalue())
    stripes = Image.new("RGB", (64, 64), "white")
    draw = ImageDraw.Draw(stripes)
    for left in range(0, 64, 16):
        draw.rectangle([left, 0, left + 7, 63], fill="black")
    drawn = io.BytesIO()
    stripes.save(drawn, format="PNG")
    other = difference_hash(drawn.getvalue())
    blank = io.BytesIO()
    Image.new("RGB", (40, 40), "white").save(blank, format="PNG")
    assert original is not None and resized is not None and other is not None
    assert (original ^ resized).bit_count() <= 4
    assert (original ^ other).bit_count() > brand.IMAGE_HASH_DISTANCE
    assert difference_hash(blank.getvalue()) is None  # no edges: identifies nothing
    assert difference_hash(b"not an image") is None


def identity(*words: str, places: tuple[str, ...] = ("title",)) -> BrandIdentity:
    return BrandIdentity({word: places for word in words})


def test_a_word_every_reference_shares_weighs_nothing() -> None:
    references = [
        identity("login", "password", "instagram"),
        identity("login", "password", "facebook"),
        identity("login", "password", "linkedin"),
        identity("login", "password", "paypal"),
    ]
    rarity = BrandRarity()
    for reference in references:
        rarity.add(reference)
    assert rarity.weight("login") == 0.0 and rarity.weight("password") == 0.0
    assert rarity.weight("instagram") == 1.0
    assert rarity.weight("other") == 1.0  # in no reference: it cannot be shared with one
    query = identity("login", "password", "instagram")
    scores = [brand_similarity(query, reference, rarity) for reference in references]
    assert [score.score if score else None for score in scores] == pytest.approx(
        [1.0, 0.0, 0.0, 0.0]
    )
    generic_only = brand_similarity(identity("login", "password"), references[0], rarity)
    assert generic_only is not None and generic_only.score == 0.0
    assert generic_only.explain() == "no brand feature shared"
    # without references to weigh against, every word counts
    assert brand_similarity(identity("login"), references[1]) is not None


def test_the_explanation_names_the_words_their_places_and_the_image_distance() -> None:
    page = BrandIdentity(
        {"instagram": ("alt", "image file", "title"), "login": ("class/id",)},
        {"logo.png": 0x0F0F_0F0F_0F0F_0F0F},
    )
    reference = BrandIdentity({"instagram": ("title",)}, {"ig.png": 0x0F0F_0F0F_0F0F_0F1F})
    score = brand_similarity(page, reference)
    assert score is not None and score.score > 0.9
    assert score.explain() == (
        "brand words: instagram (alt, image file, title); image hash distance 1"
    )
    assert BrandIdentity.from_dict(page.to_dict()) == page


def identity_of(html: bytes) -> BrandIdentity:
    """Return the brand identity of a page given as HTML (no folder: no image read)."""
    return brand_identity(lxml.html.fromstring(html))


def test_a_page_names_its_brand_by_a_title_word_that_stands_in_its_addresses() -> None:
    identity = identity_of(
        b"<html><head><title>Storm in Acme county - Zenith</title>"
        b'<link rel="icon" href="https://static.zenith.example/favicon.ico"></head><body>'
        b'<svg><title>Share on Nimbus</title></svg><a href="https://nimbus.example/">n</a>'
        b'<img src="img/acme-map.png" alt="map"></body></html>'
    )
    assert "title" not in identity.words["nimbus"]  # an SVG icon's title is not the page's
    # zenith (title, favicon host) and acme (title, image file) name it; storm is a headline word
    assert brand.names(identity) == {"zenith", "acme"}
    rarity = BrandRarity()
    for _ in range(4):
        rarity.add(identity)
    rarity.add(BrandIdentity({"other": ("title", "link host")}))
    assert rarity.name_weight("zenith") < brand.NAME_RARITY <= rarity.name_weight("other")


def test_host_words_leave_out_the_public_suffix_and_two_letter_subdomains() -> None:
    identity = identity_of(
        b"<html><head><title>Log in | Acme</title></head><body>"
        b'<a href="https://in.acme.co.uk/help">help</a><a href="https://news.nimbus.in/">n</a>'
        b'<a href="https://bn-in.acme.co.uk/">bn</a>'
        b'<form action="https://login.acme.com.br/session"></form></body></html>'
    )
    assert identity.words["acme"] == ("form host", "link host", "title")
    assert identity.words["nimbus"] == ("link host",)
    assert identity.words["news"] == ("link host",)  # a subdomain of three letters or more
    # "in" is the title's word only: the .in suffix and the in. and bn-in. subdomains name no one
    assert identity.words["in"] == ("title",)
    assert not {"co", "uk", "br"} & identity.words.keys()
    assert brand.names(identity) == {"acme", "login"}


def test_only_a_logo_or_favicon_file_name_names_a_brand_not_its_folders_or_styles() -> None:
    # a page saved by a browser keeps its files in "<title>_files/": its title again
    identity = identity_of(
        b"<html><head><title>Login - Zenith</title>"
        b'<link rel="stylesheet" href="Login_files/zenith.css">'
        b'<link rel="icon" href="Login_files/favicon.ico"></head><body>'
        b'<img src="https://cdn.example/images/login/zenith-logo.png"></body></html>'
    )
    assert identity.words["login"] == ("asset path", "title")  # folders only
    assert identity.words["zenith"] == ("asset path", "image file", "title")
    assert brand.names(identity) == {"zenith"}  # by its logo file, not its stylesheet


def test_a_two_letter_name_counts_in_the_title_and_hosts_only() -> None:
    identity = identity_of(
        b'<html><head><title>Log in | VK</title></head><body class="vk-ui">'
        b'<img src="img/vk.png" alt="VK"><a href="https://m.vk.com/join">Join</a></body></html>'
    )
    assert identity.words["vk"] == ("link host", "title")  # not the alt text, class or file
    assert brand.names(identity) == {"vk"}
    assert "vk" not in brand.brand_words("VK logo.png")
