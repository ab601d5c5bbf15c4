"""LocalStack's testcontainers module (testcontainers-python's LocalStackContainer) with
the Loft image in place of LocalStack's: the only change to such a test is the image name
(LOFT_IMAGE here). Run by tests/image/run.sh against podman's Docker-compatible API
(DOCKER_HOST, TESTCONTAINERS_RYUK_DISABLED=true).

The test code below is what a LocalStack user writes: the module starts the container
(exposing 4566 and waiting for `Ready.`), and boto3 clients from `get_client` run an SQS
and an SNS round trip; then `awslocal` (PyPI awscli-local) talks to the same container.
"""

import json
import os
import subprocess
import time

import pytest
from testcontainers.community.localstack import LocalStackContainer

IMAGE = os.environ.get("LOFT_IMAGE", "loft:latest")


@pytest.fixture(scope="module")
def localstack():
    with LocalStackContainer(image=IMAGE) as container:
        yield container


def test_sqs_round_trip(localstack):
    sqs = localstack.get_client("sqs")
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="hello")
    msgs = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert [m["Body"] for m in msgs] == ["hello"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=msgs[0]["ReceiptHandle"])
    assert url in sqs.list_queues()["QueueUrls"]


def test_sns_to_sqs_round_trip(localstack):
    sqs = localstack.get_client("sqs")
    sns = localstack.get_client("sns")
    url = sqs.create_queue(QueueName="events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    topic = sns.create_topic(Name="news")["TopicArn"]
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    sns.publish(TopicArn=topic, Message="extra extra")
    deadline = time.monotonic() + 10
    bodies = []
    while not bodies and time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", [])
        bodies = [m["Body"] for m in got]
    assert bodies == ["extra extra"]


def test_awslocal(localstack):
    port = localstack.get_exposed_port(4566)
    host = localstack.get_container_host_ip()
    env = dict(
        os.environ,
        LOCALSTACK_HOST=f"{host}:{port}",
        AWS_DEFAULT_REGION=localstack.region_name,
        DISABLE_DEPRECATION_NOTICE="1",
    )

    def awslocal(*args):
        r = subprocess.run(
            ["awslocal", *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout) if r.stdout.strip() else None

    url = awslocal("sqs", "create-queue", "--queue-name", "cli")["QueueUrl"]
    awslocal("sqs", "send-message", "--queue-url", url, "--message-body", "from awslocal")
    got = awslocal("sqs", "receive-message", "--queue-url", url)
    assert [m["Body"] for m in got["Messages"]] == ["from awslocal"]
    topic = awslocal("sns", "create-topic", "--name", "cli-topic")["TopicArn"]
    topics = awslocal("sns", "list-topics")["Topics"]
    assert {"TopicArn": topic} in topics
