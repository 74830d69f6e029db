"""AugCLIP Studio web app: ``python app.py [--clip-model SPEC] [--host ADDRESS] [--port N] ...``.

``python app.py --help`` lists the options; each one falls back to its environment variable (the
Space runs this file as is and configures it with variables). The code is in augclip_demo.ui.launch.
"""

import os
import sys

# OpenMP's worker threads spin after each parallel region by default and take the cores the event loop
# needs to answer page loads; passive waiting halved their 90th percentile on 2 cores (docs/security.md).
# Set before torch is imported (an operator's own OMP_WAIT_POLICY wins).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from augclip_demo.ui.launch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
