from __future__ import annotations

from collections import Counter

import pytest

from websim_crawler.core.text import (
    STEMMERS,
    detect_language,
    keyword_forms,
    keyword_token_lists,
    keyword_tokens,
    language_code,
    stem_counts,
    stemmer,
    stopwords,
    tokenize,
)
from websim_crawler.errors import ConfigError


def test_tokenize_lowercases_and_drops_numbers() -> None:
    assert tokenize("Hello, World! 2024 x_y") == ["hello", "world", "x_y"]


def test_tokenize_splits_cjk_into_bigrams_not_nothing() -> None:
    assert tokenize("東京都") == ["東京", "京都"]
    assert tokenize("日本語 text") == ["日本", "本語", "text"]


def test_english_keywords_use_snowball_stems_and_drop_stopwords() -> None:
    assert keyword_tokens("The running dogs were jumping", "en") == ["run", "dog", "jump"]


def test_german_keywords_use_snowball() -> None:
    assert keyword_tokens("Die schnellen Füchse springen", "de") == ["schnell", "fuchs", "spring"]


def test_unknown_language_keeps_tokens_unstemmed() -> None:
    assert keyword_tokens("kotek kotka", "xx") == ["kotek", "kotka"]
    assert "the" in stopwords("xx")


def test_detect_language_and_declared_codes() -> None:
    text = "Die Bundesregierung hat am Mittwoch neue Regeln für den Wohnungsbau beschlossen."
    assert detect_language(text) == "de"
    assert detect_language("ok") == "en"
    assert language_code("de-AT") == "de"
    assert language_code("  en_US ") == "en"
    assert language_code("") is None


def test_unstemmed_keywords_map_to_the_stemmed_ones() -> None:
    text = "Running runners; the runner runs and 2024 runs"
    plain = keyword_tokens(text, "en", stem=False)
    assert plain == ["running", "runners", "runner", "runs", "runs"]
    assert stem_counts(Counter(plain), "en") == Counter(keyword_tokens(text, "en"))
    assert stem_counts(Counter(plain), "en") == Counter({"run": 3, "runner": 2})


def test_each_stemmer_gives_its_own_english_algorithm() -> None:
    words = ["generously", "dying", "telescopes", "running"]
    stems = {name: [stemmer("en", name)(word) for word in words] for name in STEMMERS}
    assert stems["snowball"] == ["generous", "die", "telescop", "run"]  # Porter2
    assert stems["porter"] == ["gener", "dy", "telescop", "run"]  # Porter (1980)
    assert stems["nltk"] == ["gener", "die", "telescop", "run"]  # NLTK's Porter variant
    assert keyword_tokens("generously", "en", stemmer_name="porter") == ["gener"]


def test_libstemmer_stems_languages_nltk_has_not() -> None:
    assert keyword_tokens("kitaplar okuyorum", "tr") == ["kitap", "okuyor"]
    assert keyword_tokens("kitaplar okuyorum", "tr", stemmer_name="nltk") == [
        "kitaplar",
        "okuyorum",
    ]
    assert stemmer("de", "nltk")("schnellen") == stemmer("de")("schnellen") == "schnell"


def test_unknown_stemmer_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown stemmer 'lancaster'"):
        stemmer("en", "lancaster")


def test_keyword_forms_count_the_surface_forms_of_each_stem() -> None:
    text = "Telescopes and a telescope. The telescope, the Galaxies; a galaxy. Colonies"
    assert keyword_forms(text, "en") == {
        "telescop": Counter({"telescope": 2, "telescopes": 1}),
        "galaxi": Counter({"galaxies": 1, "galaxy": 1}),
        "coloni": Counter({"colonies": 1}),
    }
    assert keyword_forms("", "en") == {}


def test_a_keyword_whose_stem_is_empty_is_kept_unstemmed_and_dropped_stemmed() -> None:
    # Snowball's Greek stems "ίδιο" to "": no stemmed keyword, but still a keyword token.
    for _memoised in range(2):
        assert keyword_tokens("ίδιο σπίτι", "el") == ["σπιτ"]
        assert keyword_tokens("ίδιο σπίτι", "el", stem=False) == ["ίδιο", "σπίτι"]
        assert keyword_token_lists(["ίδιο σπίτι", "2026"], "el", stem=False) == [
            ["ίδιο", "σπίτι"],
            [],
        ]
