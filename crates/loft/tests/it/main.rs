//! Integration tests: each starts the real `loft` binary on `127.0.0.1:0` over a fresh
//! SQLite file and talks HTTP to it; `multinode` starts several on one PostgreSQL database
//! (when `LOFT_TEST_DATABASE_URL` is set).

mod common;
#[path = "../support/http_sink.rs"]
mod http_sink;
#[path = "../support/loft.rs"]
mod loft;
#[path = "../support/skips.rs"]
mod skips;
#[path = "../support/wait.rs"]
mod wait;

mod bad_input;
mod cells_down;
mod cells_move;
mod cells_status;
mod console_listing;
mod crash;
mod durable_state;
mod function_hosts;
mod functions;
mod localstack;
mod multinode;
mod native_queues;
mod native_topics;
mod outbox;
mod regions;
mod restart;
mod runtimes;
mod seed_scenarios;
mod storage_faults;
