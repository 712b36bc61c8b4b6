"""`python -m pipeline.cli`: the `cacheeval` command."""
import sys

from pipeline.cli import main

sys.exit(main())
