"""Fixtures shared by the command-line tests of this folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

SCALE_KERNEL = Path(__file__).parent / "fixtures" / "scale_kernel.py"


@pytest.fixture
def spec(tmp_path: Path) -> str:
    """A fresh copy of fixtures/scale_kernel.py, as the command line names a kernel: ``file::scale``."""
    p = tmp_path / "scale_kernel.py"
    shutil.copy(SCALE_KERNEL, p)
    return f"{p}::scale"
