"""Surfacing the gallery's hidden databases: coverage against queries for the crawl's own choice
(auto), the most frequent words of the language (generic, stop words removed) and random
dictionary words (random), with the size estimate; the curves as one PNG per database.

The core's decisions are driven over HTTP on loopback (tests/support/surfacing_driver.py, the
spider's calls without Scrapy); held-out databases (not tuned on) are marked.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/surfacing.py [--queries 100] [--out bench-out]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.hidden_databases import (
    HiddenDatabaseSite,
    gallery,
    generic_queries,
    random_queries,
)
from support.surfacing_driver import surface

from websim_crawler.core.surfacing import QueryPlanner, SurfacingParams

_COLOURS = {"auto": (31, 119, 180), "generic": (255, 127, 14), "random": (44, 160, 44)}


def reached_ids(site: HiddenDatabaseSite, planner: QueryPlanner) -> set[str]:
    return {site.record_id_of(key) for key in planner._records} - {None}


def curve(site: HiddenDatabaseSite, planner: QueryPlanner) -> list[tuple[int, float]]:
    """Return (queries asked, coverage) after each query."""
    seen: set[str] = set()
    points = [(0, 0.0)]
    for number, query in enumerate(planner._order, start=1):
        asked = planner._asked[query]
        keys = [key for key, index in planner._records.items() if index in asked.records]
        seen |= {site.record_id_of(key) for key in keys} - {None}
        points.append((number, len(seen) / len(site.records)))
    return points


def draw(path: Path, title: str, curves: dict[str, list[tuple[int, float]]], budget: int) -> None:
    """Draw coverage against queries, one line per strategy (Pillow, no plotting library)."""
    width, height, margin = 640, 400, 50
    image = Image.new("RGB", (width, height), "white")
    pen = ImageDraw.Draw(image)
    pen.rectangle((margin, margin, width - margin, height - margin), outline="black")
    for share in (0.25, 0.5, 0.75, 0.95):
        y = height - margin - share * (height - 2 * margin)
        pen.line((margin, y, width - margin, y), fill=(220, 220, 220))
        pen.text((5, y - 6), f"{share:.2f}", fill="black")
    pen.text((margin, 15), title, fill="black")
    pen.text((width - margin - 60, height - margin + 15), f"{budget} queries", fill="black")
    for number, (name, points) in enumerate(curves.items()):
        xy = [
            (
                margin + queries / budget * (width - 2 * margin),
                height - margin - share * (height - 2 * margin),
            )
            for queries, share in points
        ]
        if len(xy) > 1:
            pen.line(xy, fill=_COLOURS[name], width=2)
        pen.text((margin + 10 + 90 * number, height - margin + 15), name, fill=_COLOURS[name])
    image.save(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("bench-out/surfacing"))
    arguments = parser.parse_args()
    arguments.out.mkdir(parents=True, exist_ok=True)
    budget = arguments.queries
    print(
        "| database | held out | auto: coverage (queries, result pages) | generic | random "
        "| auto - generic | estimate (truth) |"
    )
    print("|---|---|---|---|---|---|---|")
    for spec in gallery():
        if spec.form != "simple":
            continue
        with HiddenDatabaseSite(spec) as site:
            if spec.entrance != "form":
                continue  # the driver needs the form on the start page (the spider's tests: rest)
            auto = surface(site.url, params=SurfacingParams(max_queries=budget))
            asked = auto.queries
            generic = surface(site.url, queries=generic_queries(spec.language, asked))
            random = surface(site.url, queries=random_queries(spec.language, asked, 1))
            share = {
                name: len(reached_ids(site, planner)) / len(site.records)
                for name, planner in (("auto", auto), ("generic", generic), ("random", random))
            }
            estimate = auto.estimate()
            print(
                f"| {spec.name} | {'yes' if spec.held_out else 'no'} | {share['auto']:.3f} "
                f"({asked}, {auto.requests}) | {share['generic']:.3f} | {share['random']:.3f} | "
                f"{share['auto'] - share['generic']:+.3f} | {estimate.describe()} "
                f"({len(site.records)}) |"
            )
            draw(
                arguments.out / f"{spec.name}.png",
                f"{spec.name}: records reached / {len(site.records)}",
                {
                    name: curve(site, planner)
                    for name, planner in (("auto", auto), ("generic", generic), ("random", random))
                },
                budget,
            )
    print(f"curves: {arguments.out}/*.png")


if __name__ == "__main__":
    main()
