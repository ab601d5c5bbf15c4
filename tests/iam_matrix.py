#!/usr/bin/env python3
"""Accounts and permissions over real HTTP: a matrix of allow/deny cases with boto3 (SQS
over JSON, SNS over Query) and raw SigV4-signed SQS Query requests, over two accounts.

`--write-config PATH` writes the Loft config file the matrix needs (its `[[credentials]]`:
keys of accounts 111111111111 and 222222222222, with and without identity policies) and
exits; `--endpoint URL` runs the matrix against a Loft started with that file
(tests/run_aws_clients.sh does both, on SQLite and, when LOFT_TEST_DATABASE_URL is set, on
PostgreSQL). Prints one line per case and, last, "N passed, N failed"; exits non-zero when a
case failed.

Sources of the expected answers: the IAM User Guide's policy evaluation logic (explicit
deny wins; within an account an identity or a resource policy allows; across accounts both
must), the SQS and SNS developer guides' queue and topic policies, and AWS's refusal
shapes (SQS `AccessDenied`, SNS `AuthorizationError`, HTTP 403, "User: ARN is not
authorized to perform: ACTION on resource: ARN").
"""

import argparse
import json
import os
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

A = "111111111111"
B = "222222222222"
REGION = "us-east-1"
RUN = str(int(time.time() * 1000) % 10_000_000)

# Access keys: (id, secret, account, identity, identity policies).
KEYS = {
    # Account A, no policies: everything in its own account.
    "a": ("AKIDTEAMA", "secret-a", A, "user/team-a", []),
    # Account A, read-only, and never DeleteQueue.
    "a_reader": ("AKIDAREADER", "secret-ar", A, "user/a-reader", [{
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow",
             "Action": ["sqs:ReceiveMessage", "sqs:Get*", "sqs:List*", "sns:List*", "sns:Get*"],
             "Resource": "*"},
            {"Effect": "Deny", "Action": "sqs:DeleteQueue", "Resource": "*"},
        ]}]),
    # Account A, may send to team-a-* queues only (wildcard action and resource).
    "a_sender": ("AKIDASENDER", "secret-as", A, "user/a-sender", [{
        "Version": "2012-10-17",
        "Statement": {"Effect": "Allow", "Action": "sqs:Send*",
                      "Resource": f"arn:aws:sqs:*:{A}:team-a-*"}}]),
    # Account A, everything but SNS (NotAction).
    "a_nosns": ("AKIDANOSNS", "secret-an", A, "user/a-nosns", [{
        "Version": "2012-10-17",
        "Statement": {"Effect": "Allow", "NotAction": "sns:*", "Resource": "*"}}]),
    # Account A, may start move tasks and send, but not receive.
    "a_mover": ("AKIDAMOVER", "secret-am", A, "user/a-mover", [{
        "Version": "2012-10-17",
        "Statement": {"Effect": "Allow",
                      "Action": ["sqs:StartMessageMoveTask", "sqs:SendMessage"],
                      "Resource": "*"}}]),
    # Account B, no policies.
    "b": ("AKIDTEAMB", "secret-b", B, "user/team-b", []),
    # Account B, may send to account A's shared-* queues and do anything in its own account.
    "b_app": ("AKIDBAPP", "secret-bapp", B, "role/b-app", [{
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sqs:SendMessage",
             "Resource": f"arn:aws:sqs:{REGION}:{A}:shared-*"},
            {"Effect": "Allow", "Action": ["sqs:*", "sns:*"], "Resource": f"arn:aws:*:*:{B}:*"},
        ]}]),
    # The default account (no account id in the entry): as Loft was before accounts.
    "default": ("AKIDDEFAULT", "secret-d", None, None, []),
}


def write_config(path):
    lines = []
    for key_id, secret, account, identity, policies in KEYS.values():
        lines.append("[[credentials]]")
        lines.append(f'access_key_id = "{key_id}"')
        lines.append(f'secret_access_key = "{secret}"')
        if account:
            lines.append(f'account_id = "{account}"')
        if identity:
            lines.append(f'identity = "{identity}"')
        if policies:
            lines.append("policies = [" + ", ".join(
                json.dumps(json.dumps(p)) for p in policies) + "]")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


