//! `loft serve --runtime per-core` (a current-thread runtime per core, each accepting from
//! the listening socket): requests on many connections, long polls woken by sends on
//! other connections (so, with more than one core, on other runtimes), the graceful
//! shutdown, and the state after a restart in the same mode.
//!
//! Every runtime accepts from the same listening socket, so which runtime serves which
//! connection is whichever accept loop takes it first, not chosen here: eight polling
//! connections and a sending one make it likely that some poll and its send are on
//! different runtimes. The whole `it`, `aws` and `trust` suites also run in this
//! mode with `LOFT_RUNTIME=per-core` in the environment (docs/benchmarks/history.md, "Cut:
//! `--runtime per-core` (kept, opt-in)").

use std::time::{Duration, Instant};

use crate::common::{sqs_client, Loft};

const POLLERS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_core_runtimes_wake_long_polls_across_connections_and_stop_gracefully() {
    let mut loft = Loft::start_with(&["--runtime", "per-core"]);
    assert!(
        loft.stderr().contains("per-core runtime"),
        "the per-core mode was not taken; stderr:\n{}",
        loft.stderr()
    );
    let sender = sqs_client(&loft.url(""));
    let mut urls = Vec::new();
    for i in 0..POLLERS {
        let out = sender
            .create_queue()
            .queue_name(format!("core-{i}"))
            .send()
            .await
            .expect("CreateQueue");
        urls.push(out.queue_url.expect("a queue URL"));
    }
    // One client (so one connection) per poll, each waiting up to 20 s.
    let started = Instant::now();
    let mut polls = Vec::new();
    for url in &urls {
        let client = sqs_client(&loft.url(""));
        let url = url.clone();
        polls.push(tokio::spawn(async move {
            client
                .receive_message()
                .queue_url(url)
                .wait_time_seconds(20)
                .send()
                .await
                .expect("ReceiveMessage")
        }));
    }
    // A poll that reaches the server after its message was sent receives it at once; one
    // that was waiting is woken by the send.
    for (i, url) in urls.iter().enumerate() {
        sender
            .send_message()
            .queue_url(url)
            .message_body(format!("body-{i}"))
            .send()
            .await
            .expect("SendMessage");
    }
    for (i, poll) in polls.into_iter().enumerate() {
        let out = poll.await.expect("the poll task");
        let bodies: Vec<_> = out
            .messages()
            .iter()
            .filter_map(|m| m.body().map(str::to_owned))
            .collect();
        assert_eq!(bodies, vec![format!("body-{i}")], "poll {i}");
    }
    // Woken by the sends, not ended by their 20 s wait.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the long polls were not woken by the sends ({:?})",
        started.elapsed()
    );
    // SIGTERM: the server exits 0 within the patience (asserted by restart's stop).
    loft.restart();
    // The state is the same store's: the queues are there after the restart.
    let sqs = sqs_client(&loft.url(""));
    let listed = sqs.list_queues().send().await.expect("ListQueues");
    assert_eq!(listed.queue_urls().len(), POLLERS);
    loft.stop();
}
