"""Surfacing the gallery's hidden databases: coverage against queries for the crawl's own choice
(auto), the most frequent words of the language (generic, stop words removed) and random
dictionary words (random), with the size estimate; the curves as one PNG per database.

The core's decisions are driven over HTTP on loopback (tests/support/surfacing_driver.py, the
spider's calls without Scrapy); held-out databases (not tuned on) are marked.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/surfacing.py [--queries 100] [--out bench-out]

``--headroom K`` asks instead what the crawl's choice of words leaves on the sites that show
only the first 20 matches: from the crawl's own state after K queries, the rest of the budget
spent by the crawl, by a chooser told how many unseen records hold each word it knows (what the
site's count says only once the word is asked), and by an oracle that knows every answer.

``--seeds N`` measures the sites that show only the first 20 matches on N other draws of their
records (the same site with records chosen and ordered by seeds 7, 11, 13, ...: the first N
primes from 7): mean, lowest and highest coverage at the budget. One draw moves by a record or
five with any change to the crawl, so a change is judged on these means.

``--intervals N`` measures the size estimate on every database the driver surfaces, over N
draws each: how often its 95 % interval held the true size after 10-30, 40-70 and 80 or more
queries and at the end, and its size over the truth at the end; beside it, Chao's estimate
alone (the one used before the jackknife joined it), from the same crawls. The estimator was
chosen on the first 8 draws; ``--intervals 8 --held-out`` measures it on the next 8.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.hidden_databases import (
    HiddenDatabaseSite,
    gallery,
    generic_queries,
    random_queries,
)
from support.surfacing_driver import surface

from websim_crawler.core.surfacing import (
    QueryPlanner,
    SizeEstimate,
    SurfacingParams,
    chao_estimate,
    coverage_png,
)


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


def listed(site: HiddenDatabaseSite, term: str, limit: int) -> set[int]:
    """Return the positions of the records the site shows for ``term`` (its first ``limit``)."""
    order = sorted(site.index[term], reverse=site.spec.listed == "newest")
    return set(order[:limit])


def told_unseen_counts(site: HiddenDatabaseSite, reached: set[int], term: str, limit: int) -> float:
    """Return the unseen records ``term`` shows, were the chooser told how many unseen records
    hold it: all of them when its answer is whole, else that many times the share of unseen
    records listed before its last shown match (spread evenly: which ones it is not told)."""
    postings = site.index[term]
    unseen_holding = sum(1 for position in postings if position not in reached)
    if unseen_holding == 0 or len(postings) <= limit:
        return float(unseen_holding)
    newest = site.spec.listed == "newest"
    end = sorted(postings, reverse=newest)[limit - 1]
    unseen = [position for position in range(len(site.records)) if position not in reached]
    before = sum(1 for position in unseen if (position >= end if newest else position <= end))
    return unseen_holding * before / len(unseen)


def headroom(start: int, budget: int) -> None:
    """Print, per capped-at-20 database, what the budget's last queries reach three ways."""
    print(f"| database | after {start} queries | crawl at {budget} | told unseen counts | oracle |")
    print("|---|---:|---:|---:|---:|")
    for spec in gallery():
        if spec.form != "simple" or spec.cap != 20:
            continue
        with HiddenDatabaseSite(dataclasses.replace(spec, entrance="form")) as site:
            early = surface(site.url, params=SurfacingParams(max_queries=start))
            crawl = surface(site.url, params=SurfacingParams(max_queries=budget))
        position = {record.id: index for index, record in enumerate(site.records)}
        reached = {position[found] for found in reached_ids(site, early)}
        known = [word for word in early._terms if word in site.index and word not in site.stops]
        reach = {}
        for name in ("told", "oracle"):
            held, words = set(reached), list(known)
            for _ in range(budget - start):
                if name == "told":
                    word = max(words, key=lambda w: told_unseen_counts(site, held, w, spec.cap))
                else:
                    word = max(words, key=lambda w: len(listed(site, w, spec.cap) - held))
                held |= listed(site, word, spec.cap)
                words.remove(word)
            reach[name] = len(held)
        print(
            f"| {spec.name} | {len(reached)} | {len(reached_ids(site, crawl))} | "
            f"{reach['told']} | {reach['oracle']} |"
        )


def draw_seeds(draws: int, skip: int = 0) -> list[int]:
    """Return the seeds of ``draws`` draws of a database's records: the primes from 7, the first
    ``skip`` of them left out."""
    primes = (n for n in itertools.count(7) if all(n % d for d in range(2, math.isqrt(n) + 1)))
    return list(itertools.islice(primes, skip, skip + draws))


