"""Fixtures of the understudy_testing tests: the fake upstream the plugin's
server records from (see support.py)."""

import pytest

from support import FakeModel


@pytest.fixture(scope="session")
def fake_upstream():
    fake = FakeModel()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def understudy_server_args(fake_upstream):
    """The plugin's server records from the fake."""
    return ("--upstream", fake_upstream.target)
