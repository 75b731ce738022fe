"""Every file the package ships under seq2spec/assets is named by pyproject.toml's package data, so that an install
that is not editable has it too (a word list missing there is read as empty)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_asset_is_package_data():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    line = re.search(r"^\[tool\.setuptools\.package-data\]\nseq2spec = \[(.*)\]$", text, re.MULTILINE).group(1)
    patterns = re.findall(r'"([^"]+)"', line)
    package = ROOT / "seq2spec"
    named = {path for pattern in patterns for path in package.glob(pattern) if path.is_file()}
    assets = {path for path in (package / "assets").rglob("*") if path.is_file() and "__pycache__" not in path.parts}
    assert assets - named == set(), sorted(str(path.relative_to(package)) for path in assets - named)
