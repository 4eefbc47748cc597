"""The clusters report: the JSON document and a self-contained HTML page built from a result.

The JSON file is written in pieces (``report_chunks``): a million pages' report is never one
string, yet its text is the one ``json.dumps(build_report(result), indent=2)`` gives.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from websim_crawler.core.clustering.job import ClusteringResult
from websim_crawler.core.io import atomic_write_pair, atomic_writer
from websim_crawler.core.urls import is_http_url

MEMBERSHIP_DIGITS = 6
WEIGHT_DIGITS = 6
# The HTML page lists at most this many members per cluster and plots at most this many points.
HTML_MEMBERS_PER_CLUSTER = 200
HTML_MAX_POINTS = 5000
_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_GOLDEN_ANGLE = 137.50776405  # degrees: 360 * (1 - 1/phi)
_LIGHTNESSES = (40, 55, 70)


def _json_number(value: Any) -> Any:
    """Return ``value`` as a JSON-safe number (NaN and infinities become null)."""
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def build_report(result: ClusteringResult) -> dict[str, Any]:
    """Return the report as JSON-safe data: params, validity, clusters, documents, input."""
    labels = result.labels
    membership = result.membership
    clusters = []
    for cluster in range(result.n_clusters):
        members = np.flatnonzero(labels == cluster)
        members = members[np.argsort(-membership[members, cluster], kind="stable")]
        clusters.append(
            {
                "id": cluster,
                "size": len(members),
                "top_keywords": [
                    {
                        "term": keyword.term,
                        "stem": keyword.stem,
                        "weight": round(keyword.weight, WEIGHT_DIGITS),
                    }
                    for keyword in result.top_keywords[cluster]
                ],
                "members": [result.urls[i] for i in members],
            }
        )
    documents = [
        {
            "url": url,
            "title": result.titles[row],
            "cluster": int(labels[row]),
            "memberships": [round(float(u), MEMBERSHIP_DIGITS) for u in membership[row]],
        }
        for row, url in enumerate(result.urls)
    ]
    validity: dict[str, Any] = {key: _json_number(value) for key, value in result.validity.items()}
    if result.candidates:
        validity["candidates"] = [
            {
                "n_clusters": score.n_clusters,
                "partition_coefficient": _json_number(score.partition_coefficient),
                "partition_entropy": _json_number(score.partition_entropy),
                "xie_beni": _json_number(score.xie_beni),
                "xie_beni_median": _json_number(score.xie_beni_median),
                "objective": _json_number(score.objective),
            }
            for score in result.candidates
        ]
        validity["chosen_by"] = result.params.validity_index
    params = result.params.to_dict()
    params["n_clusters"] = result.n_clusters
    params["n_clusters_requested"] = result.n_clusters_requested
    report = result.input_report
    return {
        "params": params,
        "validity": validity,
        "clusters": clusters,
        "documents": documents,
        "input": {
            "pages": report.pages,
            "clustered": len(result.urls),
            "skipped": dict(sorted(report.skipped.items())),
            "notes": list(report.notes),
        },
    }


# Documents of the report turned into text at a time.
DOCUMENTS_PER_CHUNK = 2000


def write_report(
    path: str | os.PathLike[str],
    result: ClusteringResult,
    html_path: str | os.PathLike[str] | None = None,
    html_text: str = "",
) -> None:
    """Write the JSON report (streamed) and, when ``html_path`` is given, the HTML page with it
    as one atomic pair."""
    if html_path is None:
        with atomic_writer(path) as handle:
            handle.writelines(report_chunks(result))
    else:
        atomic_write_pair((path, "".join(report_chunks(result))), (html_path, html_text))


def report_chunks(result: ClusteringResult) -> Iterator[str]:
    """Yield the text of ``json.dumps(build_report(result), ensure_ascii=False, indent=2)``
    plus a newline, in pieces: the clusters' members and the documents a chunk at a time."""
    labels = result.labels
    small_parts = dataclasses.replace(result, urls=(), titles=(), membership=result.membership[:0])
    report = build_report(small_parts)  # everything but the pages: params, validity, input
    report["input"]["clustered"] = len(result.urls)
    yield "{"
    for position, (key, value) in enumerate(report.items()):
        yield ("," if position else "") + f"\n  {_json(key)}: "
        if key == "clusters" and value:
            yield "["
            for cluster, summary in enumerate(value):
                yield from _cluster_chunks(result, labels, cluster, summary)
            yield "\n  ]"
        elif key == "documents" and result.urls:
            yield "["
            for start in range(0, len(result.urls), DOCUMENTS_PER_CHUNK):
                yield _documents_text(result, labels, start, start + DOCUMENTS_PER_CHUNK)
            yield "\n  ]"
        else:
            yield _indented(value, 1)
    yield "\n}\n"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _indented(value: Any, level: int) -> str:
    """Return ``value`` as ``json.dumps(indent=2)`` writes it ``level`` levels deep."""
    return json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n" + "  " * level)


