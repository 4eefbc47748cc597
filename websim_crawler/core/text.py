"""Language-aware text processing: tokens, stopwords, stemming and keyword counts.

Everything works offline: stopwords come from NLTK's corpus when it is installed, else from the
``stop-words`` package; stemmers are NLTK's Porter (English) and Snowball (other languages).
Chinese and Japanese runs, which have no spaces, become overlapping character bigrams.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import stop_words
from nltk.stem import PorterStemmer
from nltk.stem.snowball import SnowballStemmer

DEFAULT_LANGUAGE = "en"
_LANGUAGE_SAMPLE_CHARS = 3000
_MIN_CHARS_FOR_DETECTION = 20

_WORD_RE = re.compile(r"\w+", re.UNICODE)
# Han, Hiragana, Katakana (incl. prolonged sound mark) and CJK compatibility ideographs.
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30fc]+")
# One range around all of them: ``re`` scans text for it several times faster.
_CJK_SPAN_RE = re.compile(r"[\u3040-\ufaff]")

_SNOWBALL_NAMES = {
    "ar": "arabic",
    "da": "danish",
    "nl": "dutch",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "hu": "hungarian",
    "it": "italian",
    "nb": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "es": "spanish",
    "sv": "swedish",
}


def normalize_text(text: str) -> str:
    """Fold Unicode compatibility forms and collapse runs of white space."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def tokenize(text: str) -> list[str]:
    """Split text into lower-cased word tokens; CJK runs become character bigrams."""
    tokens: list[str] = []
    for match in _WORD_RE.finditer(text.lower()):
        word = match.group()
        if not _CJK_RE.search(word):
            if not word.isdigit() and word != "_" * len(word):
                tokens.append(word)
            continue
        position = 0
        for cjk in _CJK_RE.finditer(word):
            if cjk.start() > position:
                tokens.extend(_plain_parts(word[position : cjk.start()]))
            tokens.extend(_character_bigrams(cjk.group()))
            position = cjk.end()
        tokens.extend(_plain_parts(word[position:]))
    return tokens


def _plain_parts(word: str) -> list[str]:
    return [word] if word and not word.isdigit() and word.strip("_") else []


def _character_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


@lru_cache(maxsize=1)
def _language_identifier() -> Callable[[str], tuple[str, float]]:
    import py3langid  # loads a ~1 MB model on first use

    return py3langid.classify


def detect_language(text: str, default: str = DEFAULT_LANGUAGE) -> str:
    """Return the ISO 639-1 code of the text's language (``default`` when too short to tell)."""
    sample = text[:_LANGUAGE_SAMPLE_CHARS]
    if len(sample.strip()) < _MIN_CHARS_FOR_DETECTION:
        return default
    code, _score = _language_identifier()(sample)
    return code


def language_code(value: str | None) -> str | None:
    """Reduce a declared language (``de-AT``, ``en_US``, ``FR``) to a lower-case ISO 639-1 code."""
    if not value:
        return None
    code = re.split(r"[-_;,\s]", value.strip().lower(), maxsplit=1)[0]
    return code if re.fullmatch(r"[a-z]{2,3}", code) else None


@lru_cache(maxsize=64)
def stopwords(language: str) -> frozenset[str]:
    """Return the stopword set of a language (English's when the language has none)."""
    words: set[str] = set()
    name = stop_words.LANGUAGE_MAPPING.get(language)
    try:
        from nltk.corpus import stopwords as nltk_stopwords

        if name:
            words.update(nltk_stopwords.words(name))
    except (LookupError, OSError):
        pass
    if name:
        words.update(stop_words.get_stop_words(language))
    if not words:
        words.update(stop_words.get_stop_words(DEFAULT_LANGUAGE))
    return frozenset(word.lower() for word in words)


@lru_cache(maxsize=64)
def stemmer(language: str) -> Callable[[str], str]:
    """Return a cached stem function: Porter for English, Snowball where NLTK has the language."""
    if language == "en":
        porter = PorterStemmer()
        return lru_cache(maxsize=200_000)(porter.stem)
    name = _SNOWBALL_NAMES.get(language)
    if name is None:
        return _identity
    snowball = SnowballStemmer(name)
    return lru_cache(maxsize=200_000)(snowball.stem)


