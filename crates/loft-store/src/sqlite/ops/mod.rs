//! The SQL of each store operation, run on the writer thread inside a group transaction.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};

use loft_core::model::*;
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::fifo::{FifoRead, FifoScan, FifoWalk};
use crate::replay::{drop_held, merge_held, ArchiveWindow};
use crate::seal::{Claimed, Claiming, SealedFifoPublish, Sealer};
use crate::visibility::{self, VisibilityRow};

type Map = BTreeMap<String, String>;

fn to_json(map: &Map) -> String {
    serde_json::to_string(map).unwrap_or_else(|_| "{}".into())
}

fn from_json(text: &str) -> Map {
    serde_json::from_str(text).unwrap_or_default()
}

/// The columns [`message_row`] reads, in its order (a macro, so that statements can be
/// built with `concat!` as constants).
macro_rules! message_columns {
    () => {
        "seq, queue_id, message_id, body, \
    md5_body, message_attributes, system_attributes, sender_id, sent_at, visible_at, \
    receive_count, first_received_at, receipt_token, group_id, dedup_id, dead_letter_source, sealed, \
    sequence"
    };
}

mod mappings;
mod messages;
mod moves;
mod platforms;
mod publish;
mod queues;
mod reset;
mod topics;

pub use mappings::*;
pub use messages::*;
pub use moves::*;
pub use platforms::*;
pub use publish::*;
pub use queues::*;
pub use reset::*;
pub use topics::*;