class Ctx:
    endpoint = ""

    def client(self, service, who):
        key_id, secret, *_ = KEYS[who]
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name=REGION,
            aws_access_key_id=key_id, aws_secret_access_key=secret,
            config=Config(retries={"max_attempts": 0}))

    def sqs(self, who):
        return self.client("sqs", who)

    def sns(self, who):
        return self.client("sns", who)

    def query(self, who, params, path="/"):
        """A raw SQS Query request signed by botocore; (status, body)."""
        key_id, secret, *_ = KEYS[who]
        data = urllib.parse.urlencode({**params, "Version": "2012-11-05"})
        headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
        url = self.endpoint + path
        req = AWSRequest(method="POST", url=url, data=data, headers=headers)
        SigV4Auth(Credentials(key_id, secret), "sqs", REGION).add_auth(req)
        prepared = urllib.request.Request(url, data=data.encode(), method="POST",
                                          headers=dict(req.headers.items()))
        try:
            with urllib.request.urlopen(prepared, timeout=30) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


    def seeds(self, who, method, path, body=None):
        """A SigV4-signed request to the seeds' API; (status, body)."""
        key_id, secret, *_ = KEYS[who]
        url = self.endpoint + path
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        req = AWSRequest(method=method, url=url, data=data or b"", headers=headers)
        SigV4Auth(Credentials(key_id, secret), "sqs", REGION).add_auth(req)
        prepared = urllib.request.Request(url, data=data, method=method,
                                          headers=dict(req.headers.items()))
        try:
            with urllib.request.urlopen(prepared, timeout=30) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


ctx = Ctx()
STATE = {}


def refused(fn):
    """(code, status, message) of the ClientError `fn` raises."""
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        err = e.response["Error"]
        return err["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"], err.get("Message", "")
    raise AssertionError("the call succeeded")


def assert_denied(fn, action, resource, who_arn, code="AccessDenied"):
    got, status, message = refused(fn)
    assert (got, status) == (code, 403), (got, status, message)
    expected = f"User: {who_arn} is not authorized to perform: {action} on resource: {resource}"
    assert message.startswith(expected), message


def qarn(account, name):
    return f"arn:aws:sqs:{REGION}:{account}:{name}"


def tarn(account, name):
    return f"arn:aws:sns:{REGION}:{account}:{name}"


def url_of(account, name):
    return f"{ctx.endpoint}/{account}/{name}"


def user(account, identity):
    return f"arn:aws:iam::{account}:{identity}"


def name(base):
    return f"{base}-{RUN}"


def set_policy(queue_url, statements):
    ctx.sqs("a").set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(
        {"Version": "2012-10-17", "Statement": statements})})


# ---- own account ----

@case
def own_account_creates_a_queue_whose_url_and_arn_carry_the_account():
    q = name("team-a-orders")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    assert url.endswith(f"/{A}/{q}"), url
    arn = ctx.sqs("a").get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    assert arn["Attributes"]["QueueArn"] == qarn(A, q), arn
    STATE["a_queue"] = url
    STATE["a_queue_name"] = q


@case
def own_account_sends_receives_and_deletes():
    s = ctx.sqs("a")
    s.send_message(QueueUrl=STATE["a_queue"], MessageBody="hello")
    msgs = s.receive_message(QueueUrl=STATE["a_queue"], WaitTimeSeconds=1)["Messages"]
    assert msgs[0]["Body"] == "hello"
    s.delete_message(QueueUrl=STATE["a_queue"], ReceiptHandle=msgs[0]["ReceiptHandle"])


@case
def list_queues_shows_only_the_callers_account():
    mine = ctx.sqs("a").list_queues(QueueNamePrefix="team-a-orders-" + RUN).get("QueueUrls", [])
    theirs = ctx.sqs("b").list_queues(QueueNamePrefix="team-a-orders-" + RUN).get("QueueUrls", [])
    assert mine == [STATE["a_queue"]], mine
    assert theirs == [], theirs


@case
def the_same_name_in_two_accounts_is_two_queues():
    q = STATE["a_queue_name"]
    url_b = ctx.sqs("b").create_queue(QueueName=q)["QueueUrl"]
    assert url_b.endswith(f"/{B}/{q}") and url_b != STATE["a_queue"], url_b
    ctx.sqs("b").send_message(QueueUrl=url_b, MessageBody="b's")
    got = ctx.sqs("a").receive_message(QueueUrl=STATE["a_queue"], WaitTimeSeconds=0)
    assert "Messages" not in got, got
    ctx.sqs("b").delete_queue(QueueUrl=url_b)


@case
def get_queue_url_looks_in_the_callers_account():
    code, status, _ = refused(lambda: ctx.sqs("b").get_queue_url(QueueName=STATE["a_queue_name"]))
    assert (code, status) == ("AWS.SimpleQueueService.NonExistentQueue", 400), (code, status)


@case
def get_queue_url_of_another_account_without_a_policy_is_denied():
    assert_denied(
        lambda: ctx.sqs("b").get_queue_url(QueueName=STATE["a_queue_name"],
                                           QueueOwnerAWSAccountId=A),
        "sqs:GetQueueUrl", qarn(A, STATE["a_queue_name"]), user(B, "user/team-b"))


@case
def cross_account_send_without_a_queue_policy_is_denied_json():
    assert_denied(
        lambda: ctx.sqs("b").send_message(QueueUrl=STATE["a_queue"], MessageBody="x"),
        "sqs:SendMessage", qarn(A, STATE["a_queue_name"]), user(B, "user/team-b"))


