"""trafilatura over every page of a folder in one process, written as JSON Lines.

The counterpart of ``websim extract FOLDER -o OUT`` for ``benchmarks/extraction.py
--whole-process``: it imports nothing of websim, so its start-up is trafilatura's alone.

Usage::

    python benchmarks/trafilatura_folder.py FOLDER OUTPUT.jsonl
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import trafilatura


def trafilatura_extract(data: bytes) -> str:
    """Run trafilatura with its evaluation settings (no comments, tables kept)."""
    result = trafilatura.extract(
        data, include_comments=False, include_tables=True, include_formatting=False
    )
    return result or ""


def main(argv: Sequence[str]) -> int:
    folder, output = Path(argv[0]), Path(argv[1])
    with output.open("w", encoding="utf-8") as out:
        for path in sorted(folder.iterdir()):
            text = trafilatura_extract(path.read_bytes())
            out.write(json.dumps({"url": path.as_uri(), "main_text": text}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
