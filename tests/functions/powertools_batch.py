"""A Lambda function for Loft's tests: Powertools for AWS Lambda's batch processor over an
SQS event, reporting partial failures (ReportBatchItemFailures). A record whose body starts
with "fail" raises, so Powertools lists it in batchItemFailures; every other record succeeds.

Run under the Runtime Interface Client (`python3 -m awslambdaric powertools_batch.handler`
with AWS_LAMBDA_RUNTIME_API set), as in a Lambda container.
"""

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord):
    if record.body.startswith("fail"):
        raise ValueError(f"refusing {record.body}")
    return record.body


def handler(event, context):
    return process_partial_response(
        event=event,
        record_handler=record_handler,
        processor=processor,
        context=context,
    )
