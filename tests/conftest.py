"""Shared fixtures: a Vix Note host that checks every response it gets."""

from __future__ import annotations

import pytest
from vixhost import VixHost


@pytest.fixture
def host() -> VixHost:
    """Runs cells as Vix Note does; every run must be handled cleanly by the host."""
    return VixHost()
