"""``python -m rag_plugin.cli``."""

from rag_plugin.cli import main

# Guarded so that importing every module (the dependency-rule test does) runs nothing.
if __name__ == "__main__":
    raise SystemExit(main())
