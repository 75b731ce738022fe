"""The experiments' tests use the helpers of tests/ (sample speech, script loading) and import the recipes they
build on."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "tests", ROOT / "recipes", ROOT / "recipes" / "data", ROOT / "benchmarks"):
    sys.path.insert(0, str(folder))
