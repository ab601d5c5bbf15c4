//! The configuration file of `loft serve --config FILE`.

mod file;

pub use file::*;
