#!/usr/bin/env python3
"""Loft's Lambda API (event source mappings, GetFunction, ListFunctions) through boto3's
lambda client and the AWS CLI, as users drive it with --endpoint-url.

Usage: lambda_boto3.py --endpoint http://127.0.0.1:PORT --function NAME --queue NAME

The server must configure function NAME (`[[functions]]`) and queue NAME. Each check
cleans up the mappings it makes. Last line: `N passed, N failed`; the exit status is
non-zero when any check failed.

Sources: the botocore model `lambda/2015-03-31`; Lambda API Reference
(CreateEventSourceMapping, UpdateEventSourceMapping, ListEventSourceMappings).
"""

import argparse
import json
import os
import subprocess
import sys
import traceback

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def client(endpoint, service):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}),
    )


def error_code(fn):
    try:
        fn()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("no error")


@check
def functions_are_listed_and_got(ctx):
    lam = ctx["lambda"]
    names = [f["FunctionName"] for f in lam.list_functions()["Functions"]]
    assert ctx["function"] in names, names
    got = lam.get_function(FunctionName=ctx["function"])["Configuration"]
    assert got["FunctionArn"] == f"arn:aws:lambda:us-east-1:000000000000:function:{ctx['function']}"
    assert error_code(lambda: lam.get_function(FunctionName="missing")) == ("ResourceNotFoundException", 404)


@check
def a_mapping_is_created_read_updated_listed_and_deleted(ctx):
    lam = ctx["lambda"]
    arn = ctx["queue_arn"]
    made = lam.create_event_source_mapping(
        EventSourceArn=arn,
        FunctionName=ctx["function"],
        BatchSize=50,
        MaximumBatchingWindowInSeconds=2,
        FunctionResponseTypes=["ReportBatchItemFailures"],
        FilterCriteria={"Filters": [{"Pattern": json.dumps({"body": {"kind": ["a"]}})}]},
        ScalingConfig={"MaximumConcurrency": 4},
        Enabled=False,
    )
    try:
        assert made["ResponseMetadata"]["HTTPStatusCode"] == 202
        assert made["State"] == "Creating", made
        assert made["EventSourceArn"] == arn
        assert made["BatchSize"] == 50 and made["MaximumBatchingWindowInSeconds"] == 2
        assert made["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert made["ScalingConfig"] == {"MaximumConcurrency": 4}
        assert made["EventSourceMappingArn"].endswith(":event-source-mapping:" + made["UUID"])
        assert made["LastModified"].year >= 2024
        got = lam.get_event_source_mapping(UUID=made["UUID"])
        assert got["State"] == "Disabled", got
        assert got["FilterCriteria"]["Filters"][0]["Pattern"] == json.dumps({"body": {"kind": ["a"]}})
        upd = lam.update_event_source_mapping(UUID=made["UUID"], Enabled=True, BatchSize=5)
        assert upd["State"] == "Updating" and upd["BatchSize"] == 5
        assert lam.get_event_source_mapping(UUID=made["UUID"])["State"] == "Enabled"
        listed = lam.list_event_source_mappings(FunctionName=ctx["function"])["EventSourceMappings"]
        assert [m["UUID"] for m in listed] == [made["UUID"]], listed
        by_source = lam.list_event_source_mappings(EventSourceArn=arn)["EventSourceMappings"]
        assert [m["UUID"] for m in by_source] == [made["UUID"]]
        assert error_code(
            lambda: lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=ctx["function"])
        ) == ("ResourceConflictException", 409)
    finally:
        gone = lam.delete_event_source_mapping(UUID=made["UUID"])
    assert gone["State"] == "Deleting"
    assert error_code(lambda: lam.get_event_source_mapping(UUID=made["UUID"])) == (
        "ResourceNotFoundException",
        404,
    )


@check
def bad_settings_are_refused_as_lambda_refuses_them(ctx):
    lam = ctx["lambda"]
    arn = ctx["queue_arn"]
    code = error_code(
        lambda: lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=ctx["function"], BatchSize=100)
    )
    assert code == ("InvalidParameterValueException", 400), code
    code = error_code(
        lambda: lam.create_event_source_mapping(
            EventSourceArn=arn,
            FunctionName=ctx["function"],
            FilterCriteria={"Filters": [{"Pattern": "{not json"}]},
        )
    )
    assert code == ("InvalidParameterValueException", 400), code
    code = error_code(
        lambda: lam.create_event_source_mapping(EventSourceArn=arn + "-missing", FunctionName=ctx["function"])
    )
    assert code == ("InvalidParameterValueException", 400), code
    code = error_code(lambda: lam.create_event_source_mapping(EventSourceArn=arn, FunctionName="missing"))
    assert code == ("ResourceNotFoundException", 404), code


@check
def the_aws_cli_creates_and_deletes_a_mapping(ctx):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1")
    base = ["aws", "--endpoint-url", ctx["endpoint"], "--output", "json", "lambda"]
    out = subprocess.run(
        base
        + [
            "create-event-source-mapping",
            "--function-name",
            ctx["function"],
            "--event-source-arn",
            ctx["queue_arn"],
            "--batch-size",
            "7",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    made = json.loads(out.stdout)
    assert made["BatchSize"] == 7
    out = subprocess.run(base + ["list-event-source-mappings"], env=env, capture_output=True, text=True, check=True)
    assert made["UUID"] in [m["UUID"] for m in json.loads(out.stdout)["EventSourceMappings"]]
    subprocess.run(
        base + ["delete-event-source-mapping", "--uuid", made["UUID"]], env=env, capture_output=True, check=True
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", required=True)
    p.add_argument("--function", required=True)
    p.add_argument("--queue", required=True)
    a = p.parse_args()
    sqs = client(a.endpoint, "sqs")
    url = sqs.get_queue_url(QueueName=a.queue)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    ctx = {
        "endpoint": a.endpoint,
        "function": a.function,
        "queue_arn": queue_arn,
        "lambda": client(a.endpoint, "lambda"),
    }
    passed = failed = 0
    for fn in CHECKS:
        try:
            fn(ctx)
            passed += 1
            print(f"ok {fn.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
