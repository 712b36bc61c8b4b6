"""`python -m pipeline.app.cli`: the `cacheeval` command."""
import sys

from pipeline.app.cli import main

if __name__ == "__main__":  # worker processes (spawned) import this module again: they must not run it
    sys.exit(main())
