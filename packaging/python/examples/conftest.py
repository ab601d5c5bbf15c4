"""The example suite of the loft-server pytest plugin.

By default every test runs on the plugin's fixtures: one Loft for the session, reset before
each test. ``--backend moto`` runs the boto3 tests (test_sqs.py, test_sns.py) on moto's
``ThreadedMotoServer`` instead, reset through ``/moto-api/reset`` before each test, so the
two can be timed on the same suite (compare.sh)."""

import http.server
import json
import socket
import threading
import urllib.request

import boto3
import pytest


def pytest_addoption(parser):
    parser.addoption("--backend", default="loft", choices=["loft", "moto"],
                     help="the server the boto3 examples run against")


@pytest.fixture(scope="session")
def moto_url():
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def endpoint(request):
    """The endpoint of this test's freshly reset server."""
    if request.config.getoption("--backend") == "moto":
        url = request.getfixturevalue("moto_url")
        urllib.request.urlopen(urllib.request.Request(url + "/moto-api/reset", data=b"",
                                                      method="POST"), timeout=10).close()
        return url
    return request.getfixturevalue("loft_endpoint")


def client(service, endpoint):
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


@pytest.fixture
def sqs(request, endpoint):
    if request.config.getoption("--backend") == "loft":
        return request.getfixturevalue("sqs_client")
    return client("sqs", endpoint)


@pytest.fixture
def sns(request, endpoint):
    if request.config.getoption("--backend") == "loft":
        return request.getfixturevalue("sns_client")
    return client("sns", endpoint)


class FunctionHost:
    """A Lambda-style function behind a plain HTTP handler (Loft's ``url`` functions): each
    POST body is an SQS event, handled by Powertools' ``BatchProcessor``; a record whose
    body is ``fail`` fails, the others are kept in ``handled``."""

    def __init__(self):
        from aws_lambda_powertools.utilities.batch import (
            BatchProcessor, EventType, process_partial_response)

        self.handled = []
        self.arrived = threading.Condition()
        host = self

        def record_handler(record):
            if record.body == "fail":
                raise ValueError("this record fails")
            with host.arrived:
                host.handled.append(record.body)
                host.arrived.notify_all()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                event = json.loads(self.rfile.read(int(self.headers["content-length"])))
                answer = process_partial_response(event=event, record_handler=record_handler,
                                                  processor=BatchProcessor(EventType.SQS),
                                                  context=None)
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count, timeout=20.0):
        """The handled bodies once at least ``count`` arrived (at most ``timeout`` s)."""
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.handled) >= count, timeout)
            return list(self.handled)


@pytest.fixture(scope="session")
def function_host():
    host = FunctionHost()
    yield host
    host.server.shutdown()


@pytest.fixture(scope="session")
def loft_config(function_host):
    """The session's Loft knows one function, the Powertools handler above."""
    return f"""
[[functions]]
name = "batch-handler"
url = "{function_host.url}"
timeout_seconds = 10
"""
