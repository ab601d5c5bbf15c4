#!/usr/bin/env python3
"""Real AWS clients against a Loft serving HTTPS: boto3 (SQS over JSON, SNS over Query)
and the AWS CLI v1 trusting a test certificate (verify=/--ca-bundle), https queue URLs
and SNS links, a client that does not trust the certificate, plain HTTP to the HTTPS port.

Starts nothing itself: give it a server started with --tls-cert CERT --tls-key KEY, its
https endpoint and the same CERT (tests/run_aws_clients.sh does both). Prints one line per
check and, last, "N passed, N failed"; exits non-zero when a check failed.
"""

import argparse
import json
import os
import ssl
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request

import boto3
import botocore
from botocore.config import Config

# Never read the developer's own AWS configuration.
os.environ["AWS_CONFIG_FILE"] = os.devnull
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
os.environ.pop("AWS_CA_BUNDLE", None)

RUN = str(int(time.time() * 1000) % 10_000_000)
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def client(ctx, service, verify=None):
    return boto3.client(
        service,
        endpoint_url=ctx.endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        verify=ctx.ca if verify is None else verify,
        config=Config(retries={"max_attempts": 0}),
    )


@check
def boto3_sqs_over_https_gets_https_queue_urls(ctx):
    sqs = client(ctx, "sqs")
    url = sqs.create_queue(QueueName=f"tls-{RUN}")["QueueUrl"]
    assert url == f"{ctx.endpoint}/000000000000/tls-{RUN}", url
    sqs.send_message(QueueUrl=url, MessageBody="over TLS")
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert got[0]["Body"] == "over TLS", got


@check
def sns_envelopes_link_to_https_and_the_certificate_is_served_there(ctx):
    sqs, sns = client(ctx, "sqs"), client(ctx, "sns")
    url = sqs.create_queue(QueueName=f"tls-fanout-{RUN}")["QueueUrl"]
    topic = sns.create_topic(Name=f"tls-{RUN}")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs",
                  Endpoint=f"arn:aws:sqs:us-east-1:000000000000:tls-fanout-{RUN}")
    sns.publish(TopicArn=topic, Message="fan-out over TLS")
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]
    envelope = json.loads(got[0]["Body"])
    assert envelope["Message"] == "fan-out over TLS", envelope
    for field in ("SigningCertURL", "UnsubscribeURL"):
        assert envelope[field].startswith(ctx.endpoint + "/"), (field, envelope[field])
    context = ssl.create_default_context(cafile=ctx.ca)
    with urllib.request.urlopen(envelope["SigningCertURL"], timeout=30, context=context) as r:
        assert b"-----BEGIN CERTIFICATE-----" in r.read()


@check
def aws_cli_v1_with_the_ca_bundle(ctx):
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
           "AWS_DEFAULT_REGION": "us-east-1"}
    base = ["aws", "--endpoint-url", ctx.endpoint, "--output", "json"]
    ok = subprocess.run(base + ["--ca-bundle", ctx.ca, "sqs", "create-queue", "--queue-name",
                                f"tls-cli-{RUN}"],
                        capture_output=True, text=True, timeout=60, env=env)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["QueueUrl"].startswith(ctx.endpoint + "/"), ok.stdout
    untrusted = subprocess.run(base + ["sqs", "list-queues"],
                               capture_output=True, text=True, timeout=60, env=env)
    assert untrusted.returncode != 0 and "SSL" in untrusted.stderr, untrusted.stderr


@check
def a_client_that_does_not_trust_the_certificate_fails_and_loft_goes_on(ctx):
    try:
        client(ctx, "sqs", verify=True).list_queues()
    except botocore.exceptions.SSLError:
        pass
    else:
        raise AssertionError("a self-signed certificate was accepted without verify=")
    assert "QueueUrls" in client(ctx, "sqs").list_queues()


@check
def plain_http_to_the_https_port_is_told_to_use_https(ctx):
    plain = "http://" + ctx.endpoint.removeprefix("https://")
    try:
        urllib.request.urlopen(plain + "/health", timeout=30)
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
        assert e.code == 400 and body["error"] == f"this listener speaks HTTPS: use {ctx.endpoint}", body
    else:
        raise AssertionError("plain HTTP was served on the HTTPS port")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True, help="https://127.0.0.1:PORT")
    parser.add_argument("--ca", required=True, help="the server's certificate (PEM)")
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
