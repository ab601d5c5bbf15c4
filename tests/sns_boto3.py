#!/usr/bin/env python3
"""End-to-end checks of Loft's SNS through boto3 (the Query protocol), read back with SQS.

Usage: sns_boto3.py --endpoint http://127.0.0.1:PORT [-k SUBSTRING]

Start a server first, e.g. `target/debug/loft serve --listen 127.0.0.1:0 --db /tmp/x.db`
(it prints its URL). Each check creates its own topics and queues under a per-run prefix,
so the script can run again against the same server. The common flows: create a topic,
subscribe an SQS queue, publish, receive the envelope (every field; the signature is
verified with the certificate at SigningCertURL when the `cryptography` package is
installed), filter policies on attributes and on the body, raw delivery, PublishBatch,
FIFO topics, a FIFO topic's archive replayed (ReplayPolicy), subscription attributes, tags,
and the errors users provoke.

Last line: `N passed, N failed`; the exit status is non-zero when any check failed.

Sources: the botocore model `sns/2010-03-31`; SNS Developer Guide "Parsing message
formats", "Amazon SNS raw message delivery", "Amazon SNS message filtering", "Amazon SNS
FIFO topics", "Verifying the signatures of Amazon SNS messages".
"""

import argparse
import base64
import json
import re
import sys
import traceback
import urllib.request
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

CHECKS = []
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def check(fn):
    CHECKS.append(fn)
    return fn


class Ctx:
    def __init__(self, endpoint):
        self.endpoint = endpoint.rstrip("/")
        kw = dict(
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
            config=Config(retries={"max_attempts": 1}),
        )
        self.sns = boto3.client("sns", **kw)
        self.sqs = boto3.client("sqs", **kw)
        self.prefix = "sns-" + uuid.uuid4().hex[:8]
        self.n = 0

    def name(self, fifo=False):
        self.n += 1
        return f"{self.prefix}-{self.n}" + (".fifo" if fifo else "")

    def topic(self, fifo=False, **attrs):
        a = {k: str(v) for k, v in attrs.items()}
        if fifo:
            a["FifoTopic"] = "true"
        return self.sns.create_topic(Name=self.name(fifo), Attributes=a)["TopicArn"]

    def queue(self, fifo=False):
        a = {"FifoQueue": "true"} if fifo else {}
        url = self.sqs.create_queue(QueueName=self.name(fifo), Attributes=a)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        return url, arn

    def subscribe(self, topic, queue_arn, **attrs):
        out = self.sns.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=queue_arn,
            Attributes={k: str(v) for k, v in attrs.items()},
            ReturnSubscriptionArn=True,
        )
        return out["SubscriptionArn"]

    def receive(self, url, n, wait=5):
        """Receives and deletes until `n` messages came; then checks no more come."""
        got = []
        for _ in range(10):
            if len(got) >= n:
                break
            r = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=wait,
                MessageAttributeNames=["All"],
                AttributeNames=["All"],
            )
            for m in r.get("Messages", []):
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
                got.append(m)
        assert len(got) == n, f"expected {n} messages, got {len(got)}: {got}"
        extra = self.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", [])
        assert not extra, f"more than {n} messages: {extra}"
        return got


