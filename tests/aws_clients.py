#!/usr/bin/env python3
"""Real AWS clients against a running Loft: boto3 (client and resource APIs), the AWS CLI
v1 and a raw Query request parsed by a conforming XML parser.

Starts nothing itself: give it the server with --endpoint (tests/run_aws_clients.sh starts
one). Dummy credentials and the region come from the environment, or are set here when
absent. Each check uses queue names unique to this run, so the script can run again
against the same server. Prints one line per check and, last, "N passed, N failed"; exits
non-zero when a check failed.
"""

import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import boto3
import botocore
from botocore.config import Config

for key, value in {
    "AWS_ACCESS_KEY_ID": "x",
    "AWS_SECRET_ACCESS_KEY": "x",
    "AWS_DEFAULT_REGION": "us-east-1",
}.items():
    os.environ.setdefault(key, value)
# Never read the developer's own AWS configuration.
os.environ["AWS_CONFIG_FILE"] = os.devnull
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull

ACCOUNT = "000000000000"
RUN = str(int(time.time() * 1000) % 10_000_000)
CHECKS = []


def check(fn):
    """Registers a check: a function taking the endpoint that raises on failure."""
    CHECKS.append(fn)
    return fn


def name(base):
    return f"{base}-{RUN}"


def client(endpoint, validate=True):
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        config=Config(
            parameter_validation=validate,
            retries={"max_attempts": 1, "mode": "standard"},
        ),
    )


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def md5_of_attributes(attributes):
    """MD5OfMessageAttributes as the SQS Developer Guide defines it."""
    buf = b""

    def put(b):
        return struct.pack(">I", len(b)) + b

    for key in sorted(attributes, key=lambda k: k.encode()):
        value = attributes[key]
        buf += put(key.encode()) + put(value["DataType"].encode())
        if "BinaryValue" in value:
            buf += b"\x02" + put(value["BinaryValue"])
        else:
            buf += b"\x01" + put(value["StringValue"].encode())
    return md5_hex(buf)


def expect_error(fn, code, status, exception=None):
    """Runs fn, which must fail with error `code` (the Query code boto3 reports) and HTTP
    `status`; when `exception` is given, boto3 must raise that modeled exception class."""
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        got = (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"])
        assert got == (code, status), f"expected {(code, status)}, got {got}: {e}"
        if exception is not None:
            assert isinstance(e, exception), f"{type(e).__name__} is not {exception.__name__}"
        return e
    raise AssertionError(f"expected {code} ({status}), got success")


# ---------------------------------------------------------------- boto3 client API


@check
def boto3_create_queue_with_attributes_and_tags(endpoint):
    sqs = client(endpoint)
    q = name("orders")
    url = sqs.create_queue(
        QueueName=q,
        Attributes={"VisibilityTimeout": "45", "DelaySeconds": "0", "MessageRetentionPeriod": "3600"},
        tags={"team": "core"},
    )["QueueUrl"]
    assert url == f"{endpoint}/{ACCOUNT}/{q}", url
    assert sqs.get_queue_url(QueueName=q)["QueueUrl"] == url
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "45", attrs
    assert attrs["MessageRetentionPeriod"] == "3600", attrs
    assert attrs["QueueArn"] == f"arn:aws:sqs:us-east-1:{ACCOUNT}:{q}", attrs
    assert attrs["ApproximateNumberOfMessages"] == "0", attrs
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "core"}
    # Same attributes again: the same queue.
    again = sqs.create_queue(QueueName=q, Attributes={"VisibilityTimeout": "45"})["QueueUrl"]
    assert again == url
    assert url in sqs.list_queues(QueueNamePrefix=q)["QueueUrls"]


