#!/usr/bin/env python3
"""End-to-end checks of Loft's FIFO queues through boto3.

Usage: fifo_boto3.py --endpoint http://127.0.0.1:PORT [--include-known-bugs]

Start a server first, e.g. `target/debug/loft serve --listen 127.0.0.1:0 --db /tmp/x.db`
(it prints its URL). Each check creates its own queues under a per-run prefix, so the
script can run again against the same server. Visibility timeouts are 1-2 s, so the run
sleeps a few seconds in all; the 5-minute deduplication window itself is covered by the
Rust scenario tests (ManualClock), not here.

Checks marked KNOWN assert AWS's behaviour where Loft differs today; they are skipped
unless --include-known-bugs is given. Last line: `N passed, N failed, N skipped`; the exit
status is non-zero when any check failed.

Sources: SQS Developer Guide "FIFO queue delivery logic", "Exactly-once processing",
"Using the message group ID"; SQS API Reference SendMessage, SendMessageBatch,
ReceiveMessage, DeleteMessage; AWS Knowledge Center "ReceiptHandleIsInvalid and
InvalidParameterValue errors".
"""

import argparse
import json
import threading
import sys
import time
import traceback
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

CHECKS = []


def check(known_bug=None):
    """Registers a check; `known_bug` says why it fails on Loft today."""

    def wrap(fn):
        CHECKS.append((fn, known_bug))
        return fn

    return wrap


class Ctx:
    def __init__(self, endpoint):
        self.sqs = boto3.client(
            "sqs",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
            config=Config(retries={"max_attempts": 1}),
        )
        self.prefix = "fifo-" + uuid.uuid4().hex[:8]
        self.n = 0

    def name(self, fifo=True):
        self.n += 1
        return f"{self.prefix}-{self.n}" + (".fifo" if fifo else "")

    def fifo(self, **attrs):
        a = {"FifoQueue": "true"}
        a.update({k: str(v) for k, v in attrs.items()})
        return self.sqs.create_queue(QueueName=self.name(), Attributes=a)["QueueUrl"]

    def standard(self, **attrs):
        a = {k: str(v) for k, v in attrs.items()}
        return self.sqs.create_queue(QueueName=self.name(False), Attributes=a)["QueueUrl"]

    def arn(self, url):
        return self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]

    def send(self, url, group, dedup, body=None):
        return self.sqs.send_message(
            QueueUrl=url,
            MessageBody=body if body is not None else dedup,
            MessageGroupId=group,
            MessageDeduplicationId=dedup,
        )

    def recv(self, url, max_n=10, vis=30, **extra):
        r = self.sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=max_n,
            VisibilityTimeout=vis,
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
            **extra,
        )
        return r.get("Messages", [])

    def delete(self, url, msgs):
        for m in msgs:
            self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def bodies(msgs):
    return [m["Body"] for m in msgs]


def eq(got, want, what=""):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, expected {want!r}")


def error_code(fn):
    try:
        fn()
    except ClientError as e:
        return e.response["Error"]["Code"]
    raise AssertionError("expected an error, the call succeeded")


# ----- ordering and group locking


@check()
def strict_order_within_a_group(c):
    q = c.fifo()
    for i in range(5):
        c.send(q, "g", f"m{i}")
    for i in range(5):
        got = c.recv(q, 1)
        eq(bodies(got), [f"m{i}"], f"receive {i}")
        c.delete(q, got)
    eq(c.recv(q), [], "queue empty")


@check()
def several_in_order_messages_in_one_receive(c):
    q = c.fifo()
    for i in range(5):
        c.send(q, "g", f"m{i}")
    eq(bodies(c.recv(q, 10)), [f"m{i}" for i in range(5)], "one receive")


@check()
def in_flight_message_locks_group_others_flow(c):
    q = c.fifo()
    c.send(q, "a", "a1")
    c.send(q, "a", "a2")
    c.send(q, "b", "b1")
    first = c.recv(q, 1)
    eq(bodies(first), ["a1"], "first")
    eq(bodies(c.recv(q, 10)), ["b1"], "group a locked, b flows")
    eq(bodies(c.recv(q, 10)), [], "both groups locked")
    c.delete(q, first)
    eq(bodies(c.recv(q, 10)), ["a2"], "a open again")


