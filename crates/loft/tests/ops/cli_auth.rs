//! The admin commands against a server with credentials: they sign every request (SQS,
//! SNS and Loft's own routes) with the access key and secret of the environment or
//! `--access-key-id`, and without them, or with wrong ones, fail with a message that says
//! what to set.

use serde_json::{json, Value};

use crate::harness::{cli_env, CliRun, Server};

const KEY: &str = "AKIDOPS";
const SECRET: &str = "ops/Secret+1=";
const KEY2: &str = "AKIDTWO";
const SECRET2: &str = "second";

/// A server that requires signatures by [`KEY`] or [`KEY2`].
fn signed_server() -> Server {
    let keys = format!("{KEY}:{SECRET},{KEY2}:{SECRET2}");
    Server::start_with(&[], &[("LOFT_CREDENTIALS", &keys)])
        .unwrap_or_else(|f| panic!("loft did not start: {f:?}"))
}

/// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
fn creds<'a>(key: &'a str, secret: &'a str) -> [(&'static str, &'a str); 2] {
    [
        ("AWS_ACCESS_KEY_ID", key),
        ("AWS_SECRET_ACCESS_KEY", secret),
    ]
}

/// Asserts a failed command: exit status 1, nothing on stdout, and stderr holding each of
/// `needles`.
#[track_caller]
fn assert_refused(r: &CliRun, needles: &[&str]) {
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    for n in needles {
        assert!(r.stderr.contains(n), "stderr lacks {n:?}: {r:?}");
    }
}

