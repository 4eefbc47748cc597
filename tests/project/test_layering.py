"""Layering (the README's "Where things live": a pure core, thin adapters, rooms by role),
checked both ways.

Downward only: the pure core imports neither Scrapy/Twisted nor any module of the adapter layer
(``config``, ``pipelines``, ``spiders``, ``cli``, ``distributed``, ``frontier``, ``middlewares``
...): from the package it may import only the core itself, ``errors`` and the extras probe
``_imports``. Between rooms: ``ROOMS`` puts every room of the package in one order, lowest first,
and a module imports only its own room and rooms below it (no arrow up, hence no cycle between
rooms); ``CORE_ROOMS`` does the same for the packages and modules inside ``core/``. Inward
through the front door: outside ``core/page/`` the page analysis is imported by the public names
of ``websim_crawler.core.page``. Each rule is checked on the source (every import statement, those
inside functions too) and, for the core, on what importing it actually loads. And no module is
longer than ``MAX_MODULE_LINES``.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import websim_crawler.core
import websim_crawler.core.page as page

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "websim_crawler"
CORE = PACKAGE / "core"
FRAMEWORKS = ("scrapy", "twisted", "scrapy_playwright", "scrapy_redis")
# What the core may import from the package (everything else of it is the adapter layer).
CORE_MAY_IMPORT = (
    "websim_crawler.core",
    "websim_crawler.errors",
    "websim_crawler._imports",
)
PAGE_PACKAGE = "websim_crawler.core.page"
# The rooms of the package (its top-level modules and folders), lowest first: a module may import
# its own room and the rooms before it, never one after it. ``__init__`` is the package module.
ROOMS = (
    "errors",
    "_imports",
    "__init__",  # ``__version__``; its front-door names (``__init__.pyi``) load on first use
    "core",
    "config",  # the one settings door: pure, like the core
    "items",
    "logformatter",
    "frontier",
    "workers",  # the worker pool that runs the page analysis
    "browser",
    "middlewares",
    "extensions",
    "feeds",
    "components",  # which components a crawl runs, by name: the pipelines and spiders ask
    "distributed",
    "pipelines",
    "spiders",
    "archive",  # the WARC writer: a downloader middleware, the spiders pass it -a warc
    "addon",  # all the wiring: the components above, put in a crawl
    "demo",
    "service",  # the match service: the index answering over HTTP (an ASGI app)
    "settings",
    "commands",
    "cli",
    "__main__",
)

# The rooms inside the core (its packages and loose modules), lowest first, the same rule: a core
# module imports its own room and the rooms before it. ``stages`` prepares each page for the
# collection stages, so it comes after them; they name the fields they read in their own
# ``params`` and never import it.
CORE_ROOMS = (
    "__init__",
    "params",
    "urls",
    "io",
    "language_model",
    "text",
    "html",
    "archive",  # web archives: pages read (decoded by the html room's rules), records written
    "page",
    "crawling",
    "surfacing",  # query choice for a hidden database: reads result pages as crawling does
    "clustering",
    "similarity",
    "neardup",
    "reference_index",  # one page against known ones: the similarity stages' features
    "stages",
)


def imported_modules(source: str, module: str) -> Iterator[str]:
    """Yield every module an import statement of ``source`` names (relative ones resolved)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                parent = ".".join([*base, node.module] if node.module else base)
            else:
                parent = node.module or ""
            yield parent
            # ``from websim_crawler.core import text`` imports the module ``core.text``.
            yield from (f"{parent}.{alias.name}" for alias in node.names)


def allowed_in_core(name: str) -> bool:
    """Tell whether the core may import the module ``name``."""
    top = name.split(".")[0]
    if top in FRAMEWORKS:
        return False
    if top != "websim_crawler" or name == "websim_crawler":
        return True
    return any(name == allowed or name.startswith(allowed + ".") for allowed in CORE_MAY_IMPORT)


def core_violations(source: str, module: str) -> list[str]:
    """Return the imports of a core module that reach a framework or the adapter layer."""
    return [name for name in imported_modules(source, module) if not allowed_in_core(name)]


def page_internals_used(source: str, module: str) -> list[str]:
    """Return the ``core.page`` submodules (or private names) a module outside it imports."""
    return sorted(
        name
        for name in set(imported_modules(source, module))
        if name.startswith(PAGE_PACKAGE + ".") and not public_page_name(name)
    )


def public_page_name(name: str) -> bool:
    """Tell whether ``name`` is ``websim_crawler.core.page.<a public name>``.

    (``from websim_crawler.core.page import analyse_page`` yields "...core.page.analyse_page".)
    """
    package, _, last = name.rpartition(".")
    return package == PAGE_PACKAGE and last in page.__all__


def room_of(name: str) -> str:
    """Return the room of the module (or imported name) ``name`` of the package."""
    parts = name.split(".")
    if len(parts) > 1 and ((PACKAGE / parts[1]).is_dir() or (PACKAGE / f"{parts[1]}.py").is_file()):
        return parts[1]
    return "__init__"  # the package itself, or a name it defines (``__version__``)


def arrows_up(source: str, module: str) -> list[str]:
    """Return the imports of ``module`` that reach a room above its own in ``ROOMS``."""
    level = ROOMS.index(room_of(module))
    return [
        name
        for name in imported_modules(source, module)
        if name.split(".")[0] == "websim_crawler" and ROOMS.index(room_of(name)) > level
    ]


def core_room_of(name: str) -> str:
    """Return the room inside the core of the core module (or imported name) ``name``."""
    parts = name.split(".")
    if len(parts) > 2 and ((CORE / parts[2]).is_dir() or (CORE / f"{parts[2]}.py").is_file()):
        return parts[2]
    return "__init__"


