"""pytest fixtures for Loft (registered by the ``loft-server`` package's ``pytest11``
entry point, so installing the package is all a suite needs).

- ``loft_config`` (session): TOML text of a Loft config whose resources every test starts
  with; ``None`` by default. Override it in a ``conftest.py``.
- ``loft_server`` (session): one :class:`loft_server.LoftServer` for the whole run, on a
  free port with a temporary database.
- ``loft_endpoint`` (function): the server's URL, after a reset, so each test that uses it
  starts from an empty Loft (plus ``loft_config``'s resources).
- ``sqs_client`` / ``sns_client`` (function): boto3 clients for ``loft_endpoint`` (region
  us-east-1, placeholder credentials); skipped with a reason when boto3 is missing.
"""

from __future__ import annotations

from typing import Optional

import pytest

from . import LoftServer


@pytest.fixture(scope="session")
def loft_config() -> Optional[str]:
    """Config text for the session's server; override to pre-create queues and topics."""
    return None


@pytest.fixture(scope="session")
def loft_server(loft_config):
    """The session's Loft process."""
    server = LoftServer(config=loft_config).start()
    yield server
    server.stop()


@pytest.fixture
def loft_endpoint(loft_server) -> str:
    """The Loft URL for this test, emptied before it runs."""
    loft_server.reset()
    return loft_server.endpoint


def _client(service: str, endpoint: str):
    boto3 = pytest.importorskip("boto3")
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


@pytest.fixture
def sqs_client(loft_endpoint):
    """A boto3 SQS client for this test's (reset) Loft."""
    return _client("sqs", loft_endpoint)


@pytest.fixture
def sns_client(loft_endpoint):
    """A boto3 SNS client for this test's (reset) Loft."""
    return _client("sns", loft_endpoint)
