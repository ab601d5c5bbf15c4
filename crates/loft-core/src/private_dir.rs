//! Directories for secrets: the SNS signing key's (loft-server `sns_signing`) and the SQS
//! encryption master key's (loft-store `seal`).

use std::fs;
use std::path::Path;

/// Creates `dir` (and missing parents) with mode 0700 on Unix: only Loft's user may list
/// or enter it. An existing directory is left as it is (each key's `permission_warnings`
/// says when it is open to others).
///
/// Errors: the `std::io::Error` of the failed creation.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}
