"""``python -m augclip_demo``: see :mod:`augclip_demo.cli`."""

import sys

from .cli import main

sys.exit(main())
