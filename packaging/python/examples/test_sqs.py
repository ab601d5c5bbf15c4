"""Twelve SQS examples with boto3; each starts from an empty server."""

import hashlib
import json


def test_starts_empty_and_round_trips(sqs):
    assert sqs.list_queues().get("QueueUrls", []) == []
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    sent = sqs.send_message(QueueUrl=url, MessageBody="hello")
    assert sent["MD5OfMessageBody"] == hashlib.md5(b"hello").hexdigest()
    got = sqs.receive_message(QueueUrl=url)["Messages"]
    assert [m["Body"] for m in got] == ["hello"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_the_same_name_again_after_the_reset(sqs):
    assert sqs.list_queues().get("QueueUrls", []) == []
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_batch_send_and_delete(sqs):
    url = sqs.create_queue(QueueName="batch")["QueueUrl"]
    entries = [{"Id": str(i), "MessageBody": f"m{i}"} for i in range(10)]
    assert len(sqs.send_message_batch(QueueUrl=url, Entries=entries)["Successful"]) == 10
    seen = []
    while len(seen) < 10:
        msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        seen += [m["Body"] for m in msgs]
        sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)])
    assert sorted(seen) == sorted(f"m{i}" for i in range(10))


def test_fifo_keeps_order_within_a_group(sqs):
    url = sqs.create_queue(QueueName="jobs.fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    for i in range(5):
        sqs.send_message(QueueUrl=url, MessageBody=f"step {i}", MessageGroupId="g")
    bodies = []
    for _ in range(5):
        m = sqs.receive_message(QueueUrl=url)["Messages"][0]
        bodies.append(m["Body"])
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert bodies == [f"step {i}" for i in range(5)]


def test_fifo_deduplicates(sqs):
    url = sqs.create_queue(QueueName="dedup.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    for _ in range(3):
        sqs.send_message(QueueUrl=url, MessageBody="once", MessageGroupId="g",
                         MessageDeduplicationId="d1")
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    assert attrs["Attributes"]["ApproximateNumberOfMessages"] == "1"


def test_visibility_timeout_hides_then_releases(sqs):
    url = sqs.create_queue(QueueName="vis")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="x")
    m = sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)["Messages"][0]
    assert "Messages" not in sqs.receive_message(QueueUrl=url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                  VisibilityTimeout=0)
    again = sqs.receive_message(QueueUrl=url)["Messages"][0]
    assert again["Body"] == "x"


def test_dead_letter_queue_after_max_receives(sqs):
    dlq = sqs.create_queue(QueueName="dead")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    url = sqs.create_queue(QueueName="live", Attributes={"RedrivePolicy": json.dumps(
        {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="poison")
    m = sqs.receive_message(QueueUrl=url)["Messages"][0]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                  VisibilityTimeout=0)
    assert "Messages" not in sqs.receive_message(QueueUrl=url)
    assert sqs.receive_message(QueueUrl=dlq)["Messages"][0]["Body"] == "poison"


def test_message_attributes_round_trip(sqs):
    url = sqs.create_queue(QueueName="attrs")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="b", MessageAttributes={
        "kind": {"DataType": "String", "StringValue": "order"},
        "n": {"DataType": "Number", "StringValue": "7"}})
    m = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"][0]
    assert m["MessageAttributes"]["kind"]["StringValue"] == "order"
    assert m["MessageAttributes"]["n"]["StringValue"] == "7"


def test_queue_attributes_and_tags(sqs):
    url = sqs.create_queue(QueueName="tagged", Attributes={"VisibilityTimeout": "45"},
                           tags={"team": "a"})["QueueUrl"]
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "45"
    sqs.tag_queue(QueueUrl=url, Tags={"env": "test"})
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "a", "env": "test"}


def test_purge_empties_a_queue(sqs):
    url = sqs.create_queue(QueueName="purged")["QueueUrl"]
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=str(i))
    sqs.purge_queue(QueueUrl=url)
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_get_queue_url_and_delete(sqs):
    url = sqs.create_queue(QueueName="gone")["QueueUrl"]
    assert sqs.get_queue_url(QueueName="gone")["QueueUrl"] == url
    sqs.delete_queue(QueueUrl=url)
    assert sqs.list_queues().get("QueueUrls", []) == []


def test_list_queues_by_prefix(sqs):
    for name in ("a-1", "a-2", "b-1"):
        sqs.create_queue(QueueName=name)
    urls = sqs.list_queues(QueueNamePrefix="a-")["QueueUrls"]
    assert sorted(u.rsplit("/", 1)[1] for u in urls) == ["a-1", "a-2"]