@check
def boto3_send_receive_delete_with_attributes(endpoint):
    sqs = client(endpoint)
    url = sqs.create_queue(QueueName=name("work"))["QueueUrl"]
    body = "héllo \"world\"\r\n<&>"
    attributes = {
        "colour": {"DataType": "String", "StringValue": "blue"},
        "count": {"DataType": "Number", "StringValue": "42"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
    }
    sent = sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attributes)
    assert sent["MD5OfMessageBody"] == md5_hex(body.encode()), sent
    assert sent["MD5OfMessageAttributes"] == md5_of_attributes(attributes), sent
    got = sqs.receive_message(
        QueueUrl=url,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
        WaitTimeSeconds=1,
    )["Messages"]
    assert len(got) == 1, got
    m = got[0]
    assert m["MessageId"] == sent["MessageId"]
    assert m["Body"] == body
    assert m["MD5OfBody"] == md5_hex(body.encode())
    assert m["MessageAttributes"] == attributes, m["MessageAttributes"]
    assert m["MD5OfMessageAttributes"] == md5_of_attributes(attributes)
    assert m["Attributes"]["ApproximateReceiveCount"] == "1", m["Attributes"]
    assert m["Attributes"]["SenderId"] == ACCOUNT
    assert abs(int(m["Attributes"]["SentTimestamp"]) - time.time() * 1000) < 60_000
    # Only the selected attributes, and their digest.
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
    again = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["colour"])["Messages"][0]
    assert set(again["MessageAttributes"]) == {"colour"}
    assert again["MD5OfMessageAttributes"] == md5_of_attributes({"colour": attributes["colour"]})
    assert again["ReceiptHandle"] != m["ReceiptHandle"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


@check
def boto3_batches_and_per_entry_failures(endpoint):
    sqs = client(endpoint)
    url = sqs.create_queue(QueueName=name("batch"))["QueueUrl"]
    entries = [{"Id": f"m{i}", "MessageBody": f"body {i}"} for i in range(9)]
    entries.append({"Id": "bad", "MessageBody": "bad \x01"})
    out = sqs.send_message_batch(QueueUrl=url, Entries=entries)
    assert sorted(s["Id"] for s in out["Successful"]) == [f"m{i}" for i in range(9)], out
    for s in out["Successful"]:
        assert s["MD5OfMessageBody"] == md5_hex(f"body {s['Id'][1:]}".encode())
    assert [(f["Id"], f["Code"], f["SenderFault"]) for f in out["Failed"]] == [
        ("bad", "InvalidMessageContents", True)
    ], out["Failed"]
    handles = {}
    for _ in range(10):
        for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            handles[m["Body"]] = m["ReceiptHandle"]
        if len(handles) == 9:
            break
    assert len(handles) == 9, handles
    hs = list(handles.values())
    cv = sqs.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "ReceiptHandle": hs[0], "VisibilityTimeout": 120},
            {"Id": "b", "ReceiptHandle": "garbage", "VisibilityTimeout": 1},
        ],
    )
    assert [s["Id"] for s in cv["Successful"]] == ["a"], cv
    assert [(f["Id"], f["Code"]) for f in cv["Failed"]] == [("b", "ReceiptHandleIsInvalid")], cv
    deleted = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[{"Id": f"d{i}", "ReceiptHandle": h} for i, h in enumerate(hs)],
    )
    assert len(deleted["Successful"]) == 9 and not deleted.get("Failed"), deleted
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["ApproximateNumberOfMessages"] == "0" and attrs["ApproximateNumberOfMessagesNotVisible"] == "0"


@check
def boto3_malformed_batches_fail_whole(endpoint):
    sqs = client(endpoint, validate=False)
    url = sqs.create_queue(QueueName=name("badbatch"))["QueueUrl"]
    ex = sqs.exceptions
    expect_error(
        lambda: sqs.send_message_batch(QueueUrl=url, Entries=[]),
        "AWS.SimpleQueueService.EmptyBatchRequest", 400, ex.EmptyBatchRequest,
    )
    expect_error(
        lambda: sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": f"e{i}", "MessageBody": "x"} for i in range(11)]
        ),
        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", 400, ex.TooManyEntriesInBatchRequest,
    )
    expect_error(
        lambda: sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[{"Id": "same", "ReceiptHandle": "a"}, {"Id": "same", "ReceiptHandle": "b"}],
        ),
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400, ex.BatchEntryIdsNotDistinct,
    )
    expect_error(
        lambda: sqs.change_message_visibility_batch(
            QueueUrl=url, Entries=[{"Id": "no.dots", "ReceiptHandle": "a", "VisibilityTimeout": 1}]
        ),
        "AWS.SimpleQueueService.InvalidBatchEntryId", 400, ex.InvalidBatchEntryId,
    )
    big = "x" * (600 * 1024)
    expect_error(
        lambda: sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": "a", "MessageBody": big}, {"Id": "b", "MessageBody": big}]
        ),
        "AWS.SimpleQueueService.BatchRequestTooLong", 400, ex.BatchRequestTooLong,
    )