def expect_error(code, status, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ClientError as e:
        got = (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"])
        assert got == (code, status), f"expected {(code, status)}, got {got}: {e}"
        return e.response["Error"].get("Message", "")
    raise AssertionError(f"expected {code} ({status}), got success")


def string_to_sign(env):
    if env["Type"] == "Notification":
        names = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
    else:
        names = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
    return "".join(f"{n}\n{env[n]}\n" for n in names if n in env).encode()


def verify_signature(env):
    """Verifies the envelope's signature like a subscriber; skipped without `cryptography`."""
    cert_url = env["SigningCertURL"]
    with urllib.request.urlopen(cert_url) as r:
        pem = r.read()
    assert pem.startswith(b"-----BEGIN CERTIFICATE-----"), pem[:40]
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
    except ImportError:
        return
    key = x509.load_pem_x509_certificate(pem).public_key()
    digest = hashes.SHA1() if env["SignatureVersion"] == "1" else hashes.SHA256()
    key.verify(
        base64.b64decode(env["Signature"]), string_to_sign(env), padding.PKCS1v15(), digest
    )


@check
def create_topic_is_idempotent_and_listed(c):
    name = c.name()
    arn = c.sns.create_topic(Name=name)["TopicArn"]
    assert arn == f"arn:aws:sns:us-east-1:000000000000:{name}", arn
    assert c.sns.create_topic(Name=name)["TopicArn"] == arn
    arns = [t["TopicArn"] for p in c.sns.get_paginator("list_topics").paginate() for t in p["Topics"]]
    assert arn in arns
    attrs = c.sns.get_topic_attributes(TopicArn=arn)["Attributes"]
    assert attrs["TopicArn"] == arn and attrs["SubscriptionsConfirmed"] == "0", attrs
    c.sns.set_topic_attributes(TopicArn=arn, AttributeName="DisplayName", AttributeValue="Shown")
    assert c.sns.get_topic_attributes(TopicArn=arn)["Attributes"]["DisplayName"] == "Shown"
    c.sns.delete_topic(TopicArn=arn)
    expect_error("NotFound", 404, c.sns.get_topic_attributes, TopicArn=arn)


@check
def publish_to_a_queue_delivers_the_envelope(c):
    topic = c.topic()
    url, qarn = c.queue()
    sub = c.subscribe(topic, qarn)
    assert sub.startswith(topic + ":"), sub
    out = c.sns.publish(
        TopicArn=topic,
        Message="hello",
        Subject="Greeting",
        MessageAttributes={
            "color": {"DataType": "String", "StringValue": "red"},
            "n": {"DataType": "Number", "StringValue": "42"},
            "bin": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )
    (m,) = c.receive(url, 1)
    env = json.loads(m["Body"])
    assert set(env) == {
        "Type", "MessageId", "TopicArn", "Subject", "Message", "Timestamp", "SignatureVersion",
        "Signature", "SigningCertURL", "UnsubscribeURL", "MessageAttributes",
    }, sorted(env)
    assert env["Type"] == "Notification"
    assert env["MessageId"] == out["MessageId"]
    assert env["TopicArn"] == topic
    assert (env["Subject"], env["Message"]) == ("Greeting", "hello")
    assert TIMESTAMP.match(env["Timestamp"]), env["Timestamp"]
    assert env["SignatureVersion"] == "1"
    assert re.fullmatch(
        re.escape(c.endpoint) + r"/_loft/sns/SimpleNotificationService-[0-9a-f]{32}\.pem",
        env["SigningCertURL"],
    ), env["SigningCertURL"]
    # AWS leaves the ARN's colons as they are.
    assert env["UnsubscribeURL"] == (
        c.endpoint + "/?Action=Unsubscribe&SubscriptionArn=" + sub
    ), env["UnsubscribeURL"]
    assert env["MessageAttributes"] == {
        "color": {"Type": "String", "Value": "red"},
        "n": {"Type": "Number", "Value": "42"},
        "bin": {"Type": "Binary", "Value": "AAE="},
    }, env["MessageAttributes"]
    assert "MessageAttributes" not in m, "an enveloped delivery has no SQS attributes"
    verify_signature(env)
    # Without a subject or attributes those fields are absent.
    c.sns.publish(TopicArn=topic, Message="bare")
    (m,) = c.receive(url, 1)
    env = json.loads(m["Body"])
    assert "Subject" not in env and "MessageAttributes" not in env, env
    verify_signature(env)


@check
def signature_version_2_topics_sign_with_sha256(c):
    topic = c.topic(SignatureVersion=2)
    url, qarn = c.queue()
    c.subscribe(topic, qarn)
    c.sns.publish(TopicArn=topic, Message="v2", Subject="s")
    env = json.loads(c.receive(url, 1)[0]["Body"])
    assert env["SignatureVersion"] == "2", env
    verify_signature(env)


@check
def raw_delivery_sends_the_body_and_typed_attributes(c):
    topic = c.topic()
    url, qarn = c.queue()
    sub = c.subscribe(topic, qarn, RawMessageDelivery="true")
    attrs = c.sns.get_subscription_attributes(SubscriptionArn=sub)["Attributes"]
    assert attrs["RawMessageDelivery"] == "true", attrs
    c.sns.publish(
        TopicArn=topic,
        Message='{"raw": true}',
        MessageAttributes={
            "s": {"DataType": "String", "StringValue": "v"},
            "n": {"DataType": "Number", "StringValue": "1.5"},
            "b": {"DataType": "Binary", "BinaryValue": b"\xff"},
        },
    )
    (m,) = c.receive(url, 1)
    assert m["Body"] == '{"raw": true}', m["Body"]
    assert m["MessageAttributes"] == {
        "s": {"StringValue": "v", "DataType": "String"},
        "n": {"StringValue": "1.5", "DataType": "Number"},
        "b": {"BinaryValue": b"\xff", "DataType": "Binary"},
    }, m["MessageAttributes"]


@check
def filter_policies_on_attributes_and_body(c):
    topic = c.topic()
    red_url, red_arn = c.queue()
    big_url, big_arn = c.queue()
    c.subscribe(topic, red_arn, FilterPolicy=json.dumps({"color": ["red"]}), RawMessageDelivery="true")
    c.subscribe(
        topic,
        big_arn,
        FilterPolicy=json.dumps({"order": {"amount": [{"numeric": [">=", 100]}]}}),
        FilterPolicyScope="MessageBody",
        RawMessageDelivery="true",
    )
    for body, color in [
        ('{"order": {"amount": 150}}', "red"),
        ('{"order": {"amount": 5}}', "red"),
        ('{"order": {"amount": 500}}', "blue"),
        ("not json", "green"),
    ]:
        c.sns.publish(
            TopicArn=topic,
            Message=body,
            MessageAttributes={"color": {"DataType": "String", "StringValue": color}},
        )
    red = sorted(m["Body"] for m in c.receive(red_url, 2))
    assert red == ['{"order": {"amount": 150}}', '{"order": {"amount": 5}}'], red
    big = sorted(m["Body"] for m in c.receive(big_url, 2))
    assert big == ['{"order": {"amount": 150}}', '{"order": {"amount": 500}}'], big


@check
def message_structure_json_picks_the_sqs_text(c):
    topic = c.topic()
    url, qarn = c.queue()
    c.subscribe(topic, qarn, RawMessageDelivery="true")
    c.sns.publish(
        TopicArn=topic,
        MessageStructure="json",
        Message=json.dumps({"default": "everyone", "sqs": "queues only"}),
    )
    assert c.receive(url, 1)[0]["Body"] == "queues only"


@check
def publish_batch_with_a_failing_entry(c):
    topic = c.topic()
    url, qarn = c.queue()
    c.subscribe(topic, qarn, RawMessageDelivery="true")
    # A bad message attribute in any entry refuses the whole request, as AWS answers
    # (LocalStack's AWS-recorded PublishBatch snapshots); nothing is published.
    expect_error(
        "ParameterValueInvalid", 400, c.sns.publish_batch, TopicArn=topic,
        PublishBatchRequestEntries=[
            {"Id": "one", "Message": "refused"},
            {
                "Id": "bad",
                "Message": "x",
                "MessageAttributes": {"n": {"DataType": "Number", "StringValue": "NaN-ish"}},
            },
        ],
    )
    # The same entries without the bad one are all published.
    out = c.sns.publish_batch(
        TopicArn=topic,
        PublishBatchRequestEntries=[
            {"Id": "one", "Message": "first"},
            {"Id": "two", "Message": "second", "Subject": "s"},
        ],
    )
    assert sorted(s["Id"] for s in out["Successful"]) == ["one", "two"], out
    assert all("MessageId" in s for s in out["Successful"]), out
    assert out.get("Failed", []) == [], out
    bodies = sorted(m["Body"] for m in c.receive(url, 2))
    assert bodies == ["first", "second"], bodies
    expect_error(
        "TooManyEntriesInBatchRequest", 400, c.sns.publish_batch, TopicArn=topic,
        PublishBatchRequestEntries=[{"Id": f"e{i}", "Message": "m"} for i in range(11)],
    )
    expect_error(
        "BatchEntryIdsNotDistinct", 400, c.sns.publish_batch, TopicArn=topic,
        PublishBatchRequestEntries=[{"Id": "x", "Message": "a"}, {"Id": "x", "Message": "b"}],
    )
    expect_error(
        "EmptyBatchRequest", 400, c.sns.publish_batch, TopicArn=topic,
        PublishBatchRequestEntries=[],
    )


@check
def fifo_topic_to_fifo_queue(c):
    topic = c.topic(fifo=True)
    url, qarn = c.queue(fifo=True)
    c.subscribe(topic, qarn)
    seqs = []
    for i, (group, body) in enumerate([("g", "a"), ("g", "b"), ("h", "c")]):
        out = c.sns.publish(
            TopicArn=topic, Message=body, MessageGroupId=group, MessageDeduplicationId=f"d{i}"
        )
        seqs.append(int(out["SequenceNumber"]))
    assert seqs == sorted(seqs), seqs
    dup = c.sns.publish(TopicArn=topic, Message="a", MessageGroupId="g", MessageDeduplicationId="d0")
    assert int(dup["SequenceNumber"]) == seqs[0], "a duplicate answers the first publish"
    got = []
    for _ in range(10):
        if len(got) == 3:
            break
        r = c.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=2, AttributeNames=["All"])
        for m in r.get("Messages", []):
            c.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            got.append(m)
    assert len(got) == 3, got
    envs = [json.loads(m["Body"]) for m in got]
    g = [e["Message"] for e, m in zip(envs, got) if m["Attributes"]["MessageGroupId"] == "g"]
    assert g == ["a", "b"], g
    for e, m in zip(envs, got):
        assert "SequenceNumber" in e and "Signature" not in e, e
        assert m["Attributes"]["MessageDeduplicationId"].startswith("d"), m["Attributes"]
    expect_error("InvalidParameter", 400, c.sns.publish, TopicArn=topic, Message="no group",
                 MessageDeduplicationId="x")
    std = c.topic()
    expect_error("InvalidParameter", 400, c.sns.subscribe, TopicArn=std, Protocol="sqs", Endpoint=qarn)


@check
def fifo_archive_replayed_to_a_new_subscription(c):
    """SNS Developer Guide, "Amazon SNS message replay for FIFO topic subscribers": the
    archived messages of the ReplayPolicy's window reach a new subscription with their
    MessageId, Timestamp and SequenceNumber, filter policy applied, marked Replayed."""
    import datetime
    import time

    start = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=2))
    start = start.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    topic = c.topic(fifo=True, ArchivePolicy='{"MessageRetentionPeriod":"1"}')
    live_url, live_arn = c.queue(fifo=True)
    c.subscribe(topic, live_arn)
    for i, kind in enumerate(["keep", "drop", "keep", "keep"]):
        c.sns.publish(TopicArn=topic, Message=f"m{i}", MessageGroupId="g",
                      MessageDeduplicationId=f"d{i}",
                      MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}})
    live = {json.loads(m["Body"])["Message"]: json.loads(m["Body"]) for m in c.receive(live_url, 4)}
    url, arn = c.queue(fifo=True)
    policy = json.dumps({"PointType": "Timestamp", "StartingPoint": start})
    sub = c.subscribe(topic, arn, FilterPolicy='{"kind":["keep"]}', ReplayPolicy=policy)
    for _ in range(100):
        attrs = c.sns.get_subscription_attributes(SubscriptionArn=sub)["Attributes"]
        if attrs.get("ReplayStatus") == "Completed":
            break
        time.sleep(0.1)
    assert attrs.get("ReplayStatus") == "Completed", attrs
    assert json.loads(attrs["ReplayPolicy"]) == json.loads(policy), attrs
    got = [json.loads(m["Body"]) for m in c.receive(url, 3)]
    assert [e["Message"] for e in got] == ["m0", "m2", "m3"], got
    for e in got:
        o = live[e["Message"]]
        for field in ("MessageId", "Timestamp", "SequenceNumber"):
            assert e[field] == o[field], (field, e, o)
        assert e.get("Replayed") == "true" and "Replayed" not in o, (e, o)
    msg = expect_error("InvalidParameter", 400, c.sns.set_subscription_attributes,
                       SubscriptionArn=sub, AttributeName="ReplayPolicy",
                       AttributeValue='{"PointType":"Offset","StartingPoint":"x"}')
    assert "ReplayPolicy" in msg, msg