@check()
def later_visible_behind_hidden_earlier_stays_locked(c):
    q = c.fifo()
    for b in ("a1", "a2", "a3"):
        c.send(q, "g", b)
    got = c.recv(q, 2, vis=1)
    eq(bodies(got), ["a1", "a2"], "first receive")
    c.sqs.change_message_visibility(
        QueueUrl=q, ReceiptHandle=got[0]["ReceiptHandle"], VisibilityTimeout=30
    )
    time.sleep(1.3)
    eq(bodies(c.recv(q, 10)), [], "a2 expired but a1 still hidden")


@check()
def earlier_made_visible_is_served_while_later_in_flight(c):
    # AWS's recorded answer: a group gives its visible messages up to its first hidden one.
    q = c.fifo()
    c.send(q, "g", "a1")
    c.send(q, "g", "a2")
    got = c.recv(q, 2)
    c.sqs.change_message_visibility(
        QueueUrl=q, ReceiptHandle=got[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    eq(bodies(c.recv(q, 10)), ["a1"], "a1 again, a2 still in flight")


@check()
def visibility_expiry_redelivers_in_order(c):
    q = c.fifo()
    c.send(q, "g", "a1")
    c.send(q, "g", "a2")
    eq(bodies(c.recv(q, 1, vis=1)), ["a1"], "first")
    time.sleep(1.3)
    got = c.recv(q, 10)
    eq(bodies(got), ["a1", "a2"], "after expiry")
    eq(got[0]["Attributes"]["ApproximateReceiveCount"], "2", "a1 receive count")


@check()
def receive_prefers_messages_of_one_group(c):
    q = c.fifo()
    for g, d in [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2")]:
        c.send(q, g, d)
    eq(bodies(c.recv(q, 2)), ["a1", "a2"], "as many of one group as possible")


@check()
def long_poll_wakes_when_group_head_is_deleted(c):
    q = c.fifo()
    c.send(q, "g", "a1")
    c.send(q, "g", "a2")
    head = c.recv(q, 1)
    out = {}

    def poll():
        t0 = time.monotonic()
        out["msgs"] = c.sqs.receive_message(
            QueueUrl=q, MaxNumberOfMessages=1, WaitTimeSeconds=5
        ).get("Messages", [])
        out["elapsed"] = time.monotonic() - t0

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.3)
    c.delete(q, head)
    t.join(10)
    eq(bodies(out.get("msgs", [])), ["a2"], "long poll result")
    if out["elapsed"] > 2.5:
        raise AssertionError(f"long poll returned after {out['elapsed']:.1f} s, not at the delete")


# ----- deduplication


@check()
def duplicate_returns_original_and_is_not_enqueued(c):
    q = c.fifo()
    first = c.send(q, "g", "d1", "first")
    again = c.send(q, "g", "d1", "second")
    eq(again["MessageId"], first["MessageId"], "MessageId")
    eq(again["SequenceNumber"], first["SequenceNumber"], "SequenceNumber")
    got = c.recv(q)
    eq(bodies(got), ["first"], "one copy")
    c.delete(q, got)
    # Still inside the window after the delete.
    third = c.send(q, "g", "d1", "third")
    eq(third["MessageId"], first["MessageId"], "duplicate of a deleted message")
    eq(c.recv(q), [], "nothing enqueued")


@check()
def duplicate_inside_one_batch(c):
    q = c.fifo()
    r = c.sqs.send_message_batch(
        QueueUrl=q,
        Entries=[
            {"Id": "1", "MessageBody": "x", "MessageGroupId": "g", "MessageDeduplicationId": "d"},
            {"Id": "2", "MessageBody": "y", "MessageGroupId": "g", "MessageDeduplicationId": "d"},
        ],
    )
    ok = {e["Id"]: e for e in r.get("Successful", [])}
    eq(sorted(ok), ["1", "2"], "both accepted")
    eq(ok["2"]["MessageId"], ok["1"]["MessageId"], "same MessageId")
    eq(ok["2"]["SequenceNumber"], ok["1"]["SequenceNumber"], "same SequenceNumber")
    eq(bodies(c.recv(q)), ["x"], "one copy")


@check()
def content_based_deduplication(c):
    q = c.fifo(ContentBasedDeduplication="true")
    a = c.sqs.send_message(QueueUrl=q, MessageBody="same", MessageGroupId="g")
    b = c.sqs.send_message(
        QueueUrl=q,
        MessageBody="same",
        MessageGroupId="h",
        MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}},
    )
    eq(b["MessageId"], a["MessageId"], "same body (other attributes, other group)")
    d = c.sqs.send_message(QueueUrl=q, MessageBody="different", MessageGroupId="g")
    if d["MessageId"] == a["MessageId"]:
        raise AssertionError("different body deduplicated")
    eq(bodies(c.recv(q)), ["same", "different"], "enqueued")