def _cluster_chunks(
    result: ClusteringResult, labels: NDArray[np.intp], cluster: int, summary: dict[str, Any]
) -> Iterator[str]:
    """Yield one cluster of the ``clusters`` list, its members a chunk at a time."""
    members = np.flatnonzero(labels == cluster)
    members = members[np.argsort(-result.membership[members, cluster], kind="stable")]
    head = {key: value for key, value in summary.items() if key != "members"}
    head["size"] = len(members)
    opening = _indented(head, 2)[: -len("\n    }")]  # the members go before the closing brace
    yield ("," if cluster else "") + "\n    " + opening + ',\n      "members": '
    if not len(members):
        yield "[]\n    }"
        return
    yield "["
    for start in range(0, len(members), DOCUMENTS_PER_CHUNK):
        chunk = members[start : start + DOCUMENTS_PER_CHUNK].tolist()
        yield ("," if start else "") + ",".join(
            "\n        " + _json(result.urls[row]) for row in chunk
        )
    yield "\n      ]\n    }"


def _documents_text(
    result: ClusteringResult, labels: NDArray[np.intp], start: int, end: int
) -> str:
    """Return the documents ``start``..``end`` of the ``documents`` list as text."""
    rows = result.membership[start:end]
    # json writes a finite float as its repr, and NaN/Infinity by name
    number = repr if np.isfinite(rows).all() else _json
    parts = []
    for offset, memberships in enumerate(rows.tolist()):
        row = start + offset
        numbers = ",".join("\n        " + number(round(u, MEMBERSHIP_DIGITS)) for u in memberships)
        parts.append(
            f'{"," if row else ""}\n    {{\n      "url": {_json(result.urls[row])},'
            f'\n      "title": {_json(result.titles[row])},'
            f'\n      "cluster": {int(labels[row])},'
            f'\n      "memberships": [{numbers}\n      ]\n    }}'
        )
    return "".join(parts)


def render_html(result: ClusteringResult, title: str = "websim clusters") -> str:
    """Return a self-contained HTML page: summary, a 2-D map (inline SVG) and every cluster."""
    report = build_report(result)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>",
        "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}",
        "table{border-collapse:collapse}td,th{padding:.2em .6em;text-align:left}",
        ".bar{display:inline-block;height:.8em}.kw{color:#555}.swatch{display:inline-block;",
        "width:.9em;height:.9em;border-radius:50%;vertical-align:middle;margin-right:.3em}",
        "section{margin-top:1.5em}ol{margin:.3em 0}.note{color:#a40}",
        "</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        _summary_html(report),
    ]
    if result.n_clusters:
        parts.append(_map_svg(result))
        parts.append(_sizes_html(report))
        parts.extend(_cluster_html(result, cluster) for cluster in report["clusters"])
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _summary_html(report: dict[str, Any]) -> str:
    params, validity, source = report["params"], report["validity"], report["input"]
    rows = [
        ("pages offered", source["pages"]),
        ("pages clustered", source["clustered"]),
        ("clusters", params["n_clusters"]),
        ("clusters asked for", params["n_clusters_requested"]),
        ("fuzziness m", params["fuzziness"]),
        ("metric", params["metric"]),
        ("LSA dimensions", params["svd_components"] or "none"),
    ]
    for name in ("partition_coefficient", "partition_entropy", "xie_beni", "n_iter"):
        if name in validity:
            value = validity[name]
            if value is None:
                shown: Any = "n/a"
            else:
                shown = f"{value:.4g}" if isinstance(value, float) else value
            rows.append((name.replace("_", " "), shown))
    rows.extend((f"skipped: {reason}", count) for reason, count in source["skipped"].items())
    table = "".join(
        f"<tr><th>{html.escape(str(name))}</th><td>{html.escape(str(value))}</td></tr>"
        for name, value in rows
    )
    notes = "".join(f'<p class="note">{html.escape(note)}</p>' for note in source["notes"])
    return f"<table>{table}</table>{notes}"