#[test]
fn with_the_servers_credentials_every_kind_of_call_works() {
    let s = signed_server();
    let ok = creds(KEY, SECRET);
    // SQS (JSON protocol, `sqs` scope).
    let url = s
        .cli_env(&["queue", "create", "jobs"], &ok)
        .ok()
        .trim()
        .to_owned();
    assert_eq!(url, s.queue_url("jobs"));
    let id = s
        .cli_env(&["send", "jobs", "hello", "-a", "colour=blue"], &ok)
        .ok()
        .trim()
        .to_owned();
    assert_eq!(id.len(), 36, "a MessageId: {id}");
    let attrs = s
        .cli_env(
            &[
                "queue",
                "attributes",
                "jobs",
                "--set",
                "VisibilityTimeout=40",
                "--json",
            ],
            &ok,
        )
        .json();
    assert_eq!(attrs["VisibilityTimeout"], "40");
    assert_eq!(attrs["ApproximateNumberOfMessages"], "1");
    // Loft's own peek route (`/_loft/...`).
    let exported = s.cli_env(&["export", "jobs"], &ok);
    let line: Value = serde_json::from_str(exported.ok().trim()).expect("one JSON line");
    assert_eq!(line["message_id"], id.as_str());
    assert_eq!(line["body"], "hello");
    let got = s
        .cli_env(&["receive", "jobs", "--delete", "--json"], &ok)
        .json();
    assert_eq!(got[0]["Body"], "hello");
    assert_eq!(got[0]["MessageAttributes"]["colour"]["StringValue"], "blue");
    // SNS (Query protocol, `sns` scope).
    let topic = s
        .cli_env(&["topic", "create", "news"], &ok)
        .ok()
        .trim()
        .to_owned();
    assert_eq!(topic, "arn:aws:sns:us-east-1:000000000000:news");
    s.cli_env(&["subscribe", "news", "sqs", "jobs"], &ok).ok();
    s.cli_env(&["publish", "news", "fan-out"], &ok).ok();
    let topics = s.cli_env(&["topic", "list", "--json"], &ok).json();
    assert_eq!(
        topics[0]["subscriptions"][0]["Endpoint"],
        "arn:aws:sqs:us-east-1:000000000000:jobs"
    );
    let got = s
        .cli_env(&["receive", "jobs", "--delete", "--json"], &ok)
        .json();
    let envelope: Value = serde_json::from_str(got[0]["Body"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["Message"], "fan-out");
    // The other key, named by --access-key-id, which beats AWS_ACCESS_KEY_ID; with a
    // session token and another region, which are signed along: the signature holds, and
    // the request acts in that region, where `jobs` is not.
    let r = s.cli_env(
        &["queue", "list", "--json", "--access-key-id", KEY2],
        &[
            ("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN"),
            ("AWS_SECRET_ACCESS_KEY", SECRET2),
            ("AWS_SESSION_TOKEN", "a-session-token"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
        ],
    );
    assert_eq!(r.json(), json!([]));
    let r = s.cli_env(
        &["queue", "list", "--json", "--access-key-id", KEY2],
        &[
            ("AWS_SECRET_ACCESS_KEY", SECRET2),
            ("AWS_SESSION_TOKEN", "a-session-token"),
        ],
    );
    assert_eq!(
        r.json(),
        json!([{"name": "jobs", "url": url, "visible": 0, "in_flight": 0, "delayed": 0}])
    );
}

#[test]
fn import_signs_its_batches() {
    let s = signed_server();
    let ok = creds(KEY, SECRET);
    s.cli_env(&["queue", "create", "jobs"], &ok).ok();
    let r = cli_env(
        &s.base,
        &["import", "jobs"],
        Some(b"{\"body\":\"one\"}\n{\"body\":\"two\"}\n"),
        &ok,
    );
    r.ok();
    let list = s.cli_env(&["queue", "list", "--json"], &ok).json();
    assert_eq!(list[0]["visible"], 2, "{list}");
}

#[test]
fn without_credentials_every_kind_of_call_fails_and_says_what_to_set() {
    let s = signed_server();
    let hint = "the server requires signed requests: set AWS_ACCESS_KEY_ID (or --access-key-id) \
                and AWS_SECRET_ACCESS_KEY";
    let r = s.cli_env(&["queue", "create", "jobs"], &[]);
    assert_refused(&r, &["loft: MissingAuthenticationToken: ", hint]);
    let r = s.cli_env(&["topic", "list"], &[]);
    assert_refused(&r, &["loft: MissingAuthenticationToken: ", hint]);
    // Export asks GetQueueUrl first, so it is refused as every AWS call is.
    let r = s.cli_env(&["export", "jobs"], &[]);
    assert_refused(&r, &["loft: MissingAuthenticationToken: ", hint]);
    // Nothing was created.
    let list = s.cli_env(&["queue", "list", "--json"], &creds(KEY, SECRET));
    assert_eq!(list.json(), json!([]));
}

#[test]
fn wrong_credentials_fail_and_name_the_key() {
    let s = signed_server();
    let refused = "the server refused the credentials of access key";
    let r = s.cli_env(&["queue", "create", "jobs"], &creds(KEY, "not-the-secret"));
    assert_refused(
        &r,
        &["loft: SignatureDoesNotMatch: ", &format!("{refused} {KEY}")],
    );
    let r = s.cli_env(&["topic", "create", "news"], &creds(KEY, SECRET2));
    assert_refused(
        &r,
        &["loft: SignatureDoesNotMatch: ", &format!("{refused} {KEY}")],
    );
    let r = s.cli_env(&["export", "jobs"], &creds(KEY, "not-the-secret"));
    assert_refused(
        &r,
        &["loft: SignatureDoesNotMatch: ", &format!("{refused} {KEY}")],
    );
    let r = s.cli_env(&["queue", "list"], &creds("AKIDUNKNOWN", SECRET));
    assert_refused(
        &r,
        &[
            "loft: InvalidClientTokenId: ",
            &format!("{refused} AKIDUNKNOWN"),
        ],
    );
    // Half a credential is a usage error, before any request.
    let r = s.cli_env(&["queue", "list"], &[("AWS_ACCESS_KEY_ID", KEY)]);
    assert_refused(&r, &["AWS_SECRET_ACCESS_KEY is not: set both"]);
    let r = s.cli_env(&["queue", "list"], &[("AWS_SECRET_ACCESS_KEY", SECRET)]);
    assert_refused(
        &r,
        &["AWS_SECRET_ACCESS_KEY is set but no access key id is"],
    );
    // Nothing was created.
    let list = s.cli_env(&["queue", "list", "--json"], &creds(KEY, SECRET));
    assert_eq!(list.json(), json!([]));
    let topics = s.cli_env(&["topic", "list", "--json"], &creds(KEY, SECRET));
    assert_eq!(topics.json(), json!([]));
}

#[test]
fn credentials_against_an_open_server_are_harmless() {
    let s = Server::start();
    let ok = creds(KEY, SECRET);
    s.cli_env(&["queue", "create", "jobs"], &ok).ok();
    s.cli_env(&["send", "jobs", "hi"], &ok).ok();
    let got = s.cli_env(&["receive", "jobs", "--json"], &[]).json();
    assert_eq!(got[0]["Body"], "hi");
}