def _identity(token: str) -> str:
    return token


def keyword_tokens(text: str, language: str = DEFAULT_LANGUAGE, *, stem: bool = True) -> list[str]:
    """Tokenise, drop stopwords and stem: the keywords of a text, in order.

    With ``stem=False`` the keywords are the lower-cased tokens themselves (no stemmer runs);
    ``stemmer(language)`` maps them to the stemmed keywords later.
    """
    lowered = text.lower()
    tokens = tokenize(text) if _has_cjk(lowered) else _WORD_RE.findall(lowered)
    keywords = _keyword_table(language, stem)
    try:
        return list(filter(None, map(keywords.__getitem__, tokens)))
    except KeyError:  # tokens never seen before
        _learn_keywords(keywords, tokens, language, stem)
        return list(filter(None, map(keywords.__getitem__, tokens)))


def _has_cjk(text: str) -> bool:
    """Tell whether the text holds Chinese or Japanese characters."""
    return (
        not text.isascii()
        and _CJK_SPAN_RE.search(text) is not None
        and _CJK_RE.search(text) is not None
    )


def keyword_token_lists(
    texts: Sequence[str], language: str = DEFAULT_LANGUAGE, *, stem: bool = True
) -> list[list[str]]:
    """Return ``keyword_tokens`` of each text, lower-casing and looking up their tokens together.

    The texts are tokenised as one text joined by line breaks, each within its own span.
    """
    joined = "\n".join(texts)
    lowered = joined.lower()
    if len(lowered) != len(joined) or _has_cjk(lowered):
        # Lower-casing moved the spans (a dotted capital I) or bigrams are needed: one by one.
        return [keyword_tokens(text, language, stem=stem) for text in texts]
    findall = _WORD_RE.findall
    keywords = _keyword_table(language, stem)
    keyword_of = keywords.__getitem__
    lists = []
    start = 0
    for text in texts:
        end = start + len(text)
        tokens = findall(lowered, start, end)
        start = end + 1
        try:
            lists.append(list(filter(None, map(keyword_of, tokens))))
        except KeyError:  # tokens never seen before
            # Text by text, as ``keyword_tokens`` would: NLTK's Arabic stemmer keeps state from
            # one word to the next, so its stems depend on the order words are first seen.
            _learn_keywords(keywords, tokens, language, stem)
            lists.append(list(filter(None, map(keyword_of, tokens))))
    return lists


def stem_counts(counts: Counter[str], language: str) -> Counter[str]:
    """Map the counts of unstemmed keywords (``stem=False``) to counts of their stems."""
    stem = stemmer(language)
    stemmed: Counter[str] = Counter()
    for token, count in counts.items():
        stemmed[stem(token)] += count
    return stemmed


_KEYWORD_TABLE_SIZE = 500_000


@lru_cache(maxsize=64)
def _keyword_table(language: str, stem: bool) -> dict[str, str]:
    """Return the language's memo of token -> keyword ("" for tokens that are no keyword)."""
    return {}


def _learn_keywords(keywords: dict[str, str], tokens: list[str], language: str, stem: bool) -> None:
    """Add the tokens missing from a keyword table (emptied first when it would grow too big)."""
    unseen = set(tokens).difference(keywords)
    if not unseen:
        return
    if len(keywords) + len(unseen) > _KEYWORD_TABLE_SIZE:
        keywords.clear()
        unseen = set(tokens)
    ignored = stopwords(language)
    stem_of = stemmer(language)
    for token in unseen:  # in this order: see ``keyword_token_lists``
        if (
            token in ignored
            or token.isdigit()
            or not token.strip("_")  # only underscores
            or (len(token) <= 1 and not _CJK_RE.match(token))
        ):
            keywords[token] = ""
        else:
            keywords[token] = stem_of(token) if stem else token


def keyword_counts(texts: Iterable[str], language: str = DEFAULT_LANGUAGE) -> Counter[str]:
    """Count the keywords of several texts together."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(keyword_tokens(text, language))
    return counts