@check
def subscriptions_are_listed_updated_and_removed(c):
    topic = c.topic()
    url, qarn = c.queue()
    sub = c.subscribe(topic, qarn)
    subs = c.sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert subs == [{
        "SubscriptionArn": sub, "Owner": "000000000000", "Protocol": "sqs",
        "Endpoint": qarn, "TopicArn": topic,
    }], subs
    c.sns.set_subscription_attributes(
        SubscriptionArn=sub, AttributeName="FilterPolicy", AttributeValue='{"k": ["v"]}'
    )
    attrs = c.sns.get_subscription_attributes(SubscriptionArn=sub)["Attributes"]
    assert attrs["FilterPolicy"] == '{"k": ["v"]}', attrs
    assert attrs["FilterPolicyScope"] == "MessageAttributes", attrs
    c.sns.unsubscribe(SubscriptionArn=sub)
    assert c.sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"] == []
    c.sns.publish(TopicArn=topic, Message="nobody listens")
    c.receive(url, 0, wait=1)


@check
def tags_round_trip(c):
    topic = c.sns.create_topic(Name=c.name(), Tags=[{"Key": "team", "Value": "core"}])["TopicArn"]
    c.sns.tag_resource(ResourceArn=topic, Tags=[{"Key": "env", "Value": "test"}])
    tags = c.sns.list_tags_for_resource(ResourceArn=topic)["Tags"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("env", "test"), ("team", "core")], tags
    c.sns.untag_resource(ResourceArn=topic, TagKeys=["team"])
    assert c.sns.list_tags_for_resource(ResourceArn=topic)["Tags"] == [{"Key": "env", "Value": "test"}]
    missing = "arn:aws:sns:us-east-1:000000000000:" + c.name()
    expect_error("ResourceNotFound", 404, c.sns.list_tags_for_resource, ResourceArn=missing)