def _colour(cluster: int) -> str:
    """Return a cluster's colour: the ten of the palette, then hues a golden angle apart.

    Hues 137.5 degrees apart never repeat and each new one falls in the widest gap left; three
    lightnesses in turn keep neighbouring hues apart as well.
    """
    if cluster < len(_PALETTE):
        return _PALETTE[cluster]
    hue = (cluster * _GOLDEN_ANGLE) % 360
    return f"hsl({hue:.1f},70%,{_LIGHTNESSES[cluster % len(_LIGHTNESSES)]}%)"


def _map_svg(result: ClusteringResult, width: int = 640, height: int = 420) -> str:
    positions = result.positions
    rows = np.arange(len(result.urls))
    if len(rows) > HTML_MAX_POINTS:
        rows = np.random.default_rng(0).choice(rows, HTML_MAX_POINTS, replace=False)
    margin = 12.0
    low, high = positions.min(axis=0), positions.max(axis=0)
    span = np.where(high - low > 0, high - low, 1.0)
    scaled_x = margin + (positions[:, 0] - low[0]) / span[0] * (width - 2 * margin)
    scaled_y = margin + (positions[:, 1] - low[1]) / span[1] * (height - 2 * margin)
    labels = result.labels
    strength = result.membership.max(axis=1)
    circles = []
    for row in rows:
        url = html.escape(result.titles[row] or result.urls[row])
        circles.append(
            f'<circle cx="{scaled_x[row]:.1f}" cy="{scaled_y[row]:.1f}" r="4" '
            f'fill="{_colour(int(labels[row]))}" fill-opacity="{0.25 + 0.75 * strength[row]:.2f}">'
            f"<title>{url} (cluster {int(labels[row])}, membership {strength[row]:.2f})</title>"
            "</circle>"
        )
    caption = (
        "Each dot is a page, placed by its projection on the two main axes of the cluster "
        "centres, coloured by its cluster; paler dots have a weaker largest membership."
    )
    if len(rows) < len(result.urls):
        caption += f" {len(rows)} of {len(result.urls)} pages are drawn."
    return (
        "<section><h2>Map of the pages</h2>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" style="border:1px solid #ccc">'
        + "".join(circles)
        + f"</svg><p>{html.escape(caption)}</p></section>"
    )


def _sizes_html(report: dict[str, Any]) -> str:
    largest = max((cluster["size"] for cluster in report["clusters"]), default=1) or 1
    rows = []
    for cluster in report["clusters"]:
        keywords = ", ".join(keyword["term"] for keyword in cluster["top_keywords"][:5])
        bar_width = 20 * cluster["size"] / largest
        rows.append(
            f'<tr><td><a href="#cluster-{cluster["id"]}">'
            f'<span class="swatch" style="background:{_colour(cluster["id"])}"></span>'
            f"cluster {cluster['id']}</a></td><td>{cluster['size']}</td>"
            f'<td><span class="bar" style="width:{bar_width:.1f}em;'
            f'background:{_colour(cluster["id"])}"></span></td>'
            f'<td class="kw">{html.escape(keywords)}</td></tr>'
        )
    return (
        "<section><h2>Cluster sizes</h2><table><tr><th>cluster</th><th>pages</th><th></th>"
        "<th>top keywords</th></tr>" + "".join(rows) + "</table></section>"
    )


def _cluster_html(result: ClusteringResult, cluster: dict[str, Any]) -> str:
    cluster_id = cluster["id"]
    keywords = ", ".join(
        f"{html.escape(keyword['term'])} ({keyword['weight']:.3f})"
        for keyword in cluster["top_keywords"]
    )
    index_of = {url: row for row, url in enumerate(result.urls)}
    items = []
    for url in cluster["members"][:HTML_MEMBERS_PER_CLUSTER]:
        row = index_of[url]
        membership = result.membership[row, cluster_id]
        escaped = html.escape(url)
        name = html.escape(result.titles[row] or url)
        address = f" <small>{escaped}</small>" if result.titles[row] else ""
        # Only an http(s) URL is a link: a feed's javascript: or data: URL stays plain text.
        shown = f'<a href="{escaped}">{name}</a>' if is_http_url(url) else name
        items.append(f"<li>{shown}{address} <small>{membership:.2f}</small></li>")
    more = len(cluster["members"]) - HTML_MEMBERS_PER_CLUSTER
    tail = f"<p>and {more} more (see the JSON report)</p>" if more > 0 else ""
    return (
        f'<section id="cluster-{cluster_id}"><h2>'
        f'<span class="swatch" style="background:{_colour(cluster_id)}"></span>'
        f"Cluster {cluster_id}: {cluster['size']} page(s)</h2>"
        f'<p class="kw">{keywords or "no keywords"}</p>'
        f"<ol>{''.join(items)}</ol>{tail}</section>"
    )
