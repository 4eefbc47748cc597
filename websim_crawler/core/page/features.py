"""The paper's chunk features: HLp, Ns, T_K, K_f, PF_r and the chunk weight Cw (VDEC)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from websim_crawler.core.page.params import AnalysisParams


def hyperlink_percentage(n_link_keywords: int, n_keywords: int) -> float:
    """HLp = n_l / N (VDEC step 3); a chunk of link text only counts as 1."""
    if n_keywords == 0:
        return 1.0 if n_link_keywords else 0.0
    return min(1.0, n_link_keywords / n_keywords)


def noise_score(n_images: int, page_images: int) -> float:
    """Ns = n_I / N_B: the chunk's share of the page's images (VDEC step 3)."""
    return n_images / page_images if page_images else 0.0


def title_word_relevancy(chunk_keywords: Mapping[str, int], title_keywords: Sequence[str]) -> float:
    """T_K = sum of the frequencies of the title's keywords in the chunk / number of them."""
    if not title_keywords:
        return 0.0
    found = [chunk_keywords[term] for term in title_keywords if term in chunk_keywords]
    return sum(found) / len(title_keywords)


def keyword_frequency_score(chunk_keywords: Counter[str], top_k: int) -> float:
    """K_f = sum of the frequencies of the chunk's top-K keywords / its number of keywords."""
    counts = chunk_keywords.values()
    total = sum(counts)
    if total == 0:
        return 0.0
    if len(counts) <= top_k:
        return 1.0  # every keyword is a top one
    return sum(sorted(counts, reverse=True)[:top_k]) / total


def position_feature(position_ratio: float, threshold: float) -> int:
    """PF_r = 1 when the position ratio T is at or above the threshold, else 0."""
    return 1 if position_ratio >= threshold else 0


def chunk_weight(
    relevancy: float, frequency: float, position: int, params: AnalysisParams
) -> float:
    """Cw = alpha*T_K + beta*K_f + gamma*PF_r (VDEC main-chunk weighting)."""
    return (
        params.title_weight * relevancy
        + params.frequency_weight * frequency
        + params.position_weight * position
    )
