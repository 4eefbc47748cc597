"""The pure core never imports scrapy or twisted (STYLE.md: pure core, thin adapters)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import websim_crawler.core


def test_core_modules_import_without_scrapy_or_twisted() -> None:
    modules = [
        info.name
        for info in pkgutil.walk_packages(websim_crawler.core.__path__, "websim_crawler.core.")
    ]
    assert "websim_crawler.core.text" in modules
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted'))\n"
        "print(','.join(leaked))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "", f"core imports {result.stdout.strip()}"
