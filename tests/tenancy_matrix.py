#!/usr/bin/env python3
"""Everything belongs to an account, over real HTTP: for each door a tenant holding the keys
of two accounts once got through (B, account 222222222222, the attacker; A, account
111111111111, the victim), the attack refused and the owner still served. boto3 (SNS over
Query) and SigV4-signed requests to Loft's own routes.

Runs against a Loft started with the config tests/iam_matrix.py writes (its keys "a" and
"b"); tests/run_aws_clients.sh runs it after the IAM matrix, on SQLite and PostgreSQL.
Prints one line per case and, last, "N passed, N failed"; exits non-zero when a case failed.

Sources of the expected answers: AWS answers another account's resource that has no
resource policy as one that does not exist (SNS `NotFound`, 404), or refuses it
(`AuthorizationError`, 403); SNS keeps SMS settings and platform applications per account
and region (SNS API Reference, SetSMSAttributes, CreatePlatformApplication).
"""

import argparse
import json
import sys
import traceback

import botocore

import iam_matrix as m

A, B = m.A, m.B
CASES = []
STATE = {}


def case(fn):
    CASES.append(fn)
    return fn


def recorded(who):
    """The recorded messages `who`'s key sees at GET /_loft/sns/messages (SigV4)."""
    status, body = m.ctx.seeds(who, "GET", "/_loft/sns/messages?limit=1000")
    assert status == 200, (status, body)
    return json.loads(body)


def texts(who):
    return [r["message"] for r in recorded(who)]


def not_found(fn, code="NotFound", status=404):
    got, got_status, message = m.refused(fn)
    assert (got, got_status) == (code, status), (got, got_status, message)
    return message


# ---- doors 1 and 2: recorded messages ----

@case
def setup_a_records_an_sms_and_a_topic_delivery():
    sns = m.ctx.sns("a")
    STATE["a_text"] = m.name("a-private-sms")
    sns.publish(PhoneNumber="+15555550123", Message=STATE["a_text"])
    topic = sns.create_topic(Name=m.name("tenancy-a"))["TopicArn"]
    STATE["a_topic"] = topic
    sns.subscribe(TopicArn=topic, Protocol="sms", Endpoint="+15555550124")
    STATE["a_topic_text"] = m.name("a-topic-sms")
    sns.publish(TopicArn=topic, Message=STATE["a_topic_text"])
    mine = texts("a")
    assert STATE["a_text"] in mine and STATE["a_topic_text"] in mine, mine


@case
def door1_another_account_does_not_see_the_recorded_messages():
    seen = recorded("b")
    leaked = [r for r in seen if A in (r.get("topic_arn") or "") or r["message"] in
              (STATE["a_text"], STATE["a_topic_text"])]
    assert not leaked, leaked


