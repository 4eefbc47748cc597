"""Two files replaced together through a journal: after a kill both are old, or both new once
the next write has rolled forward.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from websim_crawler.core.io.output_folder import make_own_folder
from websim_crawler.core.io.temporary_files import remove_leftovers, temporary_beside

logger = logging.getLogger(__name__)


def atomic_write_pair(
    first: tuple[str | os.PathLike[str], str], second: tuple[str | os.PathLike[str], str]
) -> None:
    """Replace two text files together: after a kill both are old, or both new once recovered.

    Both texts are written to temporary files first; then a journal naming the two renames is
    written beside the first file, the renames are done in order, and the journal is deleted. A
    kill before the journal leaves both old files (the temporaries are removed by the next
    write); a kill after it is rolled forward by the next write of the pair (or of the first
    file): both renames are completed before anything else is done.
    """
    targets = [Path(first[0]), Path(second[0])]
    journal = journal_of(targets[0])
    for target in targets:
        make_own_folder(target)
    roll_forward(journal)
    temporaries: list[Path] = []
    try:
        for target, text in zip(targets, (first[1], second[1]), strict=True):
            remove_leftovers(target)
            temporary = temporary_beside(target)
            temporaries.append(temporary)
            with temporary.open("w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        renames = [
            [str(temporary), str(target)]
            for temporary, target in zip(temporaries, targets, strict=True)
        ]
        with temporary_beside(journal).open("w", encoding="utf-8") as handle:
            json.dump({"renames": renames}, handle)
            handle.flush()
            os.fsync(handle.fileno())
            journal_temporary = Path(handle.name)
        os.replace(journal_temporary, journal)
    except BaseException:
        for temporary in temporaries:
            temporary.unlink(missing_ok=True)
        raise
    roll_forward(journal, interrupted=False)


def journal_of(target: Path) -> Path:
    return target.with_name(f".{target.name}.pair.json")


def roll_forward(journal: Path, *, interrupted: bool = True) -> None:
    """Finish the renames a pair write journaled (a no-op without a journal).

    ``interrupted`` is False when the pair write that made the journal finishes its own renames:
    only the roll-forward of a journal a killed writer left behind is logged.
    """
    try:
        renames = json.loads(journal.read_text(encoding="utf-8"))["renames"]
    except FileNotFoundError:
        return
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("%s: unreadable pair journal removed (%s)", journal, exc)
        journal.unlink(missing_ok=True)
        return
    finished = 0
    for temporary, target in renames:
        if Path(temporary).exists():
            os.replace(temporary, target)
            finished += 1
    if finished and interrupted:
        logger.info("%s: finished %d rename(s) of an interrupted pair write", journal, finished)
    journal.unlink(missing_ok=True)
