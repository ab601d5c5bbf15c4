#!/usr/bin/env python3
"""Real AWS clients against a Loft that requires SigV4: boto3 (SQS over JSON, SNS over
Query), the AWS CLI v1 and a raw Query request signed by botocore's SigV4Auth, with the
right key, a wrong secret and an unknown key.

Starts nothing itself: give it a server started with LOFT_CREDENTIALS="KEY:SECRET" and
the same pair here (tests/run_aws_clients.sh does both). Prints one line per check and,
last, "N passed, N failed"; exits non-zero when a check failed.
"""

import argparse
import os
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

import boto3
import botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

# Never read the developer's own AWS configuration.
os.environ["AWS_CONFIG_FILE"] = os.devnull
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull

RUN = str(int(time.time() * 1000) % 10_000_000)
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def client(ctx, service, key=None, secret=None):
    return boto3.client(
        service,
        endpoint_url=ctx.endpoint,
        region_name="us-east-1",
        aws_access_key_id=key or ctx.key,
        aws_secret_access_key=secret or ctx.secret,
        config=Config(retries={"max_attempts": 0}),
    )


def error_code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("the call succeeded")


@check
def boto3_sqs_json_with_the_right_key(ctx):
    sqs = client(ctx, "sqs")
    url = sqs.create_queue(QueueName=f"signed-{RUN}")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="signed")
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert got[0]["Body"] == "signed", got


@check
def boto3_sns_query_with_the_right_key(ctx):
    sns = client(ctx, "sns")
    arn = sns.create_topic(Name=f"signed-{RUN}")["TopicArn"]
    assert any(t["TopicArn"] == arn for t in sns.list_topics()["Topics"])


@check
def boto3_with_a_wrong_secret_or_an_unknown_key_is_refused(ctx):
    for service, call in [("sqs", "list_queues"), ("sns", "list_topics")]:
        bad = client(ctx, service, secret="not-the-secret")
        assert error_code(getattr(bad, call)) == ("SignatureDoesNotMatch", 403), service
        unknown = client(ctx, service, key="AKIDUNKNOWN")
        assert error_code(getattr(unknown, call)) == ("InvalidClientTokenId", 403), service


@check
def aws_cli_v1_signs_and_a_wrong_secret_fails(ctx):
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ctx.key, "AWS_SECRET_ACCESS_KEY": ctx.secret,
           "AWS_DEFAULT_REGION": "us-east-1"}
    base = ["aws", "--endpoint-url", ctx.endpoint, "--output", "json", "sqs", "list-queues"]
    ok = subprocess.run(base, capture_output=True, text=True, timeout=60, env=env)
    assert ok.returncode == 0, ok.stderr
    env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    bad = subprocess.run(base, capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode != 0 and "SignatureDoesNotMatch" in bad.stderr, bad.stderr


@check
def raw_query_signed_by_botocore_and_unsigned(ctx):
    data = urllib.parse.urlencode({"Action": "ListQueues", "Version": "2012-11-05"})
    headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
    req = AWSRequest(method="POST", url=ctx.endpoint + "/", data=data, headers=headers)
    SigV4Auth(Credentials(ctx.key, ctx.secret), "sqs", "us-east-1").add_auth(req)
    prepared = urllib.request.Request(ctx.endpoint + "/", data=data.encode(), method="POST",
                                      headers=dict(req.headers.items()))
    with urllib.request.urlopen(prepared, timeout=30) as resp:
        assert resp.status == 200
    unsigned = urllib.request.Request(ctx.endpoint + "/", data=data.encode(), method="POST",
                                      headers=headers)
    try:
        urllib.request.urlopen(unsigned, timeout=30)
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        assert e.code == 403 and "<Code>MissingAuthenticationToken</Code>" in body, body
    else:
        raise AssertionError("an unsigned request was accepted")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--secret", required=True)
    ctx = parser.parse_args()
    ctx.endpoint = ctx.endpoint.rstrip("/")
    passed = failed = 0
    for fn in CHECKS:
        try:
            fn(ctx)
        except Exception:  # noqa: BLE001 - every failure is reported, then counted
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc(file=sys.stdout)
        else:
            passed += 1
            print(f"ok   {fn.__name__}")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
