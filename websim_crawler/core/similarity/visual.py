"""Visual similarity of screenshots: colour signatures compared by the Earth Mover's Distance.

After Fu, Liu and Deng, "Detecting Phishing Web Pages with Visual Similarity Assessment Based
on Earth Mover's Distance" (2006): resize with Lanczos, degrade ARGB colours by a factor DF, keep
the top-N colours with their pixel centroids and frequencies, and take 1 - EMD^alpha.
"""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass

import numpy as np
import ot
from PIL import Image, UnidentifiedImageError

from websim_crawler.core.similarity.params import SimilarityParams
from websim_crawler.errors import ConfigError, InputFormatError

Image.MAX_IMAGE_PIXELS = 400_000_000  # full-page screenshots are tall; keep a bomb guard
# Larger screenshots are refused from their header, before decoding: decoded (up to 4 bytes a
# pixel) and converted to RGBA (4 more), 64 megapixels take about 512 MB, under the default
# per-page budget (WEBSIM_WORKER_MEMORY_MB, 1,024 MB); Pillow's own guard only warns below
# 2 x MAX_IMAGE_PIXELS (a 95 KB PNG of 784 megapixels took 6.2 GB). A full-page screenshot
# 1,280 pixels wide fits up to 50,000 pixels of height.
MAX_SCREENSHOT_PIXELS = 64_000_000


@dataclass(frozen=True)
class ColourSignature:
    """Top-N degraded ARGB colours, their pixel centroids (x, y) and frequencies (weights)."""

    colours: np.ndarray  # (n, 4) degraded A, R, G, B levels
    centroids: np.ndarray  # (n, 2) x, y in resized pixels
    weights: np.ndarray  # (n,) fraction of pixels
    width: int
    height: int
    degrading_factor: int

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-safe form."""
        return {
            "colours": self.colours.tolist(),
            "centroids": self.centroids.round(4).tolist(),
            "weights": self.weights.round(6).tolist(),
            "width": self.width,
            "height": self.height,
            "degrading_factor": self.degrading_factor,
        }


def load_image(png: bytes) -> Image.Image:
    """Open image bytes as RGBA; raise ``InputFormatError`` when they are not an image or have
    more than ``MAX_SCREENSHOT_PIXELS`` pixels (refused before they are decoded)."""
    if not png:
        raise InputFormatError("the screenshot is empty")
    try:
        with warnings.catch_warnings():  # Pillow's bomb warning: the cap below decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(png))  # reads the header only
        width, height = image.size
        if width * height > MAX_SCREENSHOT_PIXELS:
            raise InputFormatError(
                f"the screenshot has {width:,} x {height:,} pixels, over the cap of "
                f"{MAX_SCREENSHOT_PIXELS:,}: not decoded"
            )
        image.load()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise InputFormatError(f"the screenshot is not a readable image: {exc}") from exc
    return image.convert("RGBA")


def colour_signature(png: bytes, params: SimilarityParams | None = None) -> ColourSignature:
    """Return the colour signature of a screenshot (PNG or any image Pillow reads)."""
    params = params or SimilarityParams()
    width, height, factor = params.visual_width, params.visual_height, params.degrading_factor
    image = load_image(png).resize((width, height), Image.Resampling.LANCZOS)
    pixels = np.asarray(image, dtype=np.int64).reshape(height * width, 4)
    argb = pixels[:, [3, 0, 1, 2]] // factor
    levels = (255 // factor) + 1
    codes = ((argb[:, 0] * levels + argb[:, 1]) * levels + argb[:, 2]) * levels + argb[:, 3]
    unique, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    ys, xs = np.divmod(np.arange(height * width), width)
    sum_x = np.bincount(inverse, weights=xs, minlength=len(unique))
    sum_y = np.bincount(inverse, weights=ys, minlength=len(unique))
    # Most frequent first; ties by colour code so the signature is deterministic.
    order = np.lexsort((unique, -counts))[: params.signature_colours]
    colours = np.stack(
        [
            unique[order] // levels**3,
            unique[order] // levels**2 % levels,
            unique[order] // levels % levels,
            unique[order] % levels,
        ],
        axis=1,
    )
    centroids = np.stack([sum_x[order], sum_y[order]], axis=1) / counts[order, None]
    weights = counts[order] / float(height * width)
    return ColourSignature(colours, centroids, weights, width, height, factor)


def ground_distances(
    first: ColourSignature, second: ColourSignature, colour_weight: float = 0.5
) -> np.ndarray:
    """Return d_ij = a * colour distance / colour-space diagonal + (1 - a) * centroid distance /
    sqrt(w^2 + h^2), each term in [0, 1]."""
    if (first.width, first.height, first.degrading_factor) != (
        second.width,
        second.height,
        second.degrading_factor,
    ):
        raise ConfigError("signatures made with different sizes or degrading factors")
    levels = 255 // first.degrading_factor
    diagonal = math.sqrt(4.0) * levels if levels else 1.0
    colour = np.linalg.norm(
        first.colours[:, None, :].astype(float) - second.colours[None, :, :], axis=2
    )
    position = np.linalg.norm(first.centroids[:, None, :] - second.centroids[None, :, :], axis=2)
    return colour_weight * colour / diagonal + (1.0 - colour_weight) * position / math.hypot(
        first.width, first.height
    )


def earth_movers_distance(
    weights_1: np.ndarray, weights_2: np.ndarray, distances: np.ndarray
) -> float:
    """Return Rubner's EMD with partial matching: the flow moves min(total weights) and
    EMD = sum(f * d) / sum(f) (Rubner, Tomasi and Guibas, "The Earth Mover's Distance", 2000).

    The lighter side gets a dummy bin with the missing mass at zero cost, which makes the
    problem balanced for POT's exact network-simplex solver without changing the optimum.
    """
    first = np.asarray(weights_1, dtype=np.float64)
    second = np.asarray(weights_2, dtype=np.float64)
    cost = np.asarray(distances, dtype=np.float64)
    total_1, total_2 = float(first.sum()), float(second.sum())
    flow_total = min(total_1, total_2)
    if flow_total <= 0.0:
        return 0.0 if total_1 == total_2 else 1.0
    gap = total_1 - total_2
    if gap > 0:
        second = np.append(second, gap)
        cost = np.hstack([cost, np.zeros((cost.shape[0], 1))])
    elif gap < 0:
        first = np.append(first, -gap)
        cost = np.vstack([cost, np.zeros((1, cost.shape[1]))])
    flow = ot.emd(first, second, cost)
    return float(np.sum(flow * cost) / flow_total)


def signature_distance(
    first: ColourSignature, second: ColourSignature, colour_weight: float = 0.5
) -> float:
    """Return the EMD between two colour signatures."""
    return earth_movers_distance(
        first.weights, second.weights, ground_distances(first, second, colour_weight)
    )


def signature_similarity(
    first: ColourSignature, second: ColourSignature, params: SimilarityParams | None = None
) -> float:
    """Return 1 - EMD^alpha of two signatures, clipped to [0, 1]."""
    params = params or SimilarityParams()
    distance = signature_distance(first, second, params.colour_weight)
    return float(min(1.0, max(0.0, 1.0 - distance**params.emd_alpha)))


def visual_similarity(png_a: bytes, png_b: bytes, **params: object) -> float:
    """Return the visual similarity of two screenshots; keyword arguments set SimilarityParams."""
    settings = SimilarityParams(**params)  # type: ignore[arg-type]
    return signature_similarity(
        colour_signature(png_a, settings), colour_signature(png_b, settings), settings
    )