@check
def boto3_errors_with_their_codes(endpoint):
    sqs = client(endpoint, validate=False)
    ex = sqs.exceptions
    q = name("errors")
    url = sqs.create_queue(QueueName=q, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    expect_error(
        lambda: sqs.get_queue_url(QueueName=name("missing")),
        "AWS.SimpleQueueService.NonExistentQueue", 400, ex.QueueDoesNotExist,
    )
    expect_error(
        lambda: sqs.send_message(QueueUrl=f"{endpoint}/{ACCOUNT}/{name('missing')}", MessageBody="x"),
        "AWS.SimpleQueueService.NonExistentQueue", 400, ex.QueueDoesNotExist,
    )
    expect_error(
        lambda: sqs.create_queue(QueueName=q, Attributes={"VisibilityTimeout": "31"}),
        "QueueAlreadyExists", 400, ex.QueueNameExists,
    )
    expect_error(
        lambda: sqs.create_queue(QueueName=name("x"), Attributes={"Colour": "blue"}),
        "InvalidAttributeName", 400, ex.InvalidAttributeName,
    )
    expect_error(
        lambda: sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "43201"}),
        "InvalidAttributeValue", 400, ex.InvalidAttributeValue,
    )
    expect_error(
        lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Colour"]),
        "InvalidAttributeName", 400, ex.InvalidAttributeName,
    )
    for bad in ({"MaxNumberOfMessages": 0}, {"MaxNumberOfMessages": 11}, {"WaitTimeSeconds": 21},
                {"VisibilityTimeout": 43201}):
        expect_error(lambda: sqs.receive_message(QueueUrl=url, **bad), "InvalidParameterValue", 400)
    expect_error(
        lambda: sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=901),
        "InvalidParameterValue", 400,
    )
    expect_error(
        lambda: sqs.send_message(QueueUrl=url, MessageBody="bad \x01"),
        "InvalidMessageContents", 400, ex.InvalidMessageContents,
    )
    expect_error(
        lambda: sqs.send_message(QueueUrl=url, MessageBody="x" * (1024 * 1024 + 1)),
        "InvalidParameterValue", 400,
    )
    expect_error(
        lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle="garbage"),
        "ReceiptHandleIsInvalid", 400, ex.ReceiptHandleIsInvalid,
    )
    sqs.send_message(QueueUrl=url, MessageBody="m")
    h = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"][0]["ReceiptHandle"]
    expect_error(
        lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=43201),
        "InvalidParameterValue", 400,
    )
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=0)
    # Visible again, its latest handle still hides it: AWS answers 200 (recorded).
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=10)
    a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"])
    assert a["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "1", a


@check
def boto3_purge_and_purge_in_progress(endpoint):
    sqs = client(endpoint)
    url = sqs.create_queue(QueueName=name("purge"))["QueueUrl"]
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=str(i))
    sqs.purge_queue(QueueUrl=url)
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    assert attrs["Attributes"]["ApproximateNumberOfMessages"] == "0", attrs
    expect_error(
        lambda: sqs.purge_queue(QueueUrl=url),
        "AWS.SimpleQueueService.PurgeQueueInProgress", 403, sqs.exceptions.PurgeQueueInProgress,
    )


@check
def boto3_tags(endpoint):
    sqs = client(endpoint)
    url = sqs.create_queue(QueueName=name("tags"))["QueueUrl"]
    assert "Tags" not in sqs.list_queue_tags(QueueUrl=url)
    sqs.tag_queue(QueueUrl=url, Tags={"a": "1", "b": "2"})
    sqs.untag_queue(QueueUrl=url, TagKeys=["a"])
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"b": "2"}


