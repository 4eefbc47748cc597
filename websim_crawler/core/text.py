"""Language-aware text processing: tokens, stopwords, stemming and keyword counts.

Everything works offline. Stemmers (``STEMMERS``): ``snowball``, the default, is the Snowball
project's C code through PyStemmer (English: Porter2); ``porter`` is the same but Martin Porter's
original 1980 algorithm for English; ``nltk`` is NLTK's Python code (English: NLTK's own Porter
variant with its extensions; other languages: NLTK's Snowball). Stopwords come from the
``stop-words`` package, joined with NLTK's corpus when the ``nltk`` stemmer is chosen and the
corpus is installed: NLTK is imported only then (its import alone takes seconds). Chinese and
Japanese runs, which have no spaces, become overlapping character bigrams.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import chain, compress, repeat
from operator import is_not

import Stemmer
import stop_words

from websim_crawler.errors import ConfigError

DEFAULT_LANGUAGE = "en"
STEMMERS = ("snowball", "porter", "nltk")
DEFAULT_STEMMER = "snowball"
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
# Languages whose Snowball algorithm libstemmer (PyStemmer) has but NLTK does not.
_LIBSTEMMER_ONLY_NAMES = {
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "cs": "czech",
    "eo": "esperanto",
    "et": "estonian",
    "el": "greek",
    "hi": "hindi",
    "id": "indonesian",
    "ga": "irish",
    "lt": "lithuanian",
    "ne": "nepali",
    "fa": "persian",
    "pl": "polish",
    "sr": "serbian",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}


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
    from websim_crawler.core.language_model import language_identifier

    return language_identifier()


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
def stopwords(language: str, stemmer_name: str = DEFAULT_STEMMER) -> frozenset[str]:
    """Return the stopword set of a language (English's when the language has none)."""
    words: set[str] = set()
    name = stop_words.LANGUAGE_MAPPING.get(language)
    if name and stemmer_name == "nltk":
        try:
            from nltk.corpus import stopwords as nltk_stopwords

            words.update(nltk_stopwords.words(name))
        except (LookupError, OSError):
            pass
    if name:
        words.update(stop_words.get_stop_words(language))
    if not words:
        words.update(stop_words.get_stop_words(DEFAULT_LANGUAGE))
    return frozenset(word.lower() for word in words)


@lru_cache(maxsize=64)
def stemmer(language: str, stemmer_name: str = DEFAULT_STEMMER) -> Callable[[str], str]:
    """Return the stem function of a language (identity where no stemmer has it).

    ``stemmer_name`` is one of ``STEMMERS``. The Snowball algorithms are the same in PyStemmer and
    NLTK, but PyStemmer has 18 more languages; for English each name gives its own algorithm
    (see the module).
    """
    if stemmer_name not in STEMMERS:
        raise ConfigError(f"unknown stemmer {stemmer_name!r}, expected one of {STEMMERS}")
    if language == "en":
        algorithm = {"snowball": "english", "porter": "porter", "nltk": "nltk-porter"}[stemmer_name]
    elif stemmer_name == "nltk":
        algorithm = _SNOWBALL_NAMES.get(language, "")
    else:
        algorithm = _SNOWBALL_NAMES.get(language) or _LIBSTEMMER_ONLY_NAMES.get(language, "")
    if not algorithm:
        return _identity
    if stemmer_name == "nltk":
        return _nltk_stemmer(algorithm)
    return _snowball_stemmer(algorithm)


def _snowball_stemmer(algorithm: str) -> Callable[[str], str]:
    """Return PyStemmer's stem function, one stemmer object per thread (they are not shared)."""
    local = threading.local()

    def stem(word: str) -> str:
        try:
            return local.stem_word(word)
        except AttributeError:  # the first word of this thread
            local.stem_word = Stemmer.Stemmer(algorithm).stemWord
            return local.stem_word(word)

    return stem


def _nltk_stemmer(algorithm: str) -> Callable[[str], str]:
    """Return NLTK's stemmer for a Snowball algorithm name (``nltk-porter``: its Porter)."""
    from nltk.stem import PorterStemmer, SnowballStemmer  # imported only when chosen

    if algorithm == "nltk-porter":
        return lru_cache(maxsize=200_000)(PorterStemmer().stem)
    return lru_cache(maxsize=200_000)(SnowballStemmer(algorithm).stem)


def _identity(token: str) -> str:
    return token


def keyword_tokens(
    text: str,
    language: str = DEFAULT_LANGUAGE,
    *,
    stem: bool = True,
    stemmer_name: str = DEFAULT_STEMMER,
) -> list[str]:
    """Tokenise, drop stopwords and stem: the keywords of a text, in order.

    With ``stem=False`` the keywords are the lower-cased tokens themselves;
    ``stemmer(language, stemmer_name)`` maps them to the stemmed keywords later.
    """
    lowered = text.lower()
    tokens = tokenize(text) if _has_cjk(lowered) else _WORD_RE.findall(lowered)
    keywords = _keyword_table(language, stemmer_name)
    try:
        return _keywords_of(tokens, keywords, stem)
    except KeyError:  # tokens never seen before
        _learn_keywords(keywords, tokens, language, stemmer_name)
        return _keywords_of(tokens, keywords, stem)


def _keywords_of(tokens: list[str], keywords: dict[str, str | None], stem: bool) -> list[str]:
    """Return the keywords of known tokens: their stems, or the tokens themselves (no stem)."""
    keyword_of = keywords.__getitem__
    if stem:  # a stem may be "" (Greek's of a few words): no keyword, as before stemming
        return list(filter(None, map(keyword_of, tokens)))
    return list(compress(tokens, map(is_not, map(keyword_of, tokens), repeat(None))))


def _has_cjk(text: str) -> bool:
    """Tell whether the text holds Chinese or Japanese characters."""
    return (
        not text.isascii()
        and _CJK_SPAN_RE.search(text) is not None
        and _CJK_RE.search(text) is not None
    )


def keyword_token_lists(
    texts: Sequence[str],
    language: str = DEFAULT_LANGUAGE,
    *,
    stem: bool = True,
    stemmer_name: str = DEFAULT_STEMMER,
) -> list[list[str]]:
    """Return ``keyword_tokens`` of each text, lower-casing and looking up their tokens together.

    The texts are tokenised as one text joined by line breaks, each within its own span; tokens
    never seen before are learned all at once.
    """
    joined = "\n".join(texts)
    lowered = joined.lower()
    if len(lowered) != len(joined) or _has_cjk(lowered):
        # Lower-casing moved the spans (a dotted capital I) or bigrams are needed: one by one.
        return [
            keyword_tokens(text, language, stem=stem, stemmer_name=stemmer_name) for text in texts
        ]
    findall = _WORD_RE.findall
    token_lists = []
    start = 0
    for text in texts:
        end = start + len(text)
        token_lists.append(findall(lowered, start, end))
        start = end + 1
    keywords = _keyword_table(language, stemmer_name)
    try:
        return [_keywords_of(tokens, keywords, stem) for tokens in token_lists]
    except KeyError:  # tokens never seen before
        _learn_keywords(keywords, chain.from_iterable(token_lists), language, stemmer_name)
        return [_keywords_of(tokens, keywords, stem) for tokens in token_lists]


def stem_counts(
    counts: Counter[str], language: str, stemmer_name: str = DEFAULT_STEMMER
) -> Counter[str]:
    """Map the counts of unstemmed keywords (``stem=False``) to counts of their stems."""
    stem = stemmer(language, stemmer_name)
    stemmed: Counter[str] = Counter()
    for token, count in counts.items():
        stemmed[stem(token)] += count
    return stemmed


_KEYWORD_TABLE_SIZE = 500_000


@lru_cache(maxsize=64)
def _keyword_table(language: str, stemmer_name: str) -> dict[str, str | None]:
    """Return the language's memo of token -> its stem, ``None`` for tokens that are no keyword
    (stopwords, numbers, single letters)."""
    return {}


def _learn_keywords(
    keywords: dict[str, str | None], tokens: Iterable[str], language: str, stemmer_name: str
) -> None:
    """Add the tokens missing from a keyword table (emptied first when it would grow too big)."""
    distinct = set(tokens)
    unseen = distinct.difference(keywords)
    if not unseen:
        return
    if len(keywords) + len(unseen) > _KEYWORD_TABLE_SIZE:
        keywords.clear()
        unseen = distinct
    ignored = stopwords(language, stemmer_name)
    stem_of = stemmer(language, stemmer_name)
    for token in unseen:
        if (
            token in ignored
            or token.isdigit()
            or not token.strip("_")  # only underscores
            or (len(token) <= 1 and not _CJK_RE.match(token))
        ):
            keywords[token] = None
        else:
            keywords[token] = stem_of(token)


def keyword_forms(
    text: str, language: str = DEFAULT_LANGUAGE, stemmer_name: str = DEFAULT_STEMMER
) -> dict[str, dict[str, int]]:
    """Count the surface forms (lower-cased) of each keyword stem of a text.

    ``{"telescop": {"telescopes": 2, "telescope": 1}}``: what a report shows instead of the stem.
    """
    stem = stemmer(language, stemmer_name)
    known_stems = _keyword_table(language, stemmer_name)  # the stems already worked out
    forms: dict[str, dict[str, int]] = {}
    tokens = keyword_tokens(text, language, stem=False, stemmer_name=stemmer_name)
    for token, count in Counter(tokens).items():
        key = known_stems.get(token) or stem(token)
        found = forms.get(key)
        if found is None:
            forms[key] = {token: count}
        else:
            found[token] = count  # each token once: Counter(tokens) counted it
    return forms


def keyword_words(
    stem_counts: Mapping[str, int],
    text: str,
    language: str = DEFAULT_LANGUAGE,
    stemmer_name: str = DEFAULT_STEMMER,
) -> dict[str, int]:
    """Name each keyword stem by its most frequent surface form in ``text``, with its count.

    ``{"librari": 3}`` -> ``{"libraries": 3}`` when "libraries" is the commoner form there (ties:
    the shortest form, then the alphabetically first); a stem ``text`` lacks stays as it is.
    """
    forms = keyword_forms(text, language, stemmer_name)
    words: Counter[str] = Counter()
    for stem, count in stem_counts.items():
        found = forms.get(stem)
        if not found:
            words[stem] += count
        elif len(found) == 1:  # most stems have one form
            words[next(iter(found))] += count
        else:
            words[min(found.items(), key=_commonest_first)[0]] += count
    return dict(words.most_common())


def _commonest_first(form: tuple[str, int]) -> tuple[int, int, str]:
    """Sort key of ``(word, count)``: the commonest, then the shortest, then alphabetical."""
    word, count = form
    return (-count, len(word), word)


def keyword_counts(texts: Iterable[str], language: str = DEFAULT_LANGUAGE) -> Counter[str]:
    """Count the keywords of several texts together."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(keyword_tokens(text, language))
    return counts
