"""py3langid's language identifier, its model decompressed once per user and cached.

py3langid ships its model as an xz-compressed NumPy archive (4.5 MB, 68 MB inside) and
decompresses it in every process that classifies a text, which costs more CPU than the rest of
``websim extract one.html`` (measured in benchmarks/RESULTS.md). :func:`language_identifier`
keeps the decompressed arrays in a folder of ``.npy`` files under
``$XDG_CACHE_HOME/websim-crawler`` (``~/.cache`` when unset), named after py3langid's version
and the model file's digest, maps them into memory and builds the identifier from them through
py3langid's ``LanguageIdentifier`` constructor, a small fraction of that cost.
Each file of the cache is written atomically; a cache that cannot be read (missing or cut
files, arrays that do not fit together) is rebuilt, one that cannot be written
(read-only home) is skipped, and if py3langid changes shape the identifier comes from its own
loader: the answers are the same either way.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
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
    cache = cached_model_path(model_file)
    try:
        arrays = _read_cache(cache)
    except (OSError, EOFError, ValueError) as exc:
        if cache.exists():
            logger.info("rebuilding the language model cache %s: %s", cache, exc)
        arrays = None
    try:
        if arrays is None:
            arrays = _decompress(model_file)
            _write_cache(cache, arrays)
        return _identifier_from_arrays(langid, arrays).classify
    except (TypeError, ValueError) as exc:  # py3langid changed shape: use its own loader
        logger.warning("cannot build py3langid's identifier from its arrays: %s", exc)
        return langid.classify


def cached_model_path(model_file: Path) -> Path:
    """The cache folder of a model: py3langid's version and the model's digest in its name."""
    import py3langid

    digest = hashlib.blake2b(model_file.read_bytes(), digest_size=12).hexdigest()
    return cache_folder() / f"py3langid-{py3langid.__version__}-{digest}"


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


def _read_cache(cache: Path) -> dict[str, np.ndarray]:
    """Map the cached arrays into memory (pages are read as the identifier touches them)."""
    arrays = {
        name: np.asarray(np.load(cache / f"{name}.npy", mmap_mode="r", allow_pickle=False))
        for name in _MODEL_ARRAYS
    }
    n_features, n_classes = arrays["ptc"].shape
    if not (
        len(arrays["pc"]) == len(arrays["classes"]) == n_classes
        and len(arrays["nextmove_row"]) == len(arrays["out_feat"])
        and len(arrays["nextmove"]) % 256 == 0
        and n_features > 0
    ):
        raise ValueError("the cached arrays do not fit together")
    return arrays


def _write_cache(cache: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write each array atomically into the cache folder; skip (logged) if it cannot be written.

    A folder left incomplete by a kill lacks files and is rebuilt by the next reader.
    """
    try:
        cache.mkdir(parents=True, exist_ok=True)  # the program's own folders, not a user's path
        for name, values in arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, values, allow_pickle=False)
            atomic_write_bytes(cache / f"{name}.npy", buffer.getvalue())
    except OSError as exc:
        logger.info("language model not cached in %s: %s", cache.parent, exc)


def _identifier_from_arrays(langid: Any, arrays: dict[str, np.ndarray]) -> Any:
    """Build py3langid's identifier as ``LanguageIdentifier.from_model_file`` does.

    The one place that knows py3langid's constructor and what its DFA walk indexes (transitions
    and outputs by integer: given here as memory views of the mapped arrays, not copied);
    tests/core/test_language_model.py compares its answers and arrays with py3langid's own loader,
    so a change of shape fails there.
    """
    return langid.LanguageIdentifier(
        arrays["ptc"],
        arrays["pc"],
        arrays["classes"].tolist(),
        arrays["nextmove"].data,
        arrays["out_feat"].data,
        tk_row=arrays["nextmove_row"].data,
    )
