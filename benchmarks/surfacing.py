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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.hidden_databases import (
    HiddenDatabaseSite,
    gallery,
    generic_queries,
    random_queries,
)
from support.surfacing_driver import surface

from websim_crawler.core.surfacing import QueryPlanner, SurfacingParams, coverage_png


def reached_ids(site: HiddenDatabaseSite, planner: QueryPlanner) -> set[str]:
    return {site.record_id_of(key) for key in planner._records} - {None}


def curve(site: HiddenDatabaseSite, planner: QueryPlanner) -> list[tuple[float, float]]:
    """Return (queries asked, coverage) after each query."""
    seen: set[str] = set()
    points = [(0.0, 0.0)]
    for number, query in enumerate(planner._order, start=1):
        asked = planner._asked[query]
        keys = [key for key, index in planner._records.items() if index in asked.records]
        seen |= {site.record_id_of(key) for key in keys} - {None}
        points.append((float(number), len(seen) / len(site.records)))
    return points


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
            picture = coverage_png(
                {
                    name: curve(site, planner)
                    for name, planner in (("auto", auto), ("generic", generic), ("random", random))
                },
                title=f"{spec.name}: share of the {len(site.records)} records reached",
                x_label="queries",
                y_max=1.0,
            )
            (arguments.out / f"{spec.name}.png").write_bytes(picture)
    print(f"curves: {arguments.out}/*.png")


if __name__ == "__main__":
    main()
