"""AugCLIP Studio web app: ``python app.py [--clip-model SPEC] [--host ADDRESS] [--port N] ...``.

``python app.py --help`` lists the options; each one falls back to its environment variable (the
Space runs this file as is and configures it with variables). The code is in augclip_demo.ui.launch.
"""

import sys

from augclip_demo.config import prepare_server_process

prepare_server_process()  # before torch is imported (OMP_WAIT_POLICY=PASSIVE; see the function)

from augclip_demo.ui.launch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
