"""pytest set-up for the cocotb benches: ``verif/`` is importable (``harness``, ``benchlib``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