@case
def cross_account_send_without_a_queue_policy_is_denied_query():
    status, body = ctx.query("b", {"Action": "SendMessage", "QueueUrl": STATE["a_queue"],
                                   "MessageBody": "x"})
    assert status == 403, (status, body)
    assert "<Code>AccessDenied</Code>" in body and "<Type>Sender</Type>" in body, body
    assert (f"User: {user(B, 'user/team-b')} is not authorized to perform: sqs:SendMessage "
            f"on resource: {qarn(A, STATE['a_queue_name'])}") in body, body


@case
def cross_account_receive_without_a_policy_is_denied():
    assert_denied(
        lambda: ctx.sqs("b").receive_message(QueueUrl=STATE["a_queue"]),
        "sqs:ReceiveMessage", qarn(A, STATE["a_queue_name"]), user(B, "user/team-b"))


@case
def cross_account_delete_queue_without_a_policy_is_denied():
    assert_denied(
        lambda: ctx.sqs("b").delete_queue(QueueUrl=STATE["a_queue"]),
        "sqs:DeleteQueue", qarn(A, STATE["a_queue_name"]), user(B, "user/team-b"))


@case
def cross_account_set_attributes_without_a_policy_is_denied():
    assert_denied(
        lambda: ctx.sqs("b").set_queue_attributes(QueueUrl=STATE["a_queue"],
                                                  Attributes={"DelaySeconds": "1"}),
        "sqs:SetQueueAttributes", qarn(A, STATE["a_queue_name"]), user(B, "user/team-b"))


# ---- resource policies ----

@case
def a_queue_policy_granting_the_other_account_lets_it_send_json_and_query():
    q = name("shared-inbox")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    STATE["shared"] = url
    STATE["shared_name"] = q
    set_policy(url, [{"Sid": "b-sends", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{B}:root"},
                      "Action": "sqs:SendMessage", "Resource": qarn(A, q)}])
    ctx.sqs("b").send_message(QueueUrl=url, MessageBody="from b")
    status, body = ctx.query("b", {"Action": "SendMessage", "QueueUrl": url, "MessageBody": "q"})
    assert status == 200, (status, body)
    got = ctx.sqs("a").receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    assert {m["Body"] for m in got["Messages"]} <= {"from b", "q"}


@case
def a_grant_of_send_does_not_grant_receive():
    assert_denied(
        lambda: ctx.sqs("b").receive_message(QueueUrl=STATE["shared"]),
        "sqs:ReceiveMessage", qarn(A, STATE["shared_name"]), user(B, "user/team-b"))


@case
def the_grant_reaches_get_queue_url_with_the_owner_id_only_when_granted():
    # The policy grants SendMessage only; GetQueueUrl needs its own grant.
    assert_denied(
        lambda: ctx.sqs("b").get_queue_url(QueueName=STATE["shared_name"], QueueOwnerAWSAccountId=A),
        "sqs:GetQueueUrl", qarn(A, STATE["shared_name"]), user(B, "user/team-b"))


@case
def add_permission_grants_and_remove_permission_revokes():
    url = STATE["shared"]
    ctx.sqs("a").add_permission(QueueUrl=url, Label="b-receives", AWSAccountIds=[B],
                                Actions=["ReceiveMessage", "GetQueueUrl"])
    ctx.sqs("b").receive_message(QueueUrl=url, WaitTimeSeconds=0)
    got = ctx.sqs("b").get_queue_url(QueueName=STATE["shared_name"], QueueOwnerAWSAccountId=A)
    assert got["QueueUrl"] == url, got
    ctx.sqs("a").remove_permission(QueueUrl=url, Label="b-receives")
    assert_denied(lambda: ctx.sqs("b").receive_message(QueueUrl=url),
                  "sqs:ReceiveMessage", qarn(A, STATE["shared_name"]), user(B, "user/team-b"))


@case
def an_explicit_deny_in_the_queue_policy_wins_over_its_allow():
    q = name("shared-denied")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [
        {"Effect": "Allow", "Principal": "*", "Action": "sqs:*", "Resource": qarn(A, q)},
        {"Effect": "Deny", "Principal": {"AWS": B}, "Action": "sqs:SendMessage", "Resource": qarn(A, q)},
    ])
    got, status, message = refused(
        lambda: ctx.sqs("b").send_message(QueueUrl=url, MessageBody="x"))
    assert (got, status) == ("AccessDenied", 403)
    # Another account is told what it would be told of a queue without a policy, so that
    # the refusal does not show what A's policy says (docs/security.md, "Accounts").
    assert "because no resource-based policy allows the sqs:SendMessage action" in message, message
    ctx.sqs("b").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])


@case
def a_queue_policy_deny_binds_the_owner_too():
    q = name("team-a-locked")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Deny", "Principal": "*", "Action": "sqs:PurgeQueue",
                      "Resource": qarn(A, q)}])
    assert_denied(lambda: ctx.sqs("a").purge_queue(QueueUrl=url),
                  "sqs:PurgeQueue", qarn(A, q), user(A, "user/team-a"))
    ctx.sqs("a").send_message(QueueUrl=url, MessageBody="still fine")


