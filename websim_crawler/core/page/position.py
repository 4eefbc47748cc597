"""The position ratio T of a chunk, from its rendered box or its span in the page's text."""

from __future__ import annotations


def interval_position_ratio(start: int, end: int, total: int, margin: float) -> float:
    """DOM proxy of T: share of the chunk's text inside the central band of the page's text."""
    if end <= start or total <= 0:
        return 0.0
    low, high = margin * total, (1.0 - margin) * total
    return max(0.0, min(end, high) - max(start, low)) / (end - start)


def box_position_ratio(
    box: tuple[float, float, float, float], page: tuple[float, float], margin: float
) -> float:
    """Geometric T: share of the chunk's rendered area inside the page's central region."""
    x, y, width, height = box
    page_width, page_height = page
    if width <= 0 or height <= 0 or page_width <= 0 or page_height <= 0:
        return 0.0
    left, right = margin * page_width, (1.0 - margin) * page_width
    top, bottom = margin * page_height, (1.0 - margin) * page_height
    overlap_x = max(0.0, min(x + width, right) - max(x, left))
    overlap_y = max(0.0, min(y + height, bottom) - max(y, top))
    return (overlap_x * overlap_y) / (width * height)
