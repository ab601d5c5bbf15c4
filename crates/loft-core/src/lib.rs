//! Loft's core: everything about queues and topics that is not HTTP and not SQL.
//!
//! - [`service`]: the one service layer. Every protocol adapter calls it; it owns every rule
//!   (attributes and defaults, visibility, delays, retention, redrive, long polling, fan-out).
//! - [`store`]: the storage trait the engines implement.
//! - [`model`]: the records the service and the stores exchange.
//! - [`attributes`]: queue attribute names, ranges, defaults.
//! - [`endpoint_policy`]: which addresses SNS HTTP/S endpoints may reach.
//! - [`delivery_policy`]: SNS HTTP/S delivery policies and their retry schedules.
//! - [`message`]: message attributes, body rules and AWS's MD5 digests.
//! - [`data_protection`]: SNS message data protection: policies, data identifiers, operations.
//! - [`filter_policy`]: SNS subscription filter policies: parsing, validation, matching.
//! - [`functions`]: the functions Loft invokes, asynchronous-invocation retries, the SNS
//!   and SQS events functions receive.
//! - [`iam`]: IAM policies (identity and resource): parsing and evaluation.
//! - [`names`]: queue and topic names, ARNs.
//! - [`error`]: the one table of error codes.
//! - [`clock`]: time, movable in tests.

pub mod attributes;
pub mod cidr;
pub mod clock;
pub mod data_protection;
pub mod delivery_policy;
pub mod endpoint_policy;
pub mod error;
pub mod filter_policy;
pub mod functions;
pub mod iam;
pub mod message;
pub mod model;
pub mod names;
pub mod private_dir;
pub mod service;
pub mod store;

pub use error::{Error, ErrorCode, Result};
pub use service::{Service, ServiceConfig};
