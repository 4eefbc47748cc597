"""Pages a crawl refused for their own bounds, told apart from pages deferred under its pressure.

A bound that a page breaks by itself (its bytes, elements, memory, analysis time, a navigation
off the crawled site) refuses the page; a bound the crawl's concurrency trips (the browser's
total memory) only defers it, and the page is tried again with fewer pages beside it. The
end-of-crawl line names both, so a user sees which pages are missing for what they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OWN_BOUND_REASONS = frozenset(
    {"too_large", "too_many_elements", "analysis_timeout", "render_memory", "offsite_navigation"}
)
_COUNTED_UNDER = ("websim/pages/dropped/", "websim/pages/failed/")
PRESSURE_STATS = (
    ("deferred", "websim/render/deferred"),
    ("retried", "websim/render/retried"),
    ("retried alone", "websim/render/retried_alone"),
    ("analyses tried again past the wall-time backstop", "websim/analysis/deferred"),
    ("analyses retried alone", "websim/analysis/retried_alone"),
)
URLS_SHOWN = 3  # URLs named per reason


class RefusedUrls:
    """The first ``URLS_SHOWN`` URLs refused for each own-bound reason (bounded memory)."""

    def __init__(self) -> None:
        self.by_reason: dict[str, list[str]] = {}

    def note(self, reason: str, url: str | None) -> None:
        """Keep ``url`` when ``reason`` is an own bound and fewer were kept for it."""
        if reason not in OWN_BOUND_REASONS or not url:
            return
        kept = self.by_reason.setdefault(reason, [])
        if len(kept) < URLS_SHOWN and url not in kept:
            kept.append(url)


def refused_counts(stats: Mapping[str, Any]) -> dict[str, int]:
    """Return the pages refused for their own bounds, by reason, from a crawl's stats."""
    counts: dict[str, int] = {}
    for key, value in stats.items():
        for prefix in _COUNTED_UNDER:
            reason = key[len(prefix) :]
            if key.startswith(prefix) and reason in OWN_BOUND_REASONS and value:
                counts[reason] = counts.get(reason, 0) + int(value)
    return counts


def refusal_summary(stats: Mapping[str, Any], refused: RefusedUrls) -> str | None:
    """Return one line: pages refused for their own bounds (by reason, with their first URLs)
    and pages deferred and retried under the crawl's pressure; ``None`` when neither."""
    counts = refused_counts(stats)
    pressure = [f"{stats[key]} {name}" for name, key in PRESSURE_STATS if stats.get(key)]
    if not counts and not pressure:
        return None
    parts = []
    if counts:
        reasons = []
        for reason, count in sorted(counts.items()):
            named = refused.by_reason.get(reason, [])
            listed = ", ".join(named) + (", ..." if count > len(named) else "")
            reasons.append(f"{count} {reason}" + (f" ({listed})" if named else ""))
        parts.append(f"{sum(counts.values())} refused for their own bounds: " + "; ".join(reasons))
    if pressure:
        parts.append("under the crawl's shared pressure: " + ", ".join(pressure))
    return "pages " + "; ".join(parts)
