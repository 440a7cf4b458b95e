"""python -m deg.server: run the deg HTTP server (see deg.server)."""
import sys

from . import main

sys.exit(main())