@case
def principal_star_grants_everyone_wildcard_actions():
    q = name("shared-open")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": "*", "Action": "sqs:*Message*",
                      "Resource": qarn(A, q)}])
    ctx.sqs("b").send_message(QueueUrl=url, MessageBody="x")
    ctx.sqs("b").receive_message(QueueUrl=url, WaitTimeSeconds=0)
    assert_denied(lambda: ctx.sqs("b").delete_queue(QueueUrl=url),
                  "sqs:DeleteQueue", qarn(A, q), user(B, "user/team-b"))


@case
def a_grant_to_one_user_of_the_other_account_is_that_user_only():
    q = name("shared-one-user")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": {"AWS": user(B, "role/b-app")},
                      "Action": "sqs:SendMessage", "Resource": qarn(A, q)}])
    ctx.sqs("b_app").send_message(QueueUrl=url, MessageBody="x")
    assert_denied(lambda: ctx.sqs("b").send_message(QueueUrl=url, MessageBody="x"),
                  "sqs:SendMessage", qarn(A, q), user(B, "user/team-b"))


# ---- conditions ----

@case
def condition_secure_transport_true_refuses_plain_http():
    q = name("shared-tls-only")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": {"AWS": B}, "Action": "sqs:SendMessage",
                      "Resource": qarn(A, q), "Condition": {"Bool": {"aws:SecureTransport": "true"}}}])
    assert_denied(lambda: ctx.sqs("b").send_message(QueueUrl=url, MessageBody="x"),
                  "sqs:SendMessage", qarn(A, q), user(B, "user/team-b"))


@case
def condition_deny_without_tls_binds_the_owner():
    q = name("team-a-tls")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Deny", "Principal": "*", "Action": "sqs:SendMessage",
                      "Resource": qarn(A, q), "Condition": {"Bool": {"aws:SecureTransport": "false"}}}])
    assert_denied(lambda: ctx.sqs("a").send_message(QueueUrl=url, MessageBody="x"),
                  "sqs:SendMessage", qarn(A, q), user(A, "user/team-a"))


@case
def condition_source_ip_in_range_allows():
    q = name("shared-ip-ok")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": {"AWS": B}, "Action": "sqs:SendMessage",
                      "Resource": qarn(A, q), "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}])
    ctx.sqs("b").send_message(QueueUrl=url, MessageBody="x")


@case
def condition_source_ip_out_of_range_denies():
    q = name("shared-ip-no")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": {"AWS": B}, "Action": "sqs:SendMessage",
                      "Resource": qarn(A, q), "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}])
    assert_denied(lambda: ctx.sqs("b").send_message(QueueUrl=url, MessageBody="x"),
                  "sqs:SendMessage", qarn(A, q), user(B, "user/team-b"))


@case
def condition_principal_account_string_equals():
    q = name("shared-acct")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": "*", "Action": "sqs:SendMessage",
                      "Resource": qarn(A, q),
                      "Condition": {"StringEquals": {"aws:PrincipalAccount": B}}}])
    ctx.sqs("b").send_message(QueueUrl=url, MessageBody="x")


@case
def condition_string_like_on_principal_arn():
    q = name("shared-like")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": "*", "Action": "sqs:SendMessage",
                      "Resource": qarn(A, q),
                      "Condition": {"StringLike": {"aws:PrincipalArn": f"arn:aws:iam::{B}:role/*"}}}])
    ctx.sqs("b_app").send_message(QueueUrl=url, MessageBody="x")
    assert_denied(lambda: ctx.sqs("b").send_message(QueueUrl=url, MessageBody="x"),
                  "sqs:SendMessage", qarn(A, q), user(B, "user/team-b"))


# ---- identity policies ----

@case
def a_reader_may_receive_and_read_attributes():
    ctx.sqs("a_reader").receive_message(QueueUrl=STATE["a_queue"], WaitTimeSeconds=0)
    ctx.sqs("a_reader").get_queue_attributes(QueueUrl=STATE["a_queue"], AttributeNames=["All"])


@case
def a_reader_may_not_send():
    got, status, message = refused(
        lambda: ctx.sqs("a_reader").send_message(QueueUrl=STATE["a_queue"], MessageBody="x"))
    assert (got, status) == ("AccessDenied", 403)
    assert message == (f"User: {user(A, 'user/a-reader')} is not authorized to perform: "
                       f"sqs:SendMessage on resource: {qarn(A, STATE['a_queue_name'])} because "
                       "no identity-based policy allows the sqs:SendMessage action"), message


@case
def a_reader_may_not_create_queues():
    assert_denied(lambda: ctx.sqs("a_reader").create_queue(QueueName=name("reader-made")),
                  "sqs:CreateQueue", qarn(A, name("reader-made")), user(A, "user/a-reader"))


