"""Login pages as a phishing toolkit makes them: one skeleton for every brand, the brand's own
part pasted in (or a brand's own page, made without the toolkit)."""

from __future__ import annotations

GENERIC_FORM = '<input name="email"><input name="password" type="password"><button>Log in</button>'


def kit_page(kit: str, brand: str, fields: int = 6) -> str:
    """Return a login page of ``brand`` in ``kit``'s skeleton: the kit's nested boxes and class
    names around a short part of the brand's own (its form and class names)."""
    rows = "".join(
        f'<div class="{kit}-row"><span class="{kit}-label">field</span>'
        f'<div class="{kit}-cell"><p class="{kit}-hint">hint</p></div></div>'
        for _ in range(fields)
    )
    return (
        f"<html><head><title>Sign in</title></head><body>"
        f'<div class="{kit}-wrap"><div class="{kit}-card"><div class="{kit}-head">'
        f'<span class="{kit}-mark">account</span></div>{rows}'
        f"{brand_part(brand)}"
        f'<div class="{kit}-foot"><ul class="{kit}-menu"><li>help</li><li>terms</li></ul></div>'
        f"</div></div></body></html>"
    )


def brand_part(brand: str) -> str:
    """Return the brand's own part of its login page: its form with its class names."""
    return (
        f'<form class="{brand}-login"><label class="{brand}-field">{GENERIC_FORM}</label>'
        f'<section class="{brand}-notice"><em class="{brand}-fine">terms</em></section></form>'
    )


def own_page(brand: str) -> str:
    """Return a brand's own login page (no toolkit): its own boxes around its own part."""
    return (
        f"<html><head><title>Sign in</title></head><body>"
        f'<main class="{brand}-main"><header class="{brand}-top"><b>account</b></header>'
        f"{brand_part(brand)}</main></body></html>"
    )