@check
def errors_users_provoke(c):
    topic = c.topic()
    missing = "arn:aws:sns:us-east-1:000000000000:" + c.name()
    msg = expect_error("NotFound", 404, c.sns.publish, TopicArn=missing, Message="m")
    assert msg == "Topic does not exist", msg
    expect_error("NotFound", 404, c.sns.subscribe, TopicArn=missing, Protocol="sqs",
                 Endpoint="arn:aws:sqs:us-east-1:000000000000:q")
    expect_error("InvalidParameter", 400, c.sns.create_topic, Name="bad name!")
    expect_error("InvalidParameter", 400, c.sns.create_topic, Name=c.name(), Attributes={"Nope": "x"})
    msg = expect_error("InvalidParameter", 400, c.sns.publish, TopicArn=topic, Message="")
    assert msg == "Invalid parameter: Empty message", msg
    expect_error("InvalidParameter", 400, c.sns.publish, TopicArn=topic, Message="x" * 262145)
    expect_error("InvalidParameter", 400, c.sns.publish, TopicArn=topic, Message="m", Subject="a\nb")
    expect_error("ParameterValueInvalid", 400, c.sns.publish, TopicArn=topic, Message="m",
                 MessageAttributes={"n": {"DataType": "Number", "StringValue": "ten"}})
    expect_error("InvalidParameter", 400, c.sns.subscribe, TopicArn=topic, Protocol="pigeon", Endpoint="x")
    expect_error("InvalidParameter", 400, c.sns.subscribe, TopicArn=topic, Protocol="sqs",
                 Endpoint="arn:aws:sqs:us-east-1:000000000000:q",
                 Attributes={"FilterPolicy": "{not json"})
    expect_error("InvalidParameter", 400, c.sns.confirm_subscription, TopicArn=topic, Token="nope")
    expect_error("InvalidParameter", 400, c.sns.get_topic_attributes, TopicArn="not-an-arn")


