"""The records that cross a room (the stage record, the analysis record) are spelled in one place.

Each record is a ``TypedDict`` declared beside what makes it; mypy checks a key written as a
subscript, but not one passed to ``.get`` nor one kept in a constant. So, on the source of the
package: a key only these records have is written outside its declaring module only as the key of
a subscript or ``.get`` on a name or attribute annotated with one of the records, and every key
looked up on such a name is one of its record's.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from websim_crawler.core.clustering.params import ClusterRecord
from websim_crawler.core.neardup.params import NeardupRecord
from websim_crawler.core.page import AnalysisRecord
from websim_crawler.core.similarity.params import SimilarityRecord
from websim_crawler.core.stages import StageRecord
from websim_crawler.items import PageItem

PACKAGE = Path(__file__).resolve().parents[2] / "websim_crawler"
# The records with the keys they declare themselves (``StageRecord`` is made of the parts).
PARTS: dict[str, type] = {
    "ClusterRecord": ClusterRecord,
    "SimilarityRecord": SimilarityRecord,
    "NeardupRecord": NeardupRecord,
    "AnalysisRecord": AnalysisRecord,
}
KEYS = {name: set(record.__annotations__) for name, record in PARTS.items()}
KEYS["StageRecord"] = set(StageRecord.__annotations__)
# A key of an item field (url, keywords, title ...) is spelled wherever items are read, and
# ``encoding`` is a word of decoded pages and archive records too.
SHARED_KEYS = {*PageItem.fields, "encoding"}
OWN_KEYS = {
    key: record.__module__
    for record in PARTS.values()
    for key in record.__annotations__
    if key not in SHARED_KEYS
}
RECORD_NAME = re.compile(r"\b(" + "|".join(KEYS) + r")\b")


def modules() -> Iterator[tuple[str, ast.Module]]:
    """Yield each module of the package by dotted name, parsed."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, ast.parse(path.read_text(encoding="utf-8"))


def annotations(tree: ast.AST) -> dict[str, str]:
    """Return the type of every parameter, variable and attribute annotated in ``tree`` (in a
    function: its own, those of the functions in it too), and of a variable made by a record's
    constructor (``fields = ClusterRecord(...)``)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                if argument.annotation is not None:
                    found[argument.arg] = ast.unparse(argument.annotation)
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.attr if isinstance(target, ast.Attribute) else ast.unparse(target)
            found[name] = ast.unparse(node.annotation)
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in KEYS
        ):
            found |= {ast.unparse(target): node.value.func.id for target in node.targets}
    return found


def scopes(tree: ast.Module) -> Iterator[tuple[ast.AST, dict[str, str]]]:
    """Yield each top-level function or method with the names annotated in it, and the rest of
    the module with its own."""
    module_level = ast.Module(body=[], type_ignores=[])
    for node in tree.body:
        inner = node.body if isinstance(node, ast.ClassDef) else [node]
        for member in inner:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield member, annotations(member)
            else:
                module_level.body.append(member)
    yield module_level, annotations(module_level)


ATTRIBUTES = {  # attributes declared anywhere in the package (``PageOutcome.stage_record``)
    name: annotation for _, tree in modules() for name, annotation in annotations(tree).items()
}


def records_of(receiver: ast.expr, declared: dict[str, str]) -> set[str]:
    """Return the records ``receiver`` is annotated with (empty: none of them)."""
    if isinstance(receiver, ast.Name):
        annotation = declared.get(receiver.id, "")
    elif isinstance(receiver, ast.Attribute):
        annotation = ATTRIBUTES.get(receiver.attr, "")
    else:
        return set()
    return set(RECORD_NAME.findall(annotation))


def key_lookups(tree: ast.AST) -> Iterator[tuple[ast.expr, ast.Constant]]:
    """Yield (receiver, key) of each ``x["key"]`` and ``x.get("key")`` of ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            yield node.value, node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            yield node.func.value, node.args[0]


def misspelt_and_untyped() -> tuple[list[str], list[str]]:
    """Return the lookups of keys no record of their receiver has, and the own keys of a record
    written elsewhere than a typed lookup, each as ``module:line key``."""
    misspelt, untyped = [], []
    for module, tree in modules():
        typed: set[int] = set()  # the key constants of lookups on a record
        for scope, declared in scopes(tree):
            for receiver, key in key_lookups(scope):
                records = records_of(receiver, declared)
                if not records or not isinstance(key.value, str):
                    continue
                typed.add(id(key))
                if not any(key.value in KEYS[record] for record in records):
                    misspelt.append(f"{module}:{key.lineno} {key.value!r}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and OWN_KEYS.get(node.value, module) != module
                and id(node) not in typed
            ):
                untyped.append(f"{module}:{node.lineno} {node.value!r}")
    return sorted(misspelt), sorted(untyped)


def test_the_records_own_keys_are_their_declarations() -> None:
    assert set(OWN_KEYS) >= {
        "keyword_forms",
        "cluster_skipped",
        "similarity_features",
        "similarity_skipped",
        "neardup_sentences",
        "neardup_skipped",
        "main_chunk_ids",
    }
    misspelt, untyped = misspelt_and_untyped()
    assert misspelt == []
    assert untyped == []


def test_the_check_finds_a_misspelt_and_a_loose_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        "def add(record: SimilarityRecord, page: Mapping[str, Any]) -> None:\n"
        "    record.get('similarity_feature')\n"
        "    record.get('similarity_features')\n"
        "    page.get('similarity_features')\n"
        "SKIP = 'similarity_skipped'\n"
    )
    package = tmp_path / "websim_crawler"
    package.mkdir()
    (package / "loose.py").write_text(source, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    misspelt, untyped = misspelt_and_untyped()
    assert misspelt == ["websim_crawler.loose:2 'similarity_feature'"]
    assert untyped == [
        "websim_crawler.loose:4 'similarity_features'",
        "websim_crawler.loose:5 'similarity_skipped'",
    ]


def declares_a_record(tree: ast.Module) -> bool:
    """Tell whether a module declares a ``TypedDict`` (directly or from a record of the package)."""
    return any(
        isinstance(node, ast.ClassDef)
        and any(ast.unparse(base) in {"TypedDict", *KEYS} for base in node.bases)
        for node in tree.body
    )


def test_mypy_checks_every_module_declaring_a_record_strictly() -> None:
    from mypy.main import define_options
    from mypy.options import PER_MODULE_OPTIONS

    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    mypy = tomllib.loads(pyproject)["tool"]["mypy"]
    strict = [o for o in mypy.get("overrides", []) if o.get("disallow_untyped_defs")]
    assert len(strict) == 1
    checked = set(strict[0]["module"])
    declaring = {name for name, tree in modules() if declares_a_record(tree)}
    assert {
        "websim_crawler.core.page.chunks",
        "websim_crawler.core.stages.preparation",
    } <= declaring
    assert declaring <= checked
    assert checked <= {name for name, _ in modules()}  # no name of a module moved away
    _, _, strict_flags = define_options()  # what --strict turns on, by option name
    for option, value in strict_flags:  # set in the override, or for every module
        per_module = option in PER_MODULE_OPTIONS and option in strict[0]
        assert (strict[0] if per_module else mypy).get(option) == value, option
