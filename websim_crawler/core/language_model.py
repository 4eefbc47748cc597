"""py3langid's language identifier, its model decompressed once per user and cached.

py3langid ships its model as an xz-compressed NumPy archive (4.5 MB, 68 MB inside) and
decompresses it in every process that classifies a text: about 0.4 s of CPU, more than the rest
of ``websim extract one.html``. :func:`language_identifier` keeps the decompressed arrays in an
uncompressed ``.npz`` under ``$XDG_CACHE_HOME/websim-crawler`` (``~/.cache`` when unset), named
after py3langid's version and the model file's digest, and builds the identifier from it through
py3langid's ``LanguageIdentifier`` constructor: about 0.05 s. The cache is written atomically; a
cache that cannot be read or written (corrupt, read-only home) is rebuilt or skipped, and the
identifier then comes from py3langid's own loader, with identical answers either way.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import zipfile
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from websim_crawler.core.io import atomic_write_bytes

logger = logging.getLogger(__name__)

CACHE_FOLDER_NAME = "websim-crawler"
_MODEL_ARRAYS = ("ptc", "pc", "classes", "nextmove", "nextmove_row", "out_feat")


def cache_folder() -> Path:
    """The per-user cache folder: ``$XDG_CACHE_HOME/websim-crawler`` (``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / CACHE_FOLDER_NAME


def language_identifier() -> Callable[[str], tuple[str, float]]:
    """Return py3langid's ``classify`` with its default model, loaded from the cache if possible."""
    from py3langid import langid

    model_file = langid.MODEL_DIR / langid.MODEL_FILE
    cache_file = cached_model_path(model_file)
    try:
        arrays = _read_cache(cache_file)
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        if cache_file.exists():
            logger.info("rebuilding the language model cache %s: %s", cache_file, exc)
        arrays = None
    try:
        if arrays is None:
            arrays = _decompress(model_file)
            _write_cache(cache_file, arrays)
        return _identifier_from_arrays(langid, arrays).classify
    except (TypeError, ValueError) as exc:  # py3langid changed shape: use its own loader
        logger.warning("cannot build py3langid's identifier from its arrays: %s", exc)
        return langid.classify


def cached_model_path(model_file: Path) -> Path:
    """The cache file of a model: py3langid's version and the model's digest in its name."""
    import py3langid

    digest = hashlib.blake2b(model_file.read_bytes(), digest_size=12).hexdigest()
    return cache_folder() / f"py3langid-{py3langid.__version__}-{digest}.npz"


def _decompress(model_file: Path) -> dict[str, np.ndarray]:
    """The model's arrays, read through py3langid's own loader."""
    from py3langid import modelio

    ptc, pc, classes, nextmove, nextmove_row, out_feat = modelio.load_model(model_file)
    return {
        "ptc": np.asarray(ptc),
        "pc": np.asarray(pc),
        "classes": np.array(classes),
        "nextmove": np.frombuffer(nextmove, dtype=np.dtype(nextmove.typecode)),
        "nextmove_row": np.frombuffer(nextmove_row, dtype=np.dtype(nextmove_row.typecode)),
        "out_feat": np.asarray(out_feat, dtype=np.int32),
    }


def _read_cache(cache_file: Path) -> dict[str, np.ndarray]:
    with np.load(cache_file, allow_pickle=False) as data:
        return {name: data[name] for name in _MODEL_ARRAYS}


def _write_cache(cache_file: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write the arrays atomically over the cache file; skip (logged) if it cannot be written."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    try:
        atomic_write_bytes(cache_file, buffer.getvalue())
    except OSError as exc:
        logger.info("language model not cached in %s: %s", cache_file.parent, exc)


def _identifier_from_arrays(langid: Any, arrays: dict[str, np.ndarray]) -> Any:
    """Build py3langid's identifier as ``LanguageIdentifier.from_model_file`` does.

    The one place that knows py3langid's constructor and the types its DFA walk expects
    (stdlib arrays for the transitions, a list for the outputs); tests/test_text.py compares
    its answers and attributes with py3langid's own loader, so a change of shape fails there.
    """
    return langid.LanguageIdentifier(
        arrays["ptc"],
        arrays["pc"],
        arrays["classes"].tolist(),
        _stdlib_array(arrays["nextmove"]),
        arrays["out_feat"].tolist(),
        tk_row=_stdlib_array(arrays["nextmove_row"]),
    )


def _stdlib_array(values: np.ndarray) -> array[Any]:
    out = array(values.dtype.char)
    out.frombytes(np.ascontiguousarray(values).data.cast("B"))
    return out