@check
def mobile_push_endpoints_are_kept_and_publishes_recorded(c):
    app = c.sns.create_platform_application(
        Name=c.name(), Platform="GCM",
        Attributes={"PlatformPrincipal": "principal", "PlatformCredential": "key"},
    )["PlatformApplicationArn"]
    ep = c.sns.create_platform_endpoint(PlatformApplicationArn=app, Token="token-1")["EndpointArn"]
    again = c.sns.create_platform_endpoint(PlatformApplicationArn=app, Token="token-1")["EndpointArn"]
    assert ep == again, (ep, again)
    listed = c.sns.list_endpoints_by_platform_application(PlatformApplicationArn=app)["Endpoints"]
    assert [e["EndpointArn"] for e in listed] == [ep], listed
    assert c.sns.get_endpoint_attributes(EndpointArn=ep)["Attributes"]["Token"] == "token-1"
    body = "push " + c.name()
    c.sns.publish(TargetArn=ep, Message=body)
    recorded = json.loads(urllib.request.urlopen(c.endpoint + "/_loft/sns/messages").read())
    assert any(r["endpoint"] == ep and r["message"] == body for r in recorded), recorded
    c.sns.delete_platform_application(PlatformApplicationArn=app)
    apps = c.sns.list_platform_applications()["PlatformApplications"]
    assert app not in [a["PlatformApplicationArn"] for a in apps], apps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--endpoint", required=True, help="Loft's URL, e.g. http://127.0.0.1:9324")
    p.add_argument("-k", default="", help="run only the checks whose name contains this")
    args = p.parse_args()
    c = Ctx(args.endpoint)
    passed = failed = 0
    for fn in CHECKS:
        if args.k not in fn.__name__:
            continue
        try:
            fn(c)
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            failed += 1
            print(f"FAIL {fn.__name__}: {e}")
            if not isinstance(e, AssertionError):
                traceback.print_exc(limit=3)
        else:
            passed += 1
            print(f"ok   {fn.__name__}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
