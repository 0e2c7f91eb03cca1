"""``python -m tianma`` runs the CLI."""

from __future__ import annotations

from tianma.cli import main

main()
