"""AugCLIP Studio web app: ``python app.py [--clip-model SPEC] [--host ADDRESS] [--port N] ...``.

``python app.py --help`` lists the options; each one falls back to its environment variable (the
Space runs this file as is and configures it with variables). The code is in augclip_demo.ui.launch.
"""

import sys

from augclip_demo.ui.launch import main

if __name__ == "__main__":
    sys.exit(main())
