"""An SQS event source mapping feeding Powertools' BatchProcessor (partial batch
responses): the records the handler takes are deleted, the failed one stays."""

import time

import boto3


def test_batch_processor_fed_by_an_event_source_mapping(endpoint, sqs, function_host):
    function_host.handled.clear()
    url = sqs.create_queue(QueueName="ingest", Attributes={"VisibilityTimeout": "60"})[
        "QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    lam = boto3.client("lambda", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="test", aws_secret_access_key="test")
    lam.create_event_source_mapping(EventSourceArn=arn, FunctionName="batch-handler",
                                    BatchSize=10,
                                    FunctionResponseTypes=["ReportBatchItemFailures"])
    sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "1", "MessageBody": "a"}, {"Id": "2", "MessageBody": "fail"},
        {"Id": "3", "MessageBody": "b"}])
    assert sorted(function_host.wait_for(2)) == ["a", "b"]
    # The mapping deletes the records the handler took once the invocation has answered,
    # which is after the handler saw them: wait (bounded) until only the failed one is left,
    # back in the queue (in flight until its visibility ends).
    deadline = time.monotonic() + 10
    while True:
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        left = int(attrs["ApproximateNumberOfMessages"]) + int(
            attrs["ApproximateNumberOfMessagesNotVisible"])
        if left == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert left == 1, attrs
