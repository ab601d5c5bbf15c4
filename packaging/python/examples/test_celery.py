"""Celery over kombu's SQS transport, with a worker in this process."""

from urllib.parse import urlsplit

from celery import Celery
from celery.contrib.testing.worker import start_worker


def test_a_task_runs_through_loft(endpoint):
    where = urlsplit(endpoint)
    app = Celery("examples", broker=f"sqs://test:test@{where.hostname}:{where.port}",
                 backend="cache+memory://")
    app.conf.broker_transport_options = {"region": "us-east-1", "is_secure": False,
                                         "polling_interval": 0.1, "wait_time_seconds": 1}
    app.conf.task_default_queue = "celery-examples"

    @app.task
    def add(x, y):
        return x + y

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        assert add.delay(2, 3).get(timeout=20) == 5
