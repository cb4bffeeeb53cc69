"""Shared fixtures: a Vix Note host that checks every response it gets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from vixhost import VixHost  # noqa: E402


@pytest.fixture
def host() -> VixHost:
    """Runs cells as Vix Note does; every run must be handled cleanly by the host."""
    return VixHost()
