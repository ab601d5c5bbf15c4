//! `loft cells move QUEUE --to N` against two running nodes on two cells (issue 32 item
//! 5): the command killed with SIGKILL in the middle (held by a trigger at the chosen
//! step, so the kill lands there, not by timing) leaves the queue whole in one cell,
//! answering 503 with Retry-After to changes while paused and its counts to reads; run
//! again it finishes, and left alone a running node finishes it once its lease ends; the node that did not run the move then serves the queue from its
//! new cell with every message once, in order, with its MessageId and SequenceNumber,
//! and numbers going on above. While it waits, `loft cells status` lists the move with
//! the step it reached and its owner. Two schemas of `LOFT_TEST_DATABASE_URL` are the cells.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::cells_down::{post, Answer};
use super::outbox::Cells;
use crate::loft::{run_cli, LOFT_BIN};

const ACCOUNT: &str = "000000000000";

/// Who finishes the killed run's move.
#[derive(Clone, Copy, Debug)]
enum Finish {
    /// `loft cells move` run again.
    Rerun,
    /// A running node's sweep, once the killed run's lease ended.
    Sweep,
}

/// Where the killed run is held.
#[derive(Clone, Copy, Debug)]
enum Hold {
    /// The copy: its insert of the queue's row in cell 2 waits (after the gate).
    Copy,
    /// The clear: its delete of the queue's row in cell 1 waits (after the catalog flip).
    Clear,
}

impl Hold {
    /// Cell (0-based), table, event, trigger row, advisory key.
    fn place(self) -> (usize, &'static str, &'static str, &'static str, i64) {
        match self {
            Hold::Copy => (1, "queues", "INSERT", "NEW", 0x6d6f_7665_0001),
            Hold::Clear => (0, "queues", "DELETE", "OLD", 0x6d6f_7665_0002),
        }
    }
}

async fn sqs(http: &reqwest::Client, base: &str, op: &str, body: Value) -> Answer {
    post(http, base, Some(op), body.to_string()).await
}

/// `op` on `base`, retried on 503 as an SDK retries (at most 100 times, 100 ms apart):
/// the answer that is not a 503.
async fn sqs_retrying(http: &reqwest::Client, base: &str, op: &str, body: Value) -> Value {
    for _ in 0..100 {
        let a = sqs(http, base, op, body.clone()).await;
        if a.status == 503 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        assert_eq!(a.status, 200, "{op}: {}", a.body);
        return serde_json::from_str(&a.body).expect("JSON");
    }
    panic!("{op}: 503 for 10 s");
}

fn move_args<'a>(cells: &'a Cells, queue: &'a str) -> Vec<&'a str> {
    vec![
        "cells",
        "move",
        queue,
        "--to",
        "2",
        "--database-url",
        &cells.node_urls[0],
        "--database-url",
        &cells.node_urls[1],
    ]
}