@check()
def deduplication_scope_message_group(c):
    q = c.fifo(DeduplicationScope="messageGroup", FifoThroughputLimit="perMessageGroupId")
    a = c.send(q, "a", "d1")
    b = c.send(q, "b", "d1")
    if a["MessageId"] == b["MessageId"]:
        raise AssertionError("same id in another group was deduplicated")
    a2 = c.send(q, "a", "d1")
    eq(a2["MessageId"], a["MessageId"], "same group duplicate")
    eq(len(c.recv(q)), 2, "two enqueued")


@check()
def missing_deduplication_id_rejected(c):
    q = c.fifo()
    code = error_code(lambda: c.sqs.send_message(QueueUrl=q, MessageBody="x", MessageGroupId="g"))
    eq(code, "InvalidParameterValue", "error code")


# ----- sequence numbers


@check()
def sequence_numbers_grow_and_match(c):
    q = c.fifo()
    sent = []
    for i in range(3):
        sent.append(c.send(q, "g", f"m{i}"))
        c.send(q, "other", f"o{i}")
    seqs = [int(s["SequenceNumber"]) for s in sent]
    eq(seqs, sorted(set(seqs)), "increasing")
    got = [m for m in c.recv(q) if m["Attributes"]["MessageGroupId"] == "g"]
    eq(
        [m["Attributes"]["SequenceNumber"] for m in got],
        [s["SequenceNumber"] for s in sent],
        "received SequenceNumber",
    )
    eq([m["MessageId"] for m in got], [s["MessageId"] for s in sent], "MessageId")
    eq(
        [m["Attributes"]["MessageDeduplicationId"] for m in got],
        ["m0", "m1", "m2"],
        "MessageDeduplicationId",
    )


# ----- receipt handles


@check()
def expired_receipt_handle_rejected(c):
    q = c.fifo()
    c.send(q, "g", "a1")
    old = c.recv(q, 1, vis=1)[0]["ReceiptHandle"]
    time.sleep(1.3)
    code = error_code(lambda: c.sqs.delete_message(QueueUrl=q, ReceiptHandle=old))
    if code not in ("ReceiptHandleIsInvalid", "InvalidParameterValue"):
        raise AssertionError(f"unexpected error code {code}")
    again = c.recv(q, 1)
    eq(bodies(again), ["a1"], "not deleted")
    error_code(lambda: c.sqs.delete_message(QueueUrl=q, ReceiptHandle=old))
    c.delete(q, again)
    eq(c.recv(q), [], "deleted with the new handle")


@check()
def expired_receipt_handle_error_code(c):
    q = c.fifo()
    c.send(q, "g", "a1")
    old = c.recv(q, 1, vis=1)[0]["ReceiptHandle"]
    time.sleep(1.3)
    code = error_code(lambda: c.sqs.delete_message(QueueUrl=q, ReceiptHandle=old))
    eq(code, "InvalidParameterValue", "error code")


# ----- ReceiveRequestAttemptId