def core_arrows_up(source: str, module: str) -> list[str]:
    """Return the imports of the core module ``module`` that reach a core room above its own."""
    level = CORE_ROOMS.index(core_room_of(module))
    return [
        name
        for name in imported_modules(source, module)
        if name.startswith("websim_crawler.core.") and CORE_ROOMS.index(core_room_of(name)) > level
    ]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def python_files(*folders: Path) -> list[Path]:
    return sorted(path for folder in folders for path in folder.rglob("*.py"))


def test_the_checks_catch_what_they_guard() -> None:
    module = "websim_crawler.core.page.analyse"
    assert core_violations("from websim_crawler.config import WebsimConfig", module) == [
        "websim_crawler.config",
        "websim_crawler.config.WebsimConfig",
    ]
    assert core_violations("def f():\n    import scrapy.http\n", module) == ["scrapy.http"]
    assert core_violations("from ...pipelines import analysis", module) == [
        "websim_crawler.pipelines",
        "websim_crawler.pipelines.analysis",
    ]
    assert core_violations("from websim_crawler import reliability", module) == [
        "websim_crawler.reliability"
    ]
    assert core_violations("from websim_crawler.core import text\nimport numpy", module) == []
    assert page_internals_used("from websim_crawler.core.page.chunks import Chunk", "x") == [
        "websim_crawler.core.page.chunks",
        "websim_crawler.core.page.chunks.Chunk",
    ]
    assert page_internals_used("from websim_crawler.core.page import Chunk", "x") == []
    assert page_internals_used("from websim_crawler.core.page import _Hidden", "x") == [
        "websim_crawler.core.page._Hidden"
    ]


def test_the_room_check_catches_an_arrow_up() -> None:
    assert arrows_up("from websim_crawler.pipelines import analysis", "websim_crawler.config") == [
        "websim_crawler.pipelines",
        "websim_crawler.pipelines.analysis",
    ]
    assert arrows_up("import websim_crawler.cli", "websim_crawler.spiders.site") == [
        "websim_crawler.cli"
    ]
    assert arrows_up("def f():\n    from websim_crawler import cli\n", "websim_crawler.feeds") == [
        "websim_crawler.cli"
    ]
    assert (
        arrows_up("from websim_crawler.config import websim_config", "websim_crawler.feeds") == []
    )
    assert arrows_up("from websim_crawler import __version__", "websim_crawler.cli") == []
    assert room_of("websim_crawler.core.page.analyse") == "core"
    assert room_of("websim_crawler") == "__init__"


def test_every_module_is_in_a_declared_room() -> None:
    rooms = {room_of(module_name(path)) for path in python_files(PACKAGE)}
    assert rooms - set(ROOMS) == set()
    assert rooms == set(ROOMS)  # and no declared room is gone


@pytest.mark.parametrize("path", python_files(PACKAGE), ids=lambda path: module_name(path))
def test_a_module_imports_no_room_above_its_own(path: Path) -> None:
    assert arrows_up(path.read_text(encoding="utf-8"), module_name(path)) == []


def test_the_core_room_check_catches_an_arrow_up() -> None:
    module = "websim_crawler.core.similarity.collection"
    assert core_arrows_up("from websim_crawler.core.stages import StagePlan", module) == [
        "websim_crawler.core.stages",
        "websim_crawler.core.stages.StagePlan",
    ]
    assert core_arrows_up("from ..page import analyse_page", module) == []
    assert core_arrows_up("def f():\n    from websim_crawler.core import neardup\n", module) == [
        "websim_crawler.core.neardup"
    ]
    assert core_room_of("websim_crawler.core.text.keyword_forms") == "text"


def test_every_core_module_is_in_a_declared_core_room() -> None:
    rooms = {core_room_of(module_name(path)) for path in python_files(CORE)}
    assert rooms == set(CORE_ROOMS)


@pytest.mark.parametrize("path", python_files(CORE), ids=lambda path: module_name(path))
def test_a_core_module_imports_no_core_room_above_its_own(path: Path) -> None:
    assert core_arrows_up(path.read_text(encoding="utf-8"), module_name(path)) == []


@pytest.mark.parametrize("path", python_files(CORE), ids=lambda path: module_name(path))
def test_core_module_imports_no_framework_and_no_adapter(path: Path) -> None:
    module = module_name(path)
    assert core_violations(path.read_text(encoding="utf-8"), module) == []


def test_page_analysis_is_imported_by_its_public_names_only() -> None:
    outside = [
        path
        for path in python_files(PACKAGE, ROOT / "tests", ROOT / "benchmarks")
        if CORE / "page" not in path.parents
    ]
    used = {
        module_name(path): found
        for path in outside
        if (found := page_internals_used(path.read_text(encoding="utf-8"), module_name(path)))
    }
    assert used == {}


def test_importing_the_core_loads_no_framework_and_no_adapter() -> None:
    modules = [
        info.name
        for info in pkgutil.walk_packages(websim_crawler.core.__path__, "websim_crawler.core.")
    ]
    assert {"websim_crawler.core.text", "websim_crawler.core.page.analyse"} <= set(modules)
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    leaked = [name for name in result.stdout.split() if not allowed_in_core(name)]
    assert leaked == []


# A module a newcomer reads in one sitting: longer ones are split along their seams (issue 29).
MAX_MODULE_LINES = 600


def test_no_module_is_longer_than_a_newcomer_reads_in_one_sitting() -> None:
    lengths = {
        module_name(path): len(path.read_text(encoding="utf-8").splitlines())
        for path in python_files(PACKAGE)
    }
    assert {name: size for name, size in lengths.items() if size > MAX_MODULE_LINES} == {}
