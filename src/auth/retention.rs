//! Retention of sign-in rows (§14.1): expired magic links and ended
//! (expired or revoked) sessions are deleted — opportunistically, when a
//! link is issued or a session opened, not by a queue of their own (§13
//! has exactly fifteen). Each pass reads the expiry indexes
//! (`EXPIRES_IDX`, `ENDS_IDX`, oldest first) and deletes at most
//! [`PRUNE_BATCH`] rows of each table, so a sign-in never waits on a big
//! backlog; the next sign-in takes the next batch.
//!
//! An expired link is kept [`EXPIRED_LINK_KEPT_HOURS`] after it expired,
//! so someone clicking a stale link still reads "expired" rather than "not
//! valid"; an ended session signs nobody in, so it goes at once.

use storage::{DashboardLoginLink, DashboardSession, Scan, key};

use super::DashboardAuth;

/// Most rows of each table one pass deletes.
pub const PRUNE_BATCH: usize = 100;
/// Hours an expired link is kept before it is deleted.
pub const EXPIRED_LINK_KEPT_HOURS: i64 = 24;

impl DashboardAuth {
    /// Delete a batch of expired links and ended sessions: how many of
    /// each. A failure is logged and left for the next pass (signing in
    /// goes on).
    pub async fn prune_sign_in_rows(&self) -> (usize, usize) {
        let now = self.clock.now();
        let links_before = now.plus_micros(-EXPIRED_LINK_KEPT_HOURS * 3_600_000_000);
        let result = self
            .store
            .transact(move |tx| {
                let links: Vec<DashboardLoginLink> = tx.scan(
                    None,
                    Scan::index(DashboardLoginLink::EXPIRES_IDX, key())
                        .until_ts(links_before)
                        .limit(PRUNE_BATCH),
                )?;
                for link in &links {
                    tx.delete::<DashboardLoginLink>(None, key().uuid(link.id))?;
                }
                let sessions: Vec<DashboardSession> = tx.scan(
                    None,
                    Scan::index(DashboardSession::ENDS_IDX, key())
                        .until_ts(now)
                        .limit(PRUNE_BATCH),
                )?;
                for session in &sessions {
                    tx.delete::<DashboardSession>(None, key().uuid(session.id))?;
                }
                Ok((links.len(), sessions.len()))
            })
            .await;
        match result {
            Ok(((links, sessions), _)) => {
                if links + sessions > 0 {
                    tracing::info!(links, sessions, "expired sign-in rows deleted");
                }
                (links, sessions)
            }
            Err(e) => {
                tracing::warn!(error = %e, "expired sign-in rows could not be deleted");
                (0, 0)
            }
        }
    }
}