@case
def an_explicit_deny_in_the_identity_policy_is_reported_as_such():
    got, status, message = refused(
        lambda: ctx.sqs("a_reader").delete_queue(QueueUrl=STATE["a_queue"]))
    assert (got, status) == ("AccessDenied", 403)
    assert message.endswith("with an explicit deny in an identity-based policy"), message


@case
def a_reader_lists_only_its_account():
    urls = ctx.sqs("a_reader").list_queues(QueueNamePrefix="team-a-orders-" + RUN).get("QueueUrls", [])
    assert urls == [STATE["a_queue"]], urls


@case
def a_same_account_queue_policy_grants_what_the_identity_policy_does_not():
    q = name("team-a-reader-inbox")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": {"AWS": user(A, "user/a-reader")},
                      "Action": "sqs:SendMessage", "Resource": qarn(A, q)}])
    ctx.sqs("a_reader").send_message(QueueUrl=url, MessageBody="allowed by the queue")


@case
def wildcard_identity_policy_sends_to_matching_queues():
    s = ctx.sqs("a_sender")
    s.send_message(QueueUrl=STATE["a_queue"], MessageBody="x")
    out = s.send_message_batch(QueueUrl=STATE["a_queue"], Entries=[
        {"Id": "1", "MessageBody": "a"}, {"Id": "2", "MessageBody": "b"}])
    assert len(out["Successful"]) == 2, out


@case
def wildcard_identity_policy_refuses_other_queues():
    assert_denied(
        lambda: ctx.sqs("a_sender").send_message(QueueUrl=STATE["shared"], MessageBody="x"),
        "sqs:SendMessage", qarn(A, STATE["shared_name"]), user(A, "user/a-sender"))


@case
def wildcard_identity_policy_refuses_other_actions():
    assert_denied(
        lambda: ctx.sqs("a_sender").receive_message(QueueUrl=STATE["a_queue"]),
        "sqs:ReceiveMessage", qarn(A, STATE["a_queue_name"]), user(A, "user/a-sender"))


@case
def wildcard_identity_policy_refuses_query_too():
    status, body = ctx.query("a_sender", {"Action": "PurgeQueue", "QueueUrl": STATE["a_queue"]})
    assert status == 403 and "<Code>AccessDenied</Code>" in body, (status, body)


@case
def not_action_allows_sqs_but_not_sns():
    ctx.sqs("a_nosns").get_queue_attributes(QueueUrl=STATE["a_queue"], AttributeNames=["All"])
    got, status, message = refused(lambda: ctx.sns("a_nosns").list_topics())
    assert (got, status) == ("AuthorizationError", 403), (got, status)
    assert message.startswith(f"User: {user(A, 'user/a-nosns')} is not authorized to perform: "
                              f"SNS:ListTopics on resource: arn:aws:sns:{REGION}:{A}:"), message


@case
def cross_account_needs_the_identity_policy_as_well():
    # shared-inbox grants account B's root; b_app's identity policy allows shared-* of A.
    ctx.sqs("b_app").send_message(QueueUrl=STATE["shared"], MessageBody="both allow")
    q = name("other-granted")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    set_policy(url, [{"Effect": "Allow", "Principal": {"AWS": B}, "Action": "sqs:SendMessage",
                      "Resource": qarn(A, q)}])
    got, status, message = refused(
        lambda: ctx.sqs("b_app").send_message(QueueUrl=url, MessageBody="x"))
    assert (got, status) == ("AccessDenied", 403)
    assert message.endswith("because no identity-based policy allows the sqs:SendMessage action"), message
    ctx.sqs("b").send_message(QueueUrl=url, MessageBody="b has no policies: allowed")


@case
def identity_policy_alone_does_not_reach_another_account():
    q = name("shared-no-policy")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    got, status, message = refused(
        lambda: ctx.sqs("b_app").send_message(QueueUrl=url, MessageBody="x"))
    assert (got, status) == ("AccessDenied", 403)
    assert message.endswith("because no resource-based policy allows the sqs:SendMessage action"), message


# ---- SNS ----

@case
def topics_are_per_account():
    t = name("events")
    arn_a = ctx.sns("a").create_topic(Name=t)["TopicArn"]
    arn_b = ctx.sns("b").create_topic(Name=t)["TopicArn"]
    assert arn_a == tarn(A, t) and arn_b == tarn(B, t), (arn_a, arn_b)
    listed = [x["TopicArn"] for x in ctx.sns("b").list_topics()["Topics"]]
    assert arn_b in listed and arn_a not in listed, listed
    STATE["topic"] = arn_a
    STATE["topic_name"] = t
    owner = ctx.sns("a").get_topic_attributes(TopicArn=arn_a)["Attributes"]["Owner"]
    assert owner == A, owner


@case
def cross_account_publish_without_a_topic_policy_is_denied():
    assert_denied(lambda: ctx.sns("b").publish(TopicArn=STATE["topic"], Message="x"),
                  "SNS:Publish", STATE["topic"], user(B, "user/team-b"), code="AuthorizationError")


