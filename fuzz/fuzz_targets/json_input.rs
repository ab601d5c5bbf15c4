//! The SQS JSON protocol's input path: the `X-Amz-Target` header and the body decoded
//! into the typed request ([`sqs_json::target`], [`sqs_json::decode`]), then the operation
//! run by the adapter ([`sqs::call`]) and its answer encoded, against a fresh service over an in-memory SQLite store with a standard
//! and a FIFO queue, so every typed read of every operation's input shape is reached.
//!
//! Input: the `X-Amz-Target` value on the first line (`AmazonSQS.SendMessage`), the JSON
//! body after it.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use loft_core::clock::SystemClock;
use loft_core::{Service, ServiceConfig};
use loft_server::aws::{sqs, sqs_json};
use loft_store::SqliteStore;

fuzz_target!(|data: &[u8]| {
    let (target, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let target = String::from_utf8_lossy(target);
    let Ok(op) = sqs_json::target(&target) else {
        return;
    };
    let Ok(request) = sqs_json::decode(op, body) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = Arc::new(SqliteStore::open_in_memory().expect("in-memory store"));
        let svc = Service::new(store, Arc::new(SystemClock), ServiceConfig::default(), None);
        for name in ["q", "q.fifo"] {
            let mut attributes = std::collections::BTreeMap::new();
            if name.ends_with(".fifo") {
                attributes.insert("FifoQueue".to_owned(), "true".to_owned());
            }
            svc.sqs()
                .create_queue(name, attributes, Default::default())
                .await
                .expect("create the fuzz queues");
        }
        // Long polls answer at once: a WaitTimeSeconds in the input must not stall the
        // fuzzer.
        svc.begin_shutdown();
        let ctx = sqs::Context {
            principal: loft_core::service::Principal::open(svc.config()),
            base_url: "http://127.0.0.1:9324".into(),
            trace_header: None,
            client: None,
            unsigned: false,
        };
        if let Ok(out) = sqs::call(svc, ctx, request).await {
            let _ = sqs_json::encode(&out);
        }
    });
});
