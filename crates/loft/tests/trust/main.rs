//! Loft's security suite: authentication, the SNS endpoint policy and limits, each checked
//! against the real `loft` binary ([`harness`]) as a client or an attacker would meet it.
//!
//! - [`sigv4`]: SigV4 with aws-sdk-sqs (right and wrong keys, a skewed clock), raw JSON
//!   and Query requests, presigned URLs (aws-sigv4), the seeds' API signed by aws-sigv4
//!   and by `curl --aws-sigv4`, and an open server.
//! - [`endpoint_policy`]: SNS HTTP/S endpoints refused at Subscribe and at delivery.
//! - [`limits`]: in-flight messages, queue and topic caps, header size, connections.
//! - [`malformed`]: thousands of generated bad requests for every protocol, each answered
//!   with a 4xx in its protocol's error shape.

mod endpoint_policy;
mod harness;
mod limits;
mod malformed;
mod sigv4;