@check
def boto3_dead_letter_queue_and_redrive(endpoint):
    sqs = client(endpoint)
    dlq_name, src_name = name("dlq"), name("src")
    dlq = sqs.create_queue(QueueName=dlq_name)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    src = sqs.create_queue(
        QueueName=src_name,
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "1"})},
    )["QueueUrl"]
    src_arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:{src_name}"
    message_id = sqs.send_message(QueueUrl=src, MessageBody="poison")["MessageId"]
    first = sqs.receive_message(QueueUrl=src, VisibilityTimeout=0)["Messages"]
    assert first[0]["MessageId"] == message_id
    assert "Messages" not in sqs.receive_message(QueueUrl=src, VisibilityTimeout=0)
    dead = sqs.receive_message(QueueUrl=dlq, MessageSystemAttributeNames=["All"], VisibilityTimeout=0)["Messages"]
    assert dead[0]["MessageId"] == message_id, dead
    assert dead[0]["Attributes"]["DeadLetterQueueSourceArn"] == src_arn, dead[0]["Attributes"]
    assert sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"] == [src]
    handle = sqs.start_message_move_task(SourceArn=dlq_arn)["TaskHandle"]
    assert handle
    deadline = time.time() + 10
    while True:
        task = sqs.list_message_move_tasks(SourceArn=dlq_arn)["Results"][0]
        if task["Status"] == "COMPLETED" or time.time() > deadline:
            break
        time.sleep(0.1)
    assert task["Status"] == "COMPLETED", task
    assert task["ApproximateNumberOfMessagesMoved"] == 1, task
    back = sqs.receive_message(QueueUrl=src, WaitTimeSeconds=2)["Messages"]
    assert back[0]["Body"] == "poison", back


@check
def boto3_long_poll_returns_when_a_message_arrives(endpoint):
    sqs = client(endpoint)
    url = sqs.create_queue(QueueName=name("poll"))["QueueUrl"]
    result = {}

    def wait():
        start = time.time()
        result["out"] = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)
        result["elapsed"] = time.time() - start

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.7)
    client(endpoint).send_message(QueueUrl=url, MessageBody="wake")
    t.join(30)
    assert result["out"]["Messages"][0]["Body"] == "wake", result
    assert result["elapsed"] < 5, result["elapsed"]


@check
def boto3_resource_api(endpoint):
    sqs = boto3.resource("sqs", endpoint_url=endpoint)
    queue = sqs.create_queue(QueueName=name("resource"), Attributes={"DelaySeconds": "0"})
    assert queue.attributes["QueueArn"].endswith(name("resource"))
    queue.send_message(MessageBody="via resource", MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}})
    queue.send_messages(Entries=[{"Id": "1", "MessageBody": "one"}, {"Id": "2", "MessageBody": "two"}])
    seen = []
    for _ in range(10):
        for m in queue.receive_messages(MaxNumberOfMessages=10, MessageAttributeNames=["All"]):
            seen.append(m.body)
            if m.body == "via resource":
                assert m.message_attributes == {"k": {"DataType": "String", "StringValue": "v"}}
            m.delete()
        if len(seen) == 3:
            break
    assert sorted(seen) == ["one", "two", "via resource"], seen
    queue.delete()
    try:
        sqs.get_queue_by_name(QueueName=name("resource"))
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    else:
        raise AssertionError("deleted queue still found")


# ---------------------------------------------------------------- the Query protocol


def query(endpoint, params, path="/"):
    data = urllib.parse.urlencode({**params, "Version": "2012-11-05"}).encode()
    req = urllib.request.Request(endpoint + path, data=data, method="POST")
    req.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


NS = {"sqs": "http://queue.amazonaws.com/doc/2012-11-05/"}


