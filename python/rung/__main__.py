"""`python3 -m rung`: the command line client (rung.cli)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
