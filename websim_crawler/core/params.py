"""Validated, typed parameter records shared by the core and the Scrapy settings.

Each area of the core (analysis, clustering, similarity, near duplicates) declares its constants as
a frozen dataclass whose fields are made with :func:`setting`: a default, the Scrapy setting that
sets it (``WEBSIM_...``), bounds and a one-line help text. :func:`validate` checks a record (call
it from ``__post_init__``) and :func:`params_from_settings` builds a record from any mapping with
``get`` (a Scrapy ``Settings`` object or a plain dict), coercing strings given with ``-s``.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Protocol, TypeVar

from websim_crawler.errors import ConfigError

T = TypeVar("T")


class SettingsLike(Protocol):
    """Anything with ``get(name, default)``: Scrapy's ``Settings`` or a dict."""

    def get(self, name: str, default: Any = None) -> Any: ...


def setting(
    default: Any,
    name: str,
    help: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[Any, ...] | None = None,
) -> Any:
    """Declare a parameter field bound to the Scrapy setting ``name``."""
    metadata = {
        "setting": name,
        "help": help,
        "minimum": minimum,
        "maximum": maximum,
        "choices": choices,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("parameter defaults must be immutable")
    return dataclasses.field(default=default, metadata=metadata)


def validate(record: Any) -> None:
    """Check every declared field's type, bounds and choices; raise ``ConfigError`` naming it."""
    hints = typing.get_type_hints(type(record))
    for field in dataclasses.fields(record):
        if "setting" not in field.metadata:
            continue
        value = getattr(record, field.name)
        name = field.metadata["setting"]
        _check_type(name, value, hints[field.name])
        if field.metadata["choices"] is not None and value not in field.metadata["choices"]:
            raise ConfigError(f"{name} must be one of {field.metadata['choices']}, got {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high = field.metadata["minimum"], field.metadata["maximum"]
            if value != value or (low is not None and value < low):
                raise ConfigError(f"{name} must be >= {low}, got {value!r}")
            if high is not None and value > high:
                raise ConfigError(f"{name} must be <= {high}, got {value!r}")


def _check_type(name: str, value: Any, hint: Any) -> None:
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, tuple) or not all(_is_number(item) for item in value):
            raise ConfigError(f"{name} must be numbers separated by commas, got {value!r}")
        return
    allowed = typing.get_args(hint) or (hint,)
    allowed_types = tuple(a if a is not type(None) else type(None) for a in allowed)
    if isinstance(value, bool) and bool not in allowed_types:
        raise ConfigError(f"{name} must be a number, got {value!r}")
    if float in allowed_types and isinstance(value, int) and not isinstance(value, bool):
        return
    plain_types = tuple(t for t in allowed_types if isinstance(t, type))
    if plain_types and not isinstance(value, plain_types):
        expected = " or ".join(t.__name__ for t in plain_types)
        raise ConfigError(f"{name} must be {expected}, got {value!r}")


def params_from_settings(params_type: type[T], settings: SettingsLike) -> T:
    """Build a parameter record from settings; values given as strings are coerced."""
    hints = typing.get_type_hints(params_type)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(params_type):  # type: ignore[arg-type]
        if "setting" not in field.metadata:
            continue
        name = field.metadata["setting"]
        raw = settings.get(name, None)
        if raw is None:
            continue
        values[field.name] = _coerce(name, raw, hints[field.name])
    return params_type(**values)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _coerce(name: str, raw: Any, hint: Any) -> Any:
    if typing.get_origin(hint) is tuple:  # "1,0.5,1" or a list from settings.py
        parts = raw.split(",") if isinstance(raw, str) else raw
        try:
            return tuple(float(part) for part in parts)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be numbers separated by commas, got {raw!r}") from None
    if not isinstance(raw, str):
        return raw
    allowed = typing.get_args(hint) or (hint,)
    text = raw.strip()
    if type(None) in allowed and text.lower() in ("", "none", "null"):
        return None
    if bool in allowed:
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name} must be a boolean, got {raw!r}")
    for kind in (int, float):
        if kind in allowed:
            try:
                return kind(text)
            except ValueError:
                if kind is int and float in allowed:
                    continue
                if str in allowed:
                    return text
                raise ConfigError(f"{name} must be {kind.__name__}, got {raw!r}") from None
    return text
