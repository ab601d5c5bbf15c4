//! `loft cells status` finds the cells as `loft serve` does (issue 32 item 5): the
//! repeated `--database-url`, `LOFT_DATABASE_URLS`, or the `[[cells]]` of the `--config`
//! file, a flag or environment variable winning over the file; it prints one line per
//! cell with its number, its URL without the password, and its queues, topics and
//! messages. A real `loft serve` over two cells (two schemas of the test database, from
//! the same config file) makes the queues, topics and messages it counts.
//!
//! Skipped (with a note) unless `LOFT_TEST_DATABASE_URL` names a database; failed instead
//! with `LOFT_TEST_REQUIRE_POSTGRES=1`.

use std::time::Duration;

use serde_json::json;

use super::cells_down::{form, post, schemas, sqs_ok, with_schema};
use crate::loft::{run_cli, Storage, TestLoft};

/// One cell's line of `loft cells status`: number, URL, queues, topics, messages.
#[derive(Debug, PartialEq, Eq)]
struct Line {
    cell: u32,
    url: String,
    queues: u64,
    topics: u64,
    messages: u64,
}

/// The cell lines of `loft cells status`'s output (after its header).
fn lines(stdout: &str) -> Vec<Line> {
    let mut rows = stdout.lines();
    assert_eq!(
        rows.next(),
        Some("cell\turl\tqueues\ttopics\tmessages"),
        "header: {stdout}"
    );
    rows.map(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 5, "a line of five fields: {l:?}");
        Line {
            cell: f[0].parse().expect("cell number"),
            url: f[1].to_owned(),
            queues: f[2].parse().expect("queues"),
            topics: f[3].parse().expect("topics"),
            messages: f[4].parse().expect("messages"),
        }
    })
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_finds_the_cells_as_serve_does() {
    let url = match std::env::var("LOFT_TEST_DATABASE_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            crate::skips::postgres().skip("cells_status::status_finds_the_cells_as_serve_does");
            return;
        }
    };
    let schemas = schemas(&url).await;
    let cells = [
        with_schema(&url, &schemas[0]),
        with_schema(&url, &schemas[1]),
    ];
    let dir = tempfile::tempdir().expect("temporary directory");
    let config = dir.path().join("loft.toml");
    std::fs::write(
        &config,
        format!(
            "[[cells]]\ndatabase_url = {:?}\n\n[[cells]]\ndatabase_url = {:?}\n",
            cells[0], cells[1]
        ),
    )
    .expect("config file");
    let config_path = config.to_str().expect("UTF-8 path").to_owned();
    let mut loft = TestLoft::new()
        .storage(Storage::FromArgs)
        .arg("--config")
        .arg(&config)
        .args(["--database-pool-size", "4"])
        .log("warn")
        .start_in(dir);
    let base = loft.url.clone();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(40))
        .build()
        .expect("HTTP client");
    // Three queues and two topics spread by count over the two cells; five messages.
    for q in ["a", "b", "c"] {
        sqs_ok(&http, &base, "CreateQueue", json!({"QueueName": q})).await;
    }
    for t in ["t1", "t2"] {
        let form = form(&[
            ("Action", "CreateTopic"),
            ("Version", "2010-03-31"),
            ("Name", t),
        ]);
        let a = post(&http, &base, None, form).await;
        assert_eq!(a.status, 200, "CreateTopic {t}: {}", a.body);
    }
    for i in 0..5 {
        let body =
            json!({"QueueUrl": format!("{base}/000000000000/b"), "MessageBody": format!("m{i}")});
        sqs_ok(&http, &base, "SendMessage", body).await;
    }

    // From the config file alone.
    let from_file = run_cli(&["cells", "status", "--config", &config_path], None, &[]);
    let seen = lines(from_file.ok());
    assert_eq!(
        seen.iter().map(|l| l.cell).collect::<Vec<_>>(),
        [1, 2],
        "{seen:?}"
    );
    assert_eq!(seen.iter().map(|l| l.queues).sum::<u64>(), 3, "{seen:?}");
    assert_eq!(seen.iter().map(|l| l.topics).sum::<u64>(), 2, "{seen:?}");
    assert_eq!(seen.iter().map(|l| l.messages).sum::<u64>(), 5, "{seen:?}");
    assert!(
        seen.iter().all(|l| l.queues >= 1),
        "spread over both cells: {seen:?}"
    );
    let parsed = reqwest::Url::parse(&url).expect("LOFT_TEST_DATABASE_URL is a URL");
    if let Some(password) = parsed.password() {
        assert!(
            !from_file.stdout.contains(&format!(":{password}@")),
            "the password is shown: {}",
            from_file.stdout
        );
    }

    // The same cells given as repeated flags, and through LOFT_CONFIG: the same lines.
    let flags = run_cli(
        &[
            "cells",
            "status",
            "--database-url",
            &cells[0],
            "--database-url",
            &cells[1],
        ],
        None,
        &[],
    );
    assert_eq!(lines(flags.ok()), seen);
    let env = run_cli(&["cells", "status"], None, &[("LOFT_CONFIG", &config_path)]);
    assert_eq!(lines(env.ok()), seen);

    // LOFT_DATABASE_URLS wins over the file, whose list here names an unreachable cell.
    let other = tempfile::tempdir().expect("temporary directory");
    let unreachable = other.path().join("loft.toml");
    std::fs::write(
        &unreachable,
        "[[cells]]\ndatabase_url = \"postgres://loft@127.0.0.1:1/nowhere\"\n",
    )
    .expect("config file");
    let joined = cells.join(",");
    let won = run_cli(
        &[
            "cells",
            "status",
            "--config",
            unreachable.to_str().expect("path"),
        ],
        None,
        &[("LOFT_DATABASE_URLS", &joined)],
    );
    assert_eq!(lines(won.ok()), seen);

    // Nothing names a cell: a clear refusal, not a default.
    let none = run_cli(&["cells", "status"], None, &[]);
    assert_ne!(none.code, 0, "{none:?}");
    assert!(none.stderr.contains("--config"), "{}", none.stderr);

    loft.stop();
    for s in &schemas {
        let _ = loft_store::PgStore::drop_schema(&url, s).await;
    }
}
