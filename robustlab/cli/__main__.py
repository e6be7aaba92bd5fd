"""``python -m robustlab.cli``: the same as the ``robustlab`` command."""
import sys

from robustlab.cli import main

sys.exit(main())
