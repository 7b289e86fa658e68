//! Operating Root on one VM (§15.4, §2.6): online backups and their
//! verified restore (`backup`), the local admin socket a running server
//! takes backups through (`admin`), the daily backup (`schedule`), and a
//! tenant's export and deletion (`tenant`).

pub mod admin;
pub mod backup;
pub mod schedule;
pub mod tenant;

/// Create `dir` (and missing parents) readable by this user only (0700 on
/// Unix): it holds every tenant's rows, secrets and indexes. An existing
/// directory is left as the operator made it, with a warning when others
/// can read it.
pub fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if dir.is_dir() {
            let mode = std::fs::metadata(dir)?.permissions().mode();
            if mode & 0o077 != 0 {
                tracing::warn!(
                    dir = %dir.display(),
                    mode = format!("{:o}", mode & 0o777),
                    "the data directory is accessible to other users; `chmod 700` it"
                );
            }
            return Ok(());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}
