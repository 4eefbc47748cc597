"""py3langid's model cached per user: same answers as py3langid's own loader, rebuilt when bad."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from py3langid import langid

from websim_crawler.core import language_model
from websim_crawler.core.language_model import cached_model_path, language_identifier

TEXTS = [
    "The quick brown fox jumps over the lazy dog while the farmer watches from the porch.",
    "Der schnelle braune Fuchs springt über den faulen Hund, während der Bauer zusieht.",
    "Le renard brun rapide saute par-dessus le chien paresseux pendant que le fermier regarde.",
    "El rápido zorro marrón salta sobre el perro perezoso mientras el granjero mira.",
    "Быстрая коричневая лиса прыгает через ленивую собаку, пока фермер смотрит с крыльца.",
    "東京都は日本の首都であり、多くの人々が住んでいます。",
    "ok",
    "",
]


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def _cache_file() -> Path:
    return cached_model_path(langid.MODEL_DIR / langid.MODEL_FILE)


def test_cached_identifier_is_py3langids_own(cache_home: Path) -> None:
    """Fails when py3langid changes its constructor or array types (the fallback is then used)."""
    own = langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE)
    for _ in range(2):  # built from the decompressed model, then from the cache file
        classify = language_identifier()
        built = classify.__self__  # type: ignore[attr-defined]
        assert isinstance(built, langid.LanguageIdentifier)
        assert _cache_file().is_file()
        assert _cache_file().parent == cache_home / "websim-crawler"
        assert built.nb_classes == own.nb_classes
        assert built.tk_output == own.tk_output
        assert built.tk_nextmove == own.tk_nextmove and built.tk_row == own.tk_row
        assert type(built.tk_nextmove) is type(own.tk_nextmove)
        np.testing.assert_array_equal(built.nb_ptc, own.nb_ptc)
        np.testing.assert_array_equal(built.nb_pc, own.nb_pc)
        assert [classify(text) for text in TEXTS] == [own.classify(text) for text in TEXTS]


def test_second_load_reads_the_cache_not_the_xz_model(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    language_identifier()

    def no_decompression(model_file: Path) -> None:
        raise AssertionError(f"decompressed {model_file} although it is cached")

    monkeypatch.setattr(language_model, "_decompress", no_decompression)
    assert language_identifier()(TEXTS[1])[0] == "de"


@pytest.mark.parametrize("content", [b"", b"not a zip archive", b"PK\x03\x04" + b"\0" * 64])
def test_corrupt_cache_is_rebuilt(cache_home: Path, content: bytes) -> None:
    cache_file = _cache_file()
    cache_file.parent.mkdir(parents=True)
    cache_file.write_bytes(content)
    assert language_identifier()(TEXTS[2])[0] == "fr"
    assert cache_file.stat().st_size > 10_000_000
    assert [p.name for p in cache_file.parent.iterdir()] == [cache_file.name]


def test_unwritable_cache_folder_still_identifies(cache_home: Path) -> None:
    (cache_home / "websim-crawler").write_text("a file where the folder should be")
    assert language_identifier()(TEXTS[3])[0] == "es"
    assert (cache_home / "websim-crawler").is_file()


def test_changed_constructor_falls_back_to_py3langids_loader(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class ChangedShape:
        def __init__(self, model: object) -> None:
            self.model = model

    monkeypatch.setattr(langid, "LanguageIdentifier", ChangedShape)
    assert language_identifier() is langid.classify
    assert os.path.isfile(_cache_file())
