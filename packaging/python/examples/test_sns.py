"""Eight SNS examples with boto3 (fan-out into SQS); each starts from an empty server."""

import json


def queue_with_arn(sqs, name):
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    return url, arn


def test_starts_empty(sns):
    assert sns.list_topics()["Topics"] == []
    sns.create_topic(Name="events")
    assert len(sns.list_topics()["Topics"]) == 1


def test_fan_out_to_two_queues(sns, sqs):
    topic = sns.create_topic(Name="events")["TopicArn"]
    urls = []
    for name in ("q1", "q2"):
        url, arn = queue_with_arn(sqs, name)
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        urls.append(url)
    sns.publish(TopicArn=topic, Message="hi", Subject="s")
    for url in urls:
        body = json.loads(sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"])
        assert body["Type"] == "Notification" and body["Message"] == "hi"


def test_raw_message_delivery(sns, sqs):
    topic = sns.create_topic(Name="raw")["TopicArn"]
    url, arn = queue_with_arn(sqs, "raw-q")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn,
                  Attributes={"RawMessageDelivery": "true"})
    sns.publish(TopicArn=topic, Message="plain")
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "plain"


def test_filter_policy(sns, sqs):
    topic = sns.create_topic(Name="filtered")["TopicArn"]
    url, arn = queue_with_arn(sqs, "only-orders")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={
        "RawMessageDelivery": "true", "FilterPolicy": json.dumps({"kind": ["order"]})})
    for kind in ("invoice", "order"):
        sns.publish(TopicArn=topic, Message=kind, MessageAttributes={
            "kind": {"DataType": "String", "StringValue": kind}})
    msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in msgs] == ["order"]


def test_publish_batch(sns, sqs):
    topic = sns.create_topic(Name="batch")["TopicArn"]
    url, arn = queue_with_arn(sqs, "batch-q")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn,
                  Attributes={"RawMessageDelivery": "true"})
    out = sns.publish_batch(TopicArn=topic, PublishBatchRequestEntries=[
        {"Id": str(i), "Message": f"m{i}"} for i in range(5)])
    assert len(out["Successful"]) == 5
    seen = []
    while len(seen) < 5:
        seen += [m["Body"] for m in
                 sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    assert sorted(seen) == [f"m{i}" for i in range(5)]


def test_subscriptions_listed_and_removed(sns, sqs):
    topic = sns.create_topic(Name="subs")["TopicArn"]
    _, arn = queue_with_arn(sqs, "subs-q")
    sub = sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)["SubscriptionArn"]
    listed = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert [s["SubscriptionArn"] for s in listed] == [sub]
    sns.unsubscribe(SubscriptionArn=sub)
    assert sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"] == []


def test_topic_attributes_and_tags(sns):
    topic = sns.create_topic(Name="attrs", Tags=[{"Key": "team", "Value": "a"}])["TopicArn"]
    sns.set_topic_attributes(TopicArn=topic, AttributeName="DisplayName", AttributeValue="Ops")
    assert sns.get_topic_attributes(TopicArn=topic)["Attributes"]["DisplayName"] == "Ops"
    assert sns.list_tags_for_resource(ResourceArn=topic)["Tags"] == [
        {"Key": "team", "Value": "a"}]


def test_fifo_topic_to_fifo_queue(sns, sqs):
    topic = sns.create_topic(Name="orders.fifo", Attributes={
        "FifoTopic": "true", "ContentBasedDeduplication": "true"})["TopicArn"]
    url = sqs.create_queue(QueueName="orders.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn,
                  Attributes={"RawMessageDelivery": "true"})
    for i in range(3):
        sns.publish(TopicArn=topic, Message=f"o{i}", MessageGroupId="g",
                    MessageDeduplicationId=f"o{i}")
    bodies = []
    for _ in range(3):
        m = sqs.receive_message(QueueUrl=url)["Messages"][0]
        bodies.append(m["Body"])
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert bodies == ["o0", "o1", "o2"]
