"""``python -m rag_plugin.cli``."""

from rag_plugin.cli import main

raise SystemExit(main())
