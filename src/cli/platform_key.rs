//! `root platform-key create|list|revoke`: the platform-admin API keys
//! (`rpa_…`) of `/api/v1/platform/*`. Like the other data commands, run
//! with the server stopped (redb's lock).

use anyhow::bail;
use clap::Subcommand;
use storage::RedbStore;

use crate::platform::clock::{Clock, SystemClock};
use crate::platform::platform_keys::{self, PlatformKeyError};

/// `root platform-key …`
#[derive(Debug, Subcommand)]
pub enum PlatformKeyCmd {
    /// Mint a key for a platform admin (printed once; only its hash is kept).
    Create {
        /// The platform admin's email (`root seed platform-admin`).
        #[arg(long)]
        email: String,
        /// A name to recognise the key by.
        #[arg(long)]
        name: String,
    },
    /// Every platform key: prefix, id, name, email, created, revoked.
    List,
    /// Revoke a key by its id or its display prefix (`rpa_xxxxxxxx`).
    Revoke {
        /// The key's id or prefix.
        key: String,
    },
}

/// Run one `platform-key` command against `store`.
pub async fn run(store: &RedbStore, cmd: PlatformKeyCmd) -> anyhow::Result<()> {
    let now = SystemClock.now();
    match cmd {
        PlatformKeyCmd::Create { email, name } => {
            match platform_keys::mint(store, &email, &name, now).await {
                Ok(minted) => {
                    eprintln!(
                        "platform key {} ({}) for {} — shown once, store it now:",
                        minted.row.token_prefix, minted.row.id, minted.row.email
                    );
                    println!("{}", minted.raw);
                    Ok(())
                }
                Err(PlatformKeyError::NotPlatformAdmin(e)) => bail!(
                    "{e} is not a platform admin: add it first with `root seed platform-admin --email {e}`"
                ),
                Err(e) => Err(e.into()),
            }
        }
        PlatformKeyCmd::List => {
            for k in platform_keys::list(store).await? {
                let revoked = k
                    .revoked_at
                    .map_or_else(|| "active".to_string(), |t| format!("revoked {t}"));
                println!(
                    "{}\t{}\t{}\t{}\tcreated {}\t{}",
                    k.token_prefix, k.id, k.name, k.email, k.created_at, revoked
                );
            }
            Ok(())
        }
        PlatformKeyCmd::Revoke { key } => {
            let row = platform_keys::revoke(store, &key, now).await?;
            println!("revoked platform key {} ({})", row.token_prefix, row.id);
            Ok(())
        }
    }
}
