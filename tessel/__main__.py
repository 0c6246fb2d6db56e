"""``python -m tessel``: the same as the ``tessel`` command."""

import sys

from .cli import main

sys.exit(main())
