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


def _cache() -> Path:
    return cached_model_path(langid.MODEL_DIR / langid.MODEL_FILE)


def test_cached_identifier_is_py3langids_own(cache_home: Path) -> None:
    """Fails when py3langid changes its constructor or array types (the fallback is then used)."""
    own = langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE)
    for _ in range(2):  # built from the decompressed model, then from the cache file
        classify = language_identifier()
        built = classify.__self__  # type: ignore[attr-defined]
        assert isinstance(built, langid.LanguageIdentifier)
        assert sorted(p.name for p in _cache().iterdir()) == [
            "classes.npy",
            "nextmove.npy",
            "nextmove_row.npy",
            "out_feat.npy",
            "pc.npy",
            "ptc.npy",
        ]
        assert _cache().parent == cache_home / "websim-crawler"
        assert built.nb_classes == own.nb_classes
        for name in ("tk_output", "tk_nextmove", "tk_row"):
            np.testing.assert_array_equal(
                np.asarray(getattr(built, name)), np.asarray(getattr(own, name))
            )
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


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("ptc.npy", b""),
        ("nextmove.npy", b"not an array"),
        ("pc.npy", None),  # missing
        ("classes.npy", np.arange(3)),  # arrays that do not fit together
    ],
)
def test_corrupt_cache_is_rebuilt(cache_home: Path, name: str, content: object) -> None:
    language_identifier()
    target = _cache() / name
    original = np.load(target)
    if content is None:
        target.unlink()
    elif isinstance(content, bytes):
        target.write_bytes(content)
    else:
        np.save(target, content)
    assert language_identifier()(TEXTS[2])[0] == "fr"
    np.testing.assert_array_equal(np.load(target), original)
    assert [p.name for p in _cache().parent.iterdir()] == [_cache().name]


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
    assert os.path.isfile(_cache() / "ptc.npy")