@case
def cross_account_subscribe_without_a_topic_policy_is_denied():
    assert_denied(
        lambda: ctx.sns("b").subscribe(TopicArn=STATE["topic"], Protocol="sqs",
                                       Endpoint=qarn(B, "whatever")),
        "SNS:Subscribe", STATE["topic"], user(B, "user/team-b"), code="AuthorizationError")


@case
def a_topic_policy_grants_publish_to_the_other_account():
    t = name("shared-events")
    arn = ctx.sns("a").create_topic(Name=t)["TopicArn"]
    ctx.sns("a").set_topic_attributes(TopicArn=arn, AttributeName="Policy", AttributeValue=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": B},
                                                "Action": "sns:Publish", "Resource": arn}]}))
    ctx.sns("b").publish(TopicArn=arn, Message="granted")
    assert_denied(lambda: ctx.sns("b").delete_topic(TopicArn=arn),
                  "SNS:DeleteTopic", arn, user(B, "user/team-b"), code="AuthorizationError")


@case
def sns_add_permission_grants_publish():
    t = name("perm-events")
    arn = ctx.sns("a").create_topic(Name=t)["TopicArn"]
    assert_denied(lambda: ctx.sns("b").publish(TopicArn=arn, Message="x"),
                  "SNS:Publish", arn, user(B, "user/team-b"), code="AuthorizationError")
    ctx.sns("a").add_permission(TopicArn=arn, Label="b-pub", AWSAccountId=[B], ActionName=["Publish"])
    ctx.sns("b").publish(TopicArn=arn, Message="now granted")


@case
def a_reader_may_read_topics_but_not_publish():
    ctx.sns("a_reader").get_topic_attributes(TopicArn=STATE["topic"])
    assert_denied(lambda: ctx.sns("a_reader").publish(TopicArn=STATE["topic"], Message="x"),
                  "SNS:Publish", STATE["topic"], user(A, "user/a-reader"), code="AuthorizationError")


def fan_out_setup(queue_base, policy):
    """A topic of account A subscribed (by A) to a queue of account B; returns (topic, url)."""
    t = name(queue_base + "-topic")
    topic = ctx.sns("a").create_topic(Name=t)["TopicArn"]
    q = name(queue_base)
    url = ctx.sqs("b").create_queue(QueueName=q)["QueueUrl"]
    if policy:
        ctx.sqs("b").set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"},
                "Action": "sqs:SendMessage", "Resource": qarn(B, q),
                "Condition": {"ArnEquals": {"aws:SourceArn": policy}}}]})})
    ctx.sns("a").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=qarn(B, q),
                           Attributes={"RawMessageDelivery": "true"})
    confirm_as_queue_owner(url)
    return topic, url


def confirm_as_queue_owner(url):
    """B confirms the subscription A made to B's queue with the SubscriptionConfirmation
    that arrived there (none arrives when the queue's policy refuses the topic)."""
    got = ctx.sqs("b").receive_message(QueueUrl=url, WaitTimeSeconds=1)
    for m in got.get("Messages", []):
        body = json.loads(m["Body"])
        assert body["Type"] == "SubscriptionConfirmation", body
        ctx.sns("b").confirm_subscription(TopicArn=body["TopicArn"], Token=body["Token"])
        ctx.sqs("b").delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


@case
def sns_to_a_cross_account_queue_is_delivered_when_its_policy_allows_the_topic():
    topic = tarn(A, name("fanout-ok-topic"))
    topic, url = fan_out_setup("fanout-ok", topic)
    ctx.sns("a").publish(TopicArn=topic, Message="across accounts")
    got = ctx.sqs("b").receive_message(QueueUrl=url, WaitTimeSeconds=2)
    assert got["Messages"][0]["Body"] == "across accounts", got


@case
def sns_to_a_cross_account_queue_without_a_policy_is_not_delivered():
    topic, url = fan_out_setup("fanout-none", None)
    ctx.sns("a").publish(TopicArn=topic, Message="refused")
    got = ctx.sqs("b").receive_message(QueueUrl=url, WaitTimeSeconds=1)
    assert "Messages" not in got, got


@case
def sns_to_a_cross_account_queue_whose_policy_names_another_topic_is_not_delivered():
    topic, url = fan_out_setup("fanout-other", tarn(A, "some-other-topic"))
    ctx.sns("a").publish(TopicArn=topic, Message="refused")
    got = ctx.sqs("b").receive_message(QueueUrl=url, WaitTimeSeconds=1)
    assert "Messages" not in got, got


