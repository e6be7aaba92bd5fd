"""``python -m robustlab``: the same as the ``robustlab`` command (and ``python -m robustlab.cli``), exit codes
included."""
import sys

from robustlab.cli import main

sys.exit(main())
