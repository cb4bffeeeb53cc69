"""Which addresses a kernel may listen on without a token or key: loopback ones only."""

from __future__ import annotations

import pytest

from pyrelune.transports.addresses import is_loopback


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.8.9.10", "::1"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "example.org",
                                  "", "LOCALHOST.example"])
def test_addresses_others_can_reach_or_that_are_not_addresses(host: str) -> None:
    assert not is_loopback(host)