@case
def a_refused_cross_account_delivery_goes_to_the_subscriptions_dead_letter_queue():
    t = name("fanout-dlq-topic")
    topic = ctx.sns("a").create_topic(Name=t)["TopicArn"]
    dlq = name("fanout-dlq")
    dlq_url = ctx.sqs("a").create_queue(QueueName=dlq)["QueueUrl"]
    q = name("fanout-refusing")
    url = ctx.sqs("b").create_queue(QueueName=q)["QueueUrl"]
    # B lets the topic send long enough to confirm A's subscription, then takes it back.
    ctx.sqs("b").set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"},
            "Action": "sqs:SendMessage", "Resource": qarn(B, q),
            "Condition": {"ArnEquals": {"aws:SourceArn": topic}}}]})})
    ctx.sns("a").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=qarn(B, q), Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": qarn(A, dlq)})})
    confirm_as_queue_owner(url)
    ctx.sqs("b").set_queue_attributes(QueueUrl=url, Attributes={"Policy": ""})
    ctx.sns("a").publish(TopicArn=topic, Message="to the dlq")
    got = ctx.sqs("a").receive_message(QueueUrl=dlq_url, WaitTimeSeconds=2)
    assert "to the dlq" in got["Messages"][0]["Body"], got


@case
def subscription_principal_is_the_subscribers_identity():
    t = name("principal-topic")
    topic = ctx.sns("a").create_topic(Name=t)["TopicArn"]
    arn = ctx.sns("a").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=qarn(A, name("any")),
                                 ReturnSubscriptionArn=True)["SubscriptionArn"]
    attrs = ctx.sns("a").get_subscription_attributes(SubscriptionArn=arn)["Attributes"]
    assert attrs["SubscriptionPrincipal"] == user(A, "user/team-a"), attrs
    assert attrs["Owner"] == A, attrs
    mine = [x["SubscriptionArn"] for x in ctx.sns("a").list_subscriptions()["Subscriptions"]]
    theirs = [x["SubscriptionArn"] for x in ctx.sns("b").list_subscriptions()["Subscriptions"]]
    assert arn in mine and arn not in theirs, (mine, theirs)


@case
def sns_to_a_same_account_queue_needs_no_policy():
    t = name("fanout-own-topic")
    topic = ctx.sns("a").create_topic(Name=t)["TopicArn"]
    q = name("team-a-fanout")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    ctx.sns("a").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=qarn(A, q),
                           Attributes={"RawMessageDelivery": "true"})
    ctx.sns("a").publish(TopicArn=topic, Message="own account")
    got = ctx.sqs("a").receive_message(QueueUrl=url, WaitTimeSeconds=2)
    assert got["Messages"][0]["Body"] == "own account", got


# ---- the default account ----

@case
def a_key_without_an_account_is_the_default_account_as_before():
    q = name("legacy")
    url = ctx.sqs("default").create_queue(QueueName=q)["QueueUrl"]
    assert url.endswith(f"/000000000000/{q}"), url
    ctx.sqs("default").send_message(QueueUrl=url, MessageBody="x")
    t = ctx.sns("default").create_topic(Name=q)["TopicArn"]
    assert t == tarn("000000000000", q), t
    theirs = ctx.sqs("a").list_queues(QueueNamePrefix=q).get("QueueUrls", [])
    assert theirs == [], theirs


@case
def the_default_account_is_another_account_to_the_others():
    q = name("legacy-private")
    url = ctx.sqs("default").create_queue(QueueName=q)["QueueUrl"]
    assert_denied(lambda: ctx.sqs("a").send_message(QueueUrl=url, MessageBody="x"),
                  "sqs:SendMessage", qarn("000000000000", q), user(A, "user/team-a"))


# ---- SenderId ----

@case
def sender_id_is_the_identitys_unique_id_or_the_account():
    q = name("team-a-sender-id")
    url = ctx.sqs("a").create_queue(QueueName=q)["QueueUrl"]
    ctx.sqs("a").send_message(QueueUrl=url, MessageBody="x")
    got = ctx.sqs("a").receive_message(QueueUrl=url, AttributeNames=["SenderId"], WaitTimeSeconds=1)
    sender = got["Messages"][0]["Attributes"]["SenderId"]
    assert sender.startswith("AIDA") and len(sender) == 21, sender
    q2 = name("legacy-sender-id")
    url2 = ctx.sqs("default").create_queue(QueueName=q2)["QueueUrl"]
    ctx.sqs("default").send_message(QueueUrl=url2, MessageBody="x")
    got = ctx.sqs("default").receive_message(QueueUrl=url2, AttributeNames=["SenderId"],
                                            WaitTimeSeconds=1)
    assert got["Messages"][0]["Attributes"]["SenderId"] == "000000000000", got


# ---- dead-letter queues and move tasks across accounts ----

@case
def a_redrive_policy_naming_another_accounts_dlq_is_refused():
    dlq = name("b-dlq-foreign")
    ctx.sqs("b").create_queue(QueueName=dlq)
    policy = json.dumps({"deadLetterTargetArn": qarn(B, dlq), "maxReceiveCount": "1"})
    code, status, message = refused(lambda: ctx.sqs("a").create_queue(
        QueueName=name("team-a-src"), Attributes={"RedrivePolicy": policy}))
    assert (code, status) == ("InvalidParameterValue", 400), (code, status, message)
    assert message.endswith("Reason: Dead letter target does not exist."), message