def seeded(draws: int, budget: int) -> None:
    """Print, per capped-at-20 database, coverage at ``budget`` over ``draws`` seeded draws."""
    seeds = draw_seeds(draws)
    print(f"seeds: {', '.join(map(str, seeds))}; {budget} queries")
    print("| database | mean | lowest | highest | draws at 0.95 or more |")
    print("|---|---:|---:|---:|---:|")
    for spec in gallery():
        if spec.form != "simple" or spec.cap != 20:
            continue
        shares = []
        for seed in seeds:
            draw = dataclasses.replace(spec, entrance="form", seed=seed)
            with HiddenDatabaseSite(draw) as site:
                planner = surface(site.url, params=SurfacingParams(max_queries=budget))
                shares.append(len(reached_ids(site, planner)) / len(site.records))
        print(
            f"| {spec.name} | {statistics.mean(shares):.3f} | {min(shares):.3f} | "
            f"{max(shares):.3f} | {sum(share >= 0.95 for share in shares)} of {len(shares)} |"
        )


def estimates_along(events: list[dict[str, Any]]) -> list[tuple[str, SizeEstimate, SizeEstimate]]:
    """Return (phase, the crawl's estimate, Chao's alone) after every 10th answered query and at
    the end, from a crawl's journal replayed up to each point."""
    ends = [number for number, event in enumerate(events) if event["event"] == "finished"]
    points = [
        ("10" if count <= 30 else "40" if count <= 70 else "80", ends[count - 1])
        for count in range(10, len(ends) + 1, 10)
    ]
    points.append(("end", len(events) - 1))
    found = []
    for phase, last in points:
        planner = QueryPlanner()
        planner.replay(events[: last + 1])
        found.append((phase, planner.estimate(), chao_estimate(planner._captures)))
    return found


PHASES = {"10": "10-30 queries", "40": "40-70", "80": "80-100", "end": "at the end"}


def intervals(draws: int, budget: int, held_out: bool) -> None:
    """Print, per database the driver surfaces, how often the size estimate's interval held the
    truth over ``draws`` draws (``held_out``: the next ``draws``, not those the estimator was
    chosen on), and its size over the truth at the end; Chao's alone beside."""
    seeds = draw_seeds(draws, skip=draws if held_out else 0)
    print(f"seeds: {', '.join(map(str, seeds))}; {budget} queries")
    print(
        "| database | interval holds the truth: " + ", ".join(PHASES.values())
        + " | size / truth at the end | Chao's alone: holds the truth | size / truth |"
    )  # fmt: skip
    print("|---|---|---:|---|---:|")
    for spec in gallery():
        if spec.form != "simple":
            continue
        inside: dict[str, collections.Counter[str]] = {
            "crawl": collections.Counter(),
            "chao": collections.Counter(),
        }
        totals: collections.Counter[str] = collections.Counter()
        ratios: dict[str, list[float]] = {"crawl": [], "chao": []}
        for seed in seeds:
            draw = dataclasses.replace(spec, entrance="form", seed=seed)
            with HiddenDatabaseSite(draw) as site:
                events: list[dict[str, Any]] = []
                surface(site.url, params=SurfacingParams(max_queries=budget), journal=events)
            truth = len(site.records)
            for phase, crawl, chao in estimates_along(events):
                totals[phase] += 1
                for name, estimate in (("crawl", crawl), ("chao", chao)):
                    inside[name][phase] += estimate.low <= truth <= estimate.high
                    if phase == "end":
                        ratios[name].append(estimate.size / truth)
        cells = [
            ", ".join(
                f"{inside[name][phase] / totals[phase]:.2f}" if totals[phase] else "-"
                for phase in PHASES
            )
            + f" | {statistics.mean(ratios[name]):.3f}"
            for name in ("crawl", "chao")
        ]
        print(f"| {spec.name} | {cells[0]} | {cells[1]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("bench-out/surfacing"))
    parser.add_argument("--headroom", type=int, metavar="K", help="see the module docstring")
    parser.add_argument("--seeds", type=int, metavar="N", help="see the module docstring")
    parser.add_argument("--intervals", type=int, metavar="N", help="see the module docstring")
    parser.add_argument("--held-out", action="store_true", help="see the module docstring")
    arguments = parser.parse_args()
    for option in ("seeds", "intervals"):
        draws = getattr(arguments, option)
        if draws is not None and draws < 1:
            parser.error(f"--{option} must be at least 1, not {draws}")
    if arguments.seeds is not None:
        seeded(arguments.seeds, arguments.queries)
        return
    if arguments.intervals is not None:
        intervals(arguments.intervals, arguments.queries, arguments.held_out)
        return
    if arguments.headroom is not None:
        headroom(arguments.headroom, arguments.queries)
        return
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