@check()
def receive_attempt_retry_returns_same_messages(c):
    q = c.fifo()
    c.send(q, "a", "a1")
    c.send(q, "a", "a2")
    c.send(q, "b", "b1")
    first = c.recv(q, 2, ReceiveRequestAttemptId="try-1")
    eq(bodies(first), ["a1", "a2"], "first")
    retry = c.recv(q, 2, ReceiveRequestAttemptId="try-1")
    eq(bodies(retry), ["a1", "a2"], "retry bodies")
    eq(
        [m["ReceiptHandle"] for m in retry],
        [m["ReceiptHandle"] for m in first],
        "retry handles",
    )
    eq(bodies(c.recv(q, 10, ReceiveRequestAttemptId="try-2")), ["b1"], "new attempt")
    c.delete(q, retry)


@check()
def receive_attempt_retry_resets_visibility(c):
    q = c.fifo()
    c.send(q, "a", "a1")
    c.recv(q, 1, vis=2, ReceiveRequestAttemptId="try-1")
    time.sleep(1.2)
    c.recv(q, 1, vis=2, ReceiveRequestAttemptId="try-1")
    time.sleep(1.2)
    eq(bodies(c.recv(q, 10)), [], "still hidden 1.2 s after the retry")


# ----- dead-letter queues


@check()
def dead_letter_redrive_keeps_group_and_order(c):
    dlq = c.fifo()
    policy = json.dumps({"deadLetterTargetArn": c.arn(dlq), "maxReceiveCount": "1"})
    src = c.fifo(RedrivePolicy=policy)
    order = [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2"), ("a", "a3")]
    sent = [c.send(src, g, d) for g, d in order]
    # A receive takes as many messages of one group as it can, group by group.
    by_group = sorted(order, key=lambda gd: gd[0])
    eq(bodies(c.recv(src, 10, vis=1)), [d for _, d in by_group], "first receive")
    time.sleep(1.3)
    eq(c.recv(src, 10), [], "all moved")
    dead = c.recv(dlq, 10)
    eq(bodies(dead), [d for _, d in by_group], "DLQ order")
    eq([m["Attributes"]["MessageGroupId"] for m in dead], [g for g, _ in by_group], "groups")
    ids = {d: s["MessageId"] for (_, d), s in zip(order, sent)}
    eq([m["MessageId"] for m in dead], [ids[d] for _, d in by_group], "MessageIds")
    eq(
        {m["Attributes"].get("DeadLetterQueueSourceArn") for m in dead},
        {c.arn(src)},
        "DeadLetterQueueSourceArn",
    )


@check()
def dead_lettered_dedup_id_is_message_id(c):
    dlq = c.fifo()
    policy = json.dumps({"deadLetterTargetArn": c.arn(dlq), "maxReceiveCount": 1})
    src = c.fifo(RedrivePolicy=policy)
    c.send(src, "a", "a1")
    c.recv(src, 10, vis=1)
    time.sleep(1.3)
    c.recv(src, 10)
    dead = c.recv(dlq, 10)
    eq(dead[0]["Attributes"].get("MessageDeduplicationId"), dead[0]["MessageId"], "dedup id")


@check()
def redrive_out_of_fifo_dlq_keeps_group_and_order(c):
    dlq = c.fifo()
    policy = json.dumps({"deadLetterTargetArn": c.arn(dlq), "maxReceiveCount": 1})
    src = c.fifo(RedrivePolicy=policy)
    order = [("a", "a1"), ("b", "b1"), ("a", "a2"), ("a", "a3")]
    for g, d in order:
        c.send(src, g, d)
    c.recv(src, 10, vis=1)
    time.sleep(1.3)
    eq(c.recv(src, 10), [], "all dead-lettered")
    c.sqs.start_message_move_task(SourceArn=c.arn(dlq))
    for _ in range(50):
        time.sleep(0.1)
        tasks = c.sqs.list_message_move_tasks(SourceArn=c.arn(dlq))["Results"]
        if tasks[0]["Status"] != "RUNNING":
            break
    eq(tasks[0]["Status"], "COMPLETED", "move task")
    back = c.recv(src, 10)
    by_group = sorted(order, key=lambda gd: gd[0])
    eq(bodies(back), [d for _, d in by_group], "order in the source queue")
    eq([m["Attributes"]["MessageGroupId"] for m in back], [g for g, _ in by_group], "groups")


@check()
def fifo_dead_letter_queue_must_be_fifo(c):
    plain = c.standard()
    policy = json.dumps({"deadLetterTargetArn": c.arn(plain), "maxReceiveCount": 3})
    code = error_code(
        lambda: c.sqs.create_queue(
            QueueName=c.name(), Attributes={"FifoQueue": "true", "RedrivePolicy": policy}
        )
    )
    eq(code, "InvalidParameterValue", "create")
    q = c.fifo()
    code = error_code(
        lambda: c.sqs.set_queue_attributes(QueueUrl=q, Attributes={"RedrivePolicy": policy})
    )
    eq(code, "InvalidParameterValue", "set attributes")


# ----- send validation


@check()
def message_group_id_required(c):
    q = c.fifo()
    code = error_code(
        lambda: c.sqs.send_message(QueueUrl=q, MessageBody="x", MessageDeduplicationId="d")
    )
    eq(code, "MissingParameter", "SendMessage")
    # One entry without a group refuses the whole batch, as AWS answers; nothing is stored.
    try:
        c.sqs.send_message_batch(
            QueueUrl=q,
            Entries=[
                {"Id": "ok", "MessageBody": "ok", "MessageGroupId": "g", "MessageDeduplicationId": "1"},
                {"Id": "bad", "MessageBody": "x", "MessageDeduplicationId": "2"},
            ],
        )
        raise AssertionError("a batch with an entry without MessageGroupId was accepted")
    except ClientError as e:
        eq(e.response["Error"]["Code"], "InvalidParameterValue", "batch error code")
        eq(e.response["Error"]["Message"], "The request must contain the parameter MessageGroupId.", "batch error message")
    r = c.sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=10)
    eq(r.get("Messages", []), [], "nothing stored")


