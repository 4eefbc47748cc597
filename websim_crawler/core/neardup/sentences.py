"""Sentences of a page's content region: split in any language, normalise, hash to 64 bits.

Splitting follows Shibata, Kang and Kurohashi (2010), "Finding and Classifying Near-Duplicate
Pages based on Identical Sentences Detection": sentence ends are ``.``, ``!``, ``?`` (when a space
or the end of the text follows, so ``3.14`` and ``example.com`` stay whole), the CJK full stops
``。！？`` and their full-width forms (anywhere), other scripts' terminators (Devanagari danda,
Arabic question mark, Urdu full stop) and line breaks.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

# A terminator run (with closing quotes/brackets) ends a sentence; ASCII ones need a space after.
# The ASCII run starts only where no terminator precedes it and its quantifiers are possessive, so
# a run that is not followed by a space is rejected once, in time linear in its length, instead
# of being retried from each of its characters (a run of 40,000 dots took 66 s).
_SENTENCE_END_RE = re.compile(
    r"""(?:(?<![.!?])[.!?]++["'\u2019\u201d)\]]*+(?=\s|$))"""
    r"""|(?:[\u3002\uff01\uff1f\uff0e\u0964\u0965\u061f\u06d4\u203c\u2047-\u2049]+"""
    r"""["'\u2019\u201d\u300d\u300f)\uff09\]]*)"""
)
_LINE_BREAK_RE = re.compile(r"[\r\n\u2028\u2029\u0085]+")
# Punctuation, symbols and spaces trimmed from both ends of a normalised sentence.
_EDGE_CHARACTERS = " \t\"'`()[]{}<>«»‘’“”「」『』（）【】・•·-–—*#|:;,.!?。！？、"


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at terminators and line breaks; empty pieces are dropped."""
    sentences: list[str] = []
    for line in _LINE_BREAK_RE.split(text):
        start = 0
        for match in _SENTENCE_END_RE.finditer(line):
            piece = line[start : match.end()].strip()
            if piece:
                sentences.append(piece)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            sentences.append(rest)
    return sentences


def normalize_sentence(sentence: str) -> str:
    """Fold Unicode compatibility forms and case, collapse spaces, trim edge punctuation."""
    folded = unicodedata.normalize("NFKC", sentence).casefold()
    return " ".join(folded.split()).strip(_EDGE_CHARACTERS)


def sentence_hash(normalized: str) -> int:
    """Return a 64-bit BLAKE2b fingerprint of a normalised sentence."""
    digest = hashlib.blake2b(normalized.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def long_sentence_hashes(texts: Iterable[str], min_chars: int) -> set[int]:
    """Hash the distinct sentences of ``texts`` that are at least ``min_chars`` long."""
    hashes: set[int] = set()
    for text in texts:
        for sentence in split_sentences(text):
            normalized = normalize_sentence(sentence)
            if len(normalized) >= min_chars:
                hashes.add(sentence_hash(normalized))
    return hashes