fn status_args(cells: &Cells) -> Vec<&str> {
    vec![
        "cells",
        "status",
        "--database-url",
        &cells.node_urls[0],
        "--database-url",
        &cells.node_urls[1],
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_killed_midway_finishes_by_a_rerun_or_a_node_and_every_node_follows() {
    for (hold, finish) in [
        (Hold::Copy, Finish::Rerun),
        (Hold::Clear, Finish::Rerun),
        (Hold::Copy, Finish::Sweep),
    ] {
        let Some(mut cells) = Cells::start_as(
            "cells_move::a_move_killed_midway_finishes_by_a_rerun_or_a_node_and_every_node_follows",
        )
        .await
        else {
            return;
        };
        let a = cells.add_node();
        let b = cells.add_node();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(40))
            .build()
            .expect("HTTP client");
        let url = format!("{a}/{ACCOUNT}/q.fifo");
        let created = sqs(
            &http,
            &a,
            "CreateQueue",
            json!({"QueueName": "q.fifo", "Attributes": {"FifoQueue": "true"}}),
        )
        .await;
        assert_eq!(created.status, 200, "{}", created.body);
        let mut sent = Vec::new();
        for i in 0..6 {
            let node = if i % 2 == 0 { &a } else { &b };
            let r = sqs_retrying(
                &http,
                node,
                "SendMessage",
                json!({"QueueUrl": url, "MessageBody": format!("m{i}"),
                       "MessageGroupId": "g", "MessageDeduplicationId": format!("d{i}")}),
            )
            .await;
            sent.push((
                r["MessageId"].as_str().unwrap().to_owned(),
                r["SequenceNumber"]
                    .as_str()
                    .unwrap()
                    .parse::<u128>()
                    .unwrap(),
            ));
        }

        // Hold the move at the chosen step, start it, and kill it there.
        let (cell, table, event, row, key) = hold.place();
        let gated = cells.sql(cell).await;
        gated
            .batch_execute(&format!(
                "CREATE FUNCTION move_hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                   PERFORM pg_advisory_lock_shared({key}); \
                   PERFORM pg_advisory_unlock_shared({key}); RETURN {row}; END $$; \
                 CREATE TRIGGER move_hold BEFORE {event} ON {table} FOR EACH ROW \
                   EXECUTE FUNCTION move_hold();"
            ))
            .await
            .expect("hold");
        let holder = cells.sql(cell).await;
        holder
            .execute("SELECT pg_advisory_lock($1)", &[&key])
            .await
            .expect("close the hold");
        let mut mover = Command::new(LOFT_BIN)
            .args(move_args(&cells, &url))
            .env_remove("LOFT_DATABASE_URL")
            .env_remove("LOFT_DATABASE_URLS")
            .env_remove("LOFT_CONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("loft cells move");
        let waiting = format!(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
             AND ((classid::bigint << 32) | objid::bigint) = {key}"
        );
        crate::wait::poll(Duration::from_secs(30), || async {
            let rows = holder.query(waiting.as_str(), &[]).await.ok()?;
            rows.first().map(|r| r.get::<_, i32>(0))
        })
        .await
        .unwrap_or_else(|| panic!("{hold:?} {finish:?}: the move never reached its hold"));
        mover.kill().expect("SIGKILL the move");
        mover.wait().expect("reap the move");
        // Opened first: the killed run's backend still waits at the hold (PostgreSQL
        // sees its client gone only when it next reads from it), holding its table
        // locks; once through, it reads no COMMIT and rolls back.
        holder
            .execute("SELECT pg_advisory_unlock($1)", &[&key])
            .await
            .expect("open the hold");
        gated
            .batch_execute("DROP TRIGGER move_hold ON queues; DROP FUNCTION move_hold();")
            .await
            .expect("remove the hold");

        // `loft cells status` lists the move the killed run left: queue, cells, the last
        // step it did, its owner (the killed command) and its lease.
        let status = run_cli(&status_args(&cells), None, &[]);
        let out = status.ok();
        let moving: Vec<Vec<&str>> = out
            .lines()
            .skip_while(|l| !l.starts_with("moving\t"))
            .skip(1)
            .map(|l| l.split('\t').collect())
            .collect();
        let step = match hold {
            Hold::Copy => "gate",
            Hold::Clear => "flip",
        };
        assert_eq!(moving.len(), 1, "{hold:?} {finish:?}: {out}");
        assert_eq!(
            &moving[0][..4],
            ["q.fifo", "1", "2", step],
            "{hold:?} {finish:?}: {out}"
        );
        assert!(
            moving[0][4].starts_with("cli:"),
            "{hold:?} {finish:?}: {out}"
        );
        assert!(
            moving[0][5].ends_with(" left"),
            "{hold:?} {finish:?}: {out}"
        );

        // Killed there: the queue is whole. Paused before the flip: a change is a 503
        // with Retry-After, a read answers.
        if let Hold::Copy = hold {
            let r = sqs(
                &http,
                &b,
                "SendMessage",
                json!({"QueueUrl": url, "MessageBody": "paused",
                       "MessageGroupId": "g", "MessageDeduplicationId": "paused"}),
            )
            .await;
            assert_eq!(r.status, 503, "{hold:?} {finish:?}: {}", r.body);
            assert!(r.body.contains("ServiceUnavailable"), "{}", r.body);
            assert!(r.retry_after.is_some(), "{hold:?} {finish:?}: Retry-After");
            let attrs = sqs_retrying(
                &http,
                &b,
                "GetQueueAttributes",
                json!({"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessages"]}),
            )
            .await;
            assert_eq!(attrs["Attributes"]["ApproximateNumberOfMessages"], "6");
        }

        match finish {
            Finish::Rerun => {
                // Run again: it finishes.
                let rerun = run_cli(&move_args(&cells, &url), None, &[]);
                let said = rerun.ok();
                assert!(
                    said.contains("from cell 1 to cell 2 (finishing an earlier run)"),
                    "{hold:?} {finish:?}: {said}"
                );
            }
            Finish::Sweep => {
                // Left alone: once the killed run's lease has ended (ended here by hand,
                // as 30 s passing would), a running node takes the move over and
                // finishes it.
                let source = cells.sql(0).await;
                source
                    .execute(
                        "UPDATE loft_cell_moved SET lease_until = 0 WHERE state = 'moving'",
                        &[],
                    )
                    .await
                    .expect("end the lease");
                let owner = crate::wait::poll(Duration::from_secs(60), || async {
                    let rows = source
                        .query(
                            "SELECT owner FROM loft_cell_moved WHERE state = 'moved'",
                            &[],
                        )
                        .await
                        .ok()?;
                    rows.first().map(|r| r.get::<_, Option<String>>(0))
                })
                .await
                .unwrap_or_else(|| panic!("{hold:?} {finish:?}: no node finished the move"));
                let owner = owner.unwrap_or_default();
                assert!(
                    !owner.starts_with("cli:"),
                    "{hold:?} {finish:?}: a node took it: {owner}"
                );
            }
        }
        let status = run_cli(&status_args(&cells), None, &[]);
        assert!(
            !status.ok().contains("moving\t"),
            "{hold:?} {finish:?}: done"
        );
        let counts: Vec<String> = status
            .ok()
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                format!("{} {}", f[2], f[4])
            })
            .collect();
        assert_eq!(
            counts,
            ["0 0", "1 6"],
            "{hold:?} {finish:?}: queues and messages per cell"
        );

        // Node b did not run the move: it serves the queue from cell 2, every message
        // once, in order, with its MessageId and SequenceNumber; the next number is above.
        let next = sqs_retrying(
            &http,
            &b,
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": "m6",
                   "MessageGroupId": "g", "MessageDeduplicationId": "d6"}),
        )
        .await;
        let n6: u128 = next["SequenceNumber"].as_str().unwrap().parse().unwrap();
        assert!(
            n6 > sent[5].1,
            "{hold:?} {finish:?}: {n6} after {}",
            sent[5].1
        );
        let mut got = Vec::new();
        for _ in 0..7 {
            let r = sqs_retrying(
                &http,
                &b,
                "ReceiveMessage",
                json!({"QueueUrl": url, "MaxNumberOfMessages": 10,
                       "MessageSystemAttributeNames": ["SequenceNumber"]}),
            )
            .await;
            let batch = r["Messages"].as_array().cloned().unwrap_or_default();
            if batch.is_empty() {
                break;
            }
            for m in batch {
                got.push((
                    m["Body"].as_str().unwrap().to_owned(),
                    m["MessageId"].as_str().unwrap().to_owned(),
                    m["Attributes"]["SequenceNumber"]
                        .as_str()
                        .unwrap()
                        .parse::<u128>()
                        .unwrap(),
                ));
                sqs_retrying(
                    &http,
                    &b,
                    "DeleteMessage",
                    json!({"QueueUrl": url, "ReceiptHandle": m["ReceiptHandle"]}),
                )
                .await;
            }
        }
        let mut want: Vec<(String, String, u128)> = sent
            .iter()
            .enumerate()
            .map(|(i, (id, n))| (format!("m{i}"), id.clone(), *n))
            .collect();
        want.push((
            "m6".into(),
            next["MessageId"].as_str().unwrap().to_owned(),
            n6,
        ));
        assert_eq!(got, want, "{hold:?} {finish:?}");
    }
}