@check()
def per_message_delay_rejected(c):
    q = c.fifo()
    code = error_code(
        lambda: c.sqs.send_message(
            QueueUrl=q,
            MessageBody="x",
            MessageGroupId="g",
            MessageDeduplicationId="d",
            DelaySeconds=5,
        )
    )
    eq(code, "InvalidParameterValue", "error code")


@check()
def fifo_name_and_attributes(c):
    code = error_code(
        lambda: c.sqs.create_queue(QueueName=c.name(False), Attributes={"FifoQueue": "true"})
    )
    eq(code, "InvalidParameterValue", "FIFO queue without .fifo")
    q = c.fifo(ContentBasedDeduplication="true")
    a = c.sqs.get_queue_attributes(QueueUrl=q, AttributeNames=["All"])["Attributes"]
    eq(a.get("FifoQueue"), "true", "FifoQueue")
    eq(a.get("ContentBasedDeduplication"), "true", "ContentBasedDeduplication")
    eq(a.get("DeduplicationScope"), "queue", "DeduplicationScope")
    eq(a.get("FifoThroughputLimit"), "perQueue", "FifoThroughputLimit")


@check()
def standard_queue_accepts_message_group_id(c):
    q = c.standard()
    r = c.sqs.send_message(QueueUrl=q, MessageBody="x", MessageGroupId="tenant-1")
    if "SequenceNumber" in r:
        raise AssertionError("standard queue returned a SequenceNumber")
    got = c.recv(q)
    eq(got[0]["Attributes"].get("MessageGroupId"), "tenant-1", "MessageGroupId returned")
    code = error_code(
        lambda: c.sqs.send_message(QueueUrl=q, MessageBody="x", MessageDeduplicationId="d")
    )
    eq(code, "InvalidParameterValue", "MessageDeduplicationId on a standard queue")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--endpoint", required=True, help="Loft's URL, e.g. http://127.0.0.1:9324")
    p.add_argument(
        "--include-known-bugs",
        action="store_true",
        help="also run the checks of behaviour Loft is known to get wrong",
    )
    args = p.parse_args()
    c = Ctx(args.endpoint)
    passed = failed = skipped = 0
    for fn, known_bug in CHECKS:
        if known_bug and not args.include_known_bugs:
            print(f"SKIP {fn.__name__} (KNOWN: {known_bug})")
            skipped += 1
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
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