@check
def query_protocol_round_trips_cr_and_quotes_through_an_xml_parser(endpoint):
    q = name("query")
    status, xml = query(endpoint, {"Action": "CreateQueue", "QueueName": q})
    assert status == 200, xml
    url = ET.fromstring(xml).find("sqs:CreateQueueResult/sqs:QueueUrl", NS).text
    body = 'a\r\nb "c" &quot; <d> \r'
    status, xml = query(endpoint, {"Action": "SendMessage", "QueueUrl": url, "MessageBody": body})
    assert status == 200, xml
    md5 = ET.fromstring(xml).find("sqs:SendMessageResult/sqs:MD5OfMessageBody", NS).text
    assert md5 == md5_hex(body.encode()), xml
    # Posted to the queue's URL path, without QueueUrl.
    status, xml = query(endpoint, {"Action": "ReceiveMessage", "AttributeName.1": "All"}, f"/{ACCOUNT}/{q}")
    assert status == 200, xml
    message = ET.fromstring(xml).find("sqs:ReceiveMessageResult/sqs:Message", NS)
    # expat normalises a raw CR to LF; the escaped &#xD; survives.
    assert message.find("sqs:Body", NS).text == body, repr(message.find("sqs:Body", NS).text)
    attrs = {a.find("sqs:Name", NS).text: a.find("sqs:Value", NS).text for a in message.findall("sqs:Attribute", NS)}
    assert attrs["ApproximateReceiveCount"] == "1", attrs
    status, xml = query(endpoint, {"Action": "GetQueueUrl", "QueueName": name("absent")})
    assert status == 400, xml
    error = ET.fromstring(xml).find("sqs:Error", NS)
    assert error.find("sqs:Code", NS).text == "AWS.SimpleQueueService.NonExistentQueue", xml
    assert error.find("sqs:Type", NS).text == "Sender", xml


# ---------------------------------------------------------------- the AWS CLI v1


def cli(endpoint, *args, expect_ok=True):
    proc = subprocess.run(
        ["aws", "--endpoint-url", endpoint, "--output", "json", "sqs", *args],
        capture_output=True, text=True, timeout=60,
    )
    if expect_ok:
        assert proc.returncode == 0, f"aws sqs {' '.join(args)}: {proc.returncode} {proc.stderr}"
        return json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc


@check
def aws_cli_v1_common_flow(endpoint):
    q = name("cli")
    url = cli(endpoint, "create-queue", "--queue-name", q, "--attributes", "VisibilityTimeout=40")["QueueUrl"]
    assert url == f"{endpoint}/{ACCOUNT}/{q}", url
    attrs = cli(endpoint, "get-queue-attributes", "--queue-url", url, "--attribute-names", "All")["Attributes"]
    assert attrs["VisibilityTimeout"] == "40", attrs
    attributes = {"k": {"DataType": "String", "StringValue": "v"}}
    sent = cli(endpoint, "send-message", "--queue-url", url, "--message-body", "from the cli",
               "--message-attributes", json.dumps(attributes))
    assert sent["MD5OfMessageBody"] == md5_hex(b"from the cli"), sent
    assert sent["MD5OfMessageAttributes"] == md5_of_attributes(attributes), sent
    got = cli(endpoint, "receive-message", "--queue-url", url, "--attribute-names", "All",
              "--message-attribute-names", "All", "--wait-time-seconds", "1")["Messages"]
    assert got[0]["Body"] == "from the cli", got
    assert got[0]["MessageAttributes"] == attributes, got
    assert got[0]["Attributes"]["ApproximateReceiveCount"] == "1", got
    cli(endpoint, "delete-message", "--queue-url", url, "--receipt-handle", got[0]["ReceiptHandle"])
    assert "Messages" not in cli(endpoint, "receive-message", "--queue-url", url)
    listed = cli(endpoint, "list-queues", "--queue-name-prefix", q)
    assert listed["QueueUrls"] == [url], listed
    proc = cli(endpoint, "get-queue-url", "--queue-name", name("absent"), expect_ok=False)
    assert proc.returncode != 0, proc
    assert "NonExistentQueue" in proc.stderr or "QueueDoesNotExist" in proc.stderr, proc.stderr
    cli(endpoint, "delete-queue", "--queue-url", url)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True, help="Loft's URL, e.g. http://127.0.0.1:9324")
    parser.add_argument("-k", dest="only", help="run only checks whose name contains this")
    args = parser.parse_args()
    endpoint = args.endpoint.rstrip("/")
    passed = failed = 0
    for fn in CHECKS:
        if args.only and args.only not in fn.__name__:
            continue
        start = time.time()
        try:
            fn(endpoint)
        except Exception:  # noqa: BLE001 - every failure is reported, then counted
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc(file=sys.stdout)
        else:
            passed += 1
            print(f"ok   {fn.__name__} ({time.time() - start:.1f}s)")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
