"""Spider arguments (``-a name=value``): parsed and checked, with errors that name the argument.

A ``ConfigError`` raised while the spider is built ends ``scrapy crawl`` with exit code 1; the
filter installed by ``logformatter.report_errors_plainly`` logs it as one line, not a traceback.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from websim_crawler.errors import ConfigError, nearest_hint

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def check_arguments_known(spider_class: type, spider_name: str, given: Iterable[str]) -> None:
    """Raise ``ConfigError`` for an ``-a`` argument no ``__init__`` of the spider declares.

    Scrapy sets any ``-a name=value`` as a spider attribute, so ``-a folow=1`` would be ignored
    without a word; the message names the nearest declared argument. Names starting with ``_``
    (``_job``, which scrapyd passes) are left alone.
    """
    known = sorted(
        name
        for klass in spider_class.__mro__
        if "__init__" in vars(klass) and klass.__module__.startswith("websim_crawler.")
        for name, parameter in inspect.signature(vars(klass)["__init__"]).parameters.items()
        if name != "self"
        and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    )
    for name in given:
        if not name.startswith("_") and name not in known:
            raise ConfigError(
                f"{spider_name}: unknown argument -a {name}{nearest_hint(name, known)}; "
                f"the arguments: {', '.join(known)}"
            )


def parse_flag(spider_name: str, name: str, value: object, accepted: str = "1 or 0") -> bool:
    """Read a yes/no argument (``1``/``0``, ``true``/``false``, ``yes``/``no``)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"{spider_name}: -a {name} must be {accepted}, got {value!r}")


def parse_count(spider_name: str, name: str, value: object, *, maximum: int) -> int:
    """Read a whole number argument between 1 and ``maximum``."""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(
            f"{spider_name}: -a {name} must be a whole number, got {value!r}"
        ) from None
    if not 1 <= number <= maximum:
        raise ConfigError(f"{spider_name}: -a {name} must be between 1 and {maximum}, got {number}")
    return number


def parse_http_url(spider_name: str, name: str, value: object) -> str:
    """Read an absolute http(s) URL argument."""
    text = str(value).strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{spider_name}: -a {name} must be an absolute http(s) URL such as "
            f"https://example.org/, got {text!r}"
        )
    return text


def parse_query_template(spider_name: str, value: object) -> str:
    """Read a ``query_template`` URL that holds ``{query}`` once or more."""
    template = parse_http_url(spider_name, "query_template", value)
    if "{query}" not in template:
        raise ConfigError(
            f"{spider_name}: -a query_template must contain {{query}}, "
            f"e.g. https://example.org/search?q={{query}}, got {template!r}"
        )
    try:
        template.format(query="probe")
    except (IndexError, KeyError, ValueError) as exc:
        raise ConfigError(
            f"{spider_name}: -a query_template may hold no braces other than {{query}}: {exc}"
        ) from exc
    return template


def parse_queries(spider_name: str, queries: object, queries_file: object) -> list[str]:
    """Collect the queries of ``-a queries=Q1,Q2`` and ``-a queries_file=F`` (one a line).

    Blank entries, lines starting with ``#`` and repeats are left out; none left is an error.
    """
    collected: list[str] = []
    if queries is not None:
        collected.extend(str(queries).split(","))
    if queries_file is not None:
        path = Path(str(queries_file))
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{spider_name}: cannot read -a queries_file={path}: {exc}") from exc
        collected.extend(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    unique = list(dict.fromkeys(" ".join(query.split()) for query in collected))
    unique = [query for query in unique if query]
    if not unique:
        raise ConfigError(
            f"{spider_name}: no queries given: use -a queries=Q1,Q2 or -a queries_file=FILE "
            "(one query a line)"
        )
    return unique
