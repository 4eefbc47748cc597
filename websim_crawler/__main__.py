"""``python -m websim_crawler`` runs the ``websim`` command line."""

from __future__ import annotations

import sys

from websim_crawler.cli import main

sys.exit(main())