@case
def a_move_task_needs_send_on_its_destination():
    s = ctx.sqs("b")
    dlq = name("b-dlq")
    dlq_url = s.create_queue(QueueName=dlq)["QueueUrl"]
    policy = json.dumps({"deadLetterTargetArn": qarn(B, dlq), "maxReceiveCount": "1"})
    s.create_queue(QueueName=name("b-src"), Attributes={"RedrivePolicy": policy})
    s.send_message(QueueUrl=dlq_url, MessageBody="parked")
    # Account A's queue grants B nothing: B may not move messages into it.
    dest = name("team-a-dest")
    ctx.sqs("a").create_queue(QueueName=dest)
    assert_denied(lambda: s.start_message_move_task(SourceArn=qarn(B, dlq),
                                                    DestinationArn=qarn(A, dest)),
                  "sqs:SendMessage", qarn(A, dest), user(B, "user/team-b"))
    # Allowed StartMessageMoveTask but not ReceiveMessage: it may not take the messages.
    a_dlq = name("team-a-dlq")
    ctx.sqs("a").create_queue(QueueName=a_dlq)
    ctx.sqs("a").create_queue(QueueName=name("team-a-dlq-src"), Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": qarn(A, a_dlq),
                                     "maxReceiveCount": "1"})})
    assert_denied(lambda: ctx.sqs("a_mover").start_message_move_task(SourceArn=qarn(A, a_dlq)),
                  "sqs:ReceiveMessage", qarn(A, a_dlq), user(A, "user/a-mover"))


# ---- regions, with verified signatures ----

@case
def a_verified_signature_for_another_region_acts_in_that_region():
    q = name("team-a-regional")
    away = boto3.client(
        "sqs", endpoint_url=ctx.endpoint, region_name="eu-west-1",
        aws_access_key_id=KEYS["a"][0], aws_secret_access_key=KEYS["a"][1],
        config=Config(retries={"max_attempts": 0}))
    url = away.create_queue(QueueName=q)["QueueUrl"]
    assert url.endswith(f"/queue/eu-west-1/{A}/{q}"), url
    arn = away.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    assert arn["Attributes"]["QueueArn"] == f"arn:aws:sqs:eu-west-1:{A}:{q}", arn
    home = ctx.sqs("a").list_queues(QueueNamePrefix=q).get("QueueUrls", [])
    assert home == [], home
    assert away.list_queues(QueueNamePrefix=q)["QueueUrls"] == [url]
    # Another region's queue URL through a client signing for us-east-1: not there.
    code, status, _ = refused(lambda: ctx.sqs("a").send_message(QueueUrl=url, MessageBody="x"))
    assert (code, status) == ("AWS.SimpleQueueService.NonExistentQueue", 400), (code, status)


# ---- the seeds' API (the default account) ----

@case
def seeds_api_works_for_a_default_account_key():
    q = name("seed-queue")
    status, body = ctx.seeds("default", "POST", f"/queues/{q}")
    assert status in (200, 201), (status, body)
    status, body = ctx.seeds("default", "POST", f"/queues/{q}/messages", {"body": "hi"})
    assert status in (200, 201), (status, body)
    STATE["seed_queue"] = q


@case
def seeds_api_of_the_default_account_is_denied_to_another_account():
    status, body = ctx.seeds("a", "POST", f"/queues/{STATE['seed_queue']}/messages", {"body": "x"})
    assert status == 403, (status, body)
    assert ("AccessDenied: User: arn:aws:iam::111111111111:user/team-a is not authorized to "
            f"perform: sqs:SendMessage on resource: {qarn('000000000000', STATE['seed_queue'])}") in body, body


@case
def seeds_api_listing_follows_the_identity_policy():
    # Listings are of the caller's own account: an identity without
    # sqs:ListQueues is refused, one with it sees its account's queues and no other's.
    status, body = ctx.seeds("a_sender", "GET", "/queues")
    assert status == 403 and "sqs:ListQueues" in body, (status, body)
    status, body = ctx.seeds("a_reader", "GET", "/queues")
    assert status == 200, (status, body)
    listed = json.loads(body)
    assert listed and all(n.startswith(f"{A}/") for n in listed), listed
    assert STATE["seed_queue"] not in body, body
    status, body = ctx.seeds("default", "GET", "/queues")
    assert status == 200 and STATE["seed_queue"] in body, (status, body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint")
    parser.add_argument("--write-config")
    args = parser.parse_args()
    if args.write_config:
        write_config(args.write_config)
        return 0
    if not args.endpoint:
        parser.error("give --endpoint or --write-config")
    ctx.endpoint = args.endpoint.rstrip("/")
    passed = failed = 0
    for fn in CASES:
        try:
            fn()
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
