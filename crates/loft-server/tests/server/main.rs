//! loft-server's integration tests, one binary (each test binary links the crate and its
//! dependencies again): the service over the in-memory SQLite store with a `ManualClock`,
//! and the server's workers run by hand.
//!
//! - [`delivery_clock`]: HTTP/S delivery retries at the times the DeliveryPolicy says.
//! - [`functions_clock`]: functions as consumers (SNS and SQS events, retries, throttles).
//! - [`publish_signing`]: which deliveries carry a signed envelope.
//!
//! One suite alone: `cargo test -p loft-server --test server delivery_clock::`.

mod delivery_clock;
mod functions_clock;
mod publish_signing;
