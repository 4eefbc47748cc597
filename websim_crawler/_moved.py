"""Import paths the README and docs named before the modules moved into their rooms.

``import websim_crawler.similarity`` gives the module ``websim_crawler.core.similarity`` itself
(not a copy), so code and settings written against the documented paths keep working and no
second module carries the old name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

MOVED_MODULES = {
    "websim_crawler.similarity": "websim_crawler.core.similarity",
    "websim_crawler.decoding": "websim_crawler.middlewares.response_decoding",
}
"""Old documented module path -> the module's home."""


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Find an old path of ``MOVED_MODULES`` and load it as the module at its new home."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED_MODULES[spec.name])
        spec.loader_state = module.__spec__  # the import system sets the alias' spec on it
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Give the module back its own spec; nothing to run, it was imported at its home."""
        assert module.__spec__ is not None
        module.__spec__ = module.__spec__.loader_state


_FINDER = _MovedModuleFinder()


def install_moved_module_aliases() -> None:
    """Put the finder of the old paths on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
