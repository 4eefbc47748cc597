"""The coverage curve of a surfacing crawl as a picture: records reached against requests.

Pure: takes the curves' points and returns PNG bytes (Pillow, no plotting library), so a crawl
can leave the picture beside its stats and the benchmark can compare strategies on one plot.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from PIL import Image, ImageDraw

_WIDTH, _HEIGHT, _MARGIN = 640, 400, 56
_COLOURS = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189))
_BAND = (225, 225, 240)


def coverage_png(
    curves: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: str,
    y_max: float,
    estimate: tuple[float, float, float] | None = None,
) -> bytes:
    """Draw each named curve (``(x, y)`` points) on one plot; ``estimate`` (size, low, high)
    is drawn as a line in a shaded band. Return the PNG's bytes."""
    x_max = max((x for points in curves.values() for x, _ in points), default=1.0) or 1.0
    y_top = max(y_max, estimate[2] if estimate else 0.0, 1.0)
    image = Image.new("RGB", (_WIDTH, _HEIGHT), "white")
    pen = ImageDraw.Draw(image)

    def at(x: float, y: float) -> tuple[float, float]:
        return (
            _MARGIN + x / x_max * (_WIDTH - 2 * _MARGIN),
            _HEIGHT - _MARGIN - y / y_top * (_HEIGHT - 2 * _MARGIN),
        )

    if estimate is not None:
        size, low, high = estimate
        pen.rectangle((*at(0, high), *at(x_max, low)), fill=_BAND)
        pen.line((*at(0, size), *at(x_max, size)), fill=(120, 120, 160), width=1)
        pen.text((at(0, size)[0] + 4, at(0, size)[1] - 12), f"estimate {size:g}", fill="black")
    pen.rectangle((_MARGIN, _MARGIN, _WIDTH - _MARGIN, _HEIGHT - _MARGIN), outline="black")
    for step in range(5):
        value = y_top * step / 4
        y = at(0, value)[1]
        pen.text((4, y - 6), f"{value:.3g}", fill="black")
        pen.text(
            (at(x_max * step / 4, 0)[0] - 8, _HEIGHT - _MARGIN + 4),
            f"{x_max * step / 4:.0f}",
            fill="black",
        )
    pen.text((_MARGIN, 16), title, fill="black")
    pen.text((_WIDTH - _MARGIN - 6 * len(x_label), _HEIGHT - 20), x_label, fill="black")
    for number, (name, points) in enumerate(curves.items()):
        colour = _COLOURS[number % len(_COLOURS)]
        if len(points) > 1:
            pen.line([at(x, y) for x, y in points], fill=colour, width=2)
        pen.text((_MARGIN + 8 + 100 * number, 34), name, fill=colour)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
