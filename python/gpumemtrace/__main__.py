"""python -m gpumemtrace: the gpumemtrace CLI."""
import sys

from . import main

sys.exit(main())
