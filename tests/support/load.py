"""A loaded machine for tests and benchmarks: a process spinning on every core."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterator


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def every_core_busy(busy: bool = True) -> Iterator[None]:
    """Keep every core busy with a spinning process while the block runs (``busy=False``: a
    quiet machine, for a caller that takes both)."""
    spinners = [
        multiprocessing.Process(target=_spin, daemon=True)
        for _ in range((os.cpu_count() or 1) if busy else 0)
    ]
    try:
        for spinner in spinners:
            spinner.start()
        yield
    finally:
        for spinner in spinners:
            if spinner.is_alive():
                spinner.kill()
            spinner.join()