@case
def door1_basic_sign_in_of_another_account_does_not_see_them_either():
    import base64
    import urllib.request
    key_id, secret, *_ = m.KEYS["b"]
    token = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
    req = urllib.request.Request(m.ctx.endpoint + "/_loft/sns/messages?limit=1000",
                                 headers={"Authorization": f"Basic {token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        seen = json.loads(resp.read())
    assert all(r["message"] not in (STATE["a_text"], STATE["a_topic_text"]) for r in seen), seen


@case
def door1_the_other_account_sees_its_own_records():
    text = m.name("b-own-sms")
    m.ctx.sns("b").publish(PhoneNumber="+15555550125", Message=text)
    assert text in texts("b")
    assert text not in texts("a")


@case
def door2_another_account_deletes_nothing_of_the_victims():
    status, body = m.ctx.seeds("b", "DELETE",
                               f"/_loft/sns/messages?topic_arn={STATE['a_topic']}")
    assert (status, json.loads(body)) == (200, {"deleted": 0}), (status, body)
    status, body = m.ctx.seeds("b", "DELETE", "/_loft/sns/messages?protocol=sms")
    assert status == 200, (status, body)
    mine = texts("a")
    assert STATE["a_text"] in mine and STATE["a_topic_text"] in mine, mine
    assert texts("b") == [], "b's own records went"


@case
def door2_the_owner_still_deletes_its_records():
    status, body = m.ctx.seeds("a", "DELETE",
                               f"/_loft/sns/messages?topic_arn={STATE['a_topic']}")
    assert (status, json.loads(body)) == (200, {"deleted": 1}), (status, body)
    mine = texts("a")
    assert STATE["a_topic_text"] not in mine and STATE["a_text"] in mine, mine


# ---- door 3: platform applications and endpoints ----

@case
def setup_a_creates_a_platform_application_and_endpoint():
    sns = m.ctx.sns("a")
    app = sns.create_platform_application(
        Name=m.name("a-app"), Platform="GCM",
        Attributes={"PlatformPrincipal": "a-principal",
                    "PlatformCredential": "a-server-key"})["PlatformApplicationArn"]
    assert f":{A}:app/GCM/" in app, app
    STATE["a_app"] = app
    STATE["a_endpoint"] = sns.create_platform_endpoint(
        PlatformApplicationArn=app, Token=m.name("a-device"))["EndpointArn"]


@case
def door3_another_account_does_not_list_the_application():
    listed = [p["PlatformApplicationArn"]
              for p in m.ctx.sns("b").list_platform_applications()["PlatformApplications"]]
    assert STATE["a_app"] not in listed, listed
    mine = [p["PlatformApplicationArn"]
            for p in m.ctx.sns("a").list_platform_applications()["PlatformApplications"]]
    assert STATE["a_app"] in mine, mine


@case
def door3_another_account_cannot_read_set_or_use_the_application():
    b = m.ctx.sns("b")
    msg = not_found(lambda: b.get_platform_application_attributes(
        PlatformApplicationArn=STATE["a_app"]))
    assert msg == "PlatformApplication does not exist", msg
    not_found(lambda: b.set_platform_application_attributes(
        PlatformApplicationArn=STATE["a_app"], Attributes={"PlatformCredential": "b"}))
    not_found(lambda: b.list_endpoints_by_platform_application(
        PlatformApplicationArn=STATE["a_app"]))
    not_found(lambda: b.create_platform_endpoint(
        PlatformApplicationArn=STATE["a_app"], Token="b-device"))
    not_found(lambda: b.get_endpoint_attributes(EndpointArn=STATE["a_endpoint"]))
    got, status, _ = m.refused(lambda: b.publish(TargetArn=STATE["a_endpoint"], Message="x"))
    assert (got, status) == ("InvalidParameter", 400), (got, status)


@case
def door3_another_accounts_delete_leaves_the_application():
    b = m.ctx.sns("b")
    b.delete_endpoint(EndpointArn=STATE["a_endpoint"])
    b.delete_platform_application(PlatformApplicationArn=STATE["a_app"])
    a = m.ctx.sns("a")
    attrs = a.get_platform_application_attributes(
        PlatformApplicationArn=STATE["a_app"])["Attributes"]
    assert attrs.get("PlatformCredential", "a-server-key") == "a-server-key", attrs
    a.get_endpoint_attributes(EndpointArn=STATE["a_endpoint"])
    a.publish(TargetArn=STATE["a_endpoint"], Message="to a's device")


@case
def door3_the_owner_deletes_its_application():
    a = m.ctx.sns("a")
    a.delete_platform_application(PlatformApplicationArn=STATE["a_app"])
    not_found(lambda: a.get_platform_application_attributes(
        PlatformApplicationArn=STATE["a_app"]))


# ---- door 4: SMS attributes ----

@case
def door4_sms_attributes_are_per_account():
    a, b = m.ctx.sns("a"), m.ctx.sns("b")
    a.set_sms_attributes(attributes={"DefaultSenderID": "ASender"})
    seen = b.get_sms_attributes()["attributes"]
    assert seen.get("DefaultSenderID") != "ASender", seen
    b.set_sms_attributes(attributes={"DefaultSenderID": "BSender"})
    assert a.get_sms_attributes()["attributes"]["DefaultSenderID"] == "ASender"
    assert b.get_sms_attributes()["attributes"]["DefaultSenderID"] == "BSender"


# ---- door 6: a subscription ARN made of another topic's ARN and a subscription's id ----

@case
def setup_a_subscribes_its_queue_and_b_has_a_topic():
    sqs = m.ctx.sqs("a")
    q = m.name("tenancy-a-inbox")
    url = sqs.create_queue(QueueName=q)["QueueUrl"]
    topic = m.ctx.sns("a").create_topic(Name=m.name("tenancy-a-feed"))["TopicArn"]
    sub = m.ctx.sns("a").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=m.qarn(A, q),
                                   ReturnSubscriptionArn=True)["SubscriptionArn"]
    b_topic = m.ctx.sns("b").create_topic(Name=m.name("tenancy-b-own"))["TopicArn"]
    STATE.update(a_inbox=url, a_feed=topic, a_sub=sub,
                 forged=b_topic + ":" + sub.rsplit(":", 1)[1])


@case
def door6_the_forged_arn_names_no_subscription():
    b = m.ctx.sns("b")
    forged = STATE["forged"]
    msg = not_found(lambda: b.get_subscription_attributes(SubscriptionArn=forged))
    assert msg == "Subscription does not exist", msg
    not_found(lambda: b.set_subscription_attributes(
        SubscriptionArn=forged, AttributeName="FilterPolicy",
        AttributeValue=json.dumps({"never": ["matches"]})))
    try:
        b.unsubscribe(SubscriptionArn=forged)
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "NotFound", e.response
    got, status, _ = m.refused(
        lambda: b.get_subscription_attributes(SubscriptionArn=STATE["a_sub"]))
    assert (got, status) == ("AuthorizationError", 403), (got, status)


@case
def door6_the_owner_keeps_its_subscription_and_deliveries():
    a = m.ctx.sns("a")
    attrs = a.get_subscription_attributes(SubscriptionArn=STATE["a_sub"])["Attributes"]
    assert "FilterPolicy" not in attrs, attrs
    text = m.name("still-delivered")
    a.publish(TopicArn=STATE["a_feed"], Message=text)
    got = m.ctx.sqs("a").receive_message(QueueUrl=STATE["a_inbox"], WaitTimeSeconds=5)
    bodies = [json.loads(x["Body"])["Message"] for x in got.get("Messages", [])]
    assert bodies == [text], got
    a.set_subscription_attributes(SubscriptionArn=STATE["a_sub"],
                                  AttributeName="RawMessageDelivery", AttributeValue="true")
    a.unsubscribe(SubscriptionArn=STATE["a_sub"])
    not_found(lambda: a.get_subscription_attributes(SubscriptionArn=STATE["a_sub"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True)
    args = parser.parse_args()
    m.ctx.endpoint = args.endpoint.rstrip("/")
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
