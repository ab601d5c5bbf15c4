//! Loft's security suite: authentication, the SNS endpoint policy, limits and TLS, each checked
//! against the real `loft` binary ([`harness`]) as a client or an attacker would meet it.
//!
//! - [`sigv4`]: SigV4 with aws-sdk-sqs (right and wrong keys, a skewed clock), raw JSON
//!   and Query requests, presigned URLs (aws-sigv4), the seeds' API signed by aws-sigv4
//!   and by `curl --aws-sigv4`, and an open server.
//! - [`console`]: the web console's HTTP Basic sign-in (and SigV4) with credentials, and
//!   Basic refused on the AWS protocols and the seeds' API.
//! - [`endpoint_policy`]: SNS HTTP/S endpoints refused at Subscribe and at delivery.
//! - [`limits`]: in-flight messages, queue and topic caps, header size, connections.
//! - [`tls`]: HTTPS listeners: the SDKs over TLS, https queue URLs and SNS links, plain
//!   HTTP and failed handshakes, limits over TLS, bad certificate and key files.
//! - [`tls_outbound`]: Loft as a TLS client: SNS deliveries to `https://` endpoints
//!   trusted through `SSL_CERT_FILE` (and refused when untrusted, denied by the endpoint
//!   policy or redirecting), and the admin commands against an HTTPS listener.
//! - [`tenants`]: two accounts on one Loft: event source mappings (Lambda API and
//!   `/_loft/mappings`) and message move tasks stay their account's.
//! - [`hostile`]: account B and a denied identity of account A try every operation and
//!   route against A's resources, on SQLite and PostgreSQL; nothing leaks or changes.
//! - [`malformed`]: thousands of generated bad requests for every protocol, each answered
//!   with a 4xx in its protocol's error shape.

mod auto_create;
mod browsers;
mod console;
mod endpoint_policy;
mod harness;
mod hostile;
#[path = "../support/http_sink.rs"]
mod http_sink;
mod limits;
#[path = "../support/loft.rs"]
mod loft;
mod malformed;
mod proxies;
mod reset;
mod sigv4;
#[path = "../support/skips.rs"]
mod skips;
mod tenants;
mod tls;
mod tls_outbound;
#[path = "../support/wait.rs"]
mod wait;
