//! Behaviour every store implementation must show, written against the
//! traits only. `conformance_tests!` expands into one `#[tokio::test]` per
//! check for a given store factory (see `storage/tests/conformance.rs`).
//!
//! Each check receives a fresh, migrated store and panics on a violation.
//!
//! Test-only: compiled for the crate's own tests and behind the
//! `conformance` cargo feature (off by default), so the production library
//! does not ship it. The checks live by area: `core` (migrations, tenants,
//! API keys), `constraints` (UNIQUE, unique-partial, CHECK, FK, atomic
//! batches), `cascades` (deletes of tenants, pages, principals, sources),
//! `reads` (tenant isolation, batched reads, index order, due indexes),
//! `queue` (the job queue) and `seed` (a row in every tenant-scoped table).

mod cascades;
mod constraints;
mod core;
mod queue;
mod reads;
mod seed;

use uuid::Uuid;

use crate::error::StorageError;
use crate::queue::JobQueue;
use crate::schema::Tenant;
use crate::store::{ApiKeyStore, MigrationStore, Store, TenantStore};

pub use self::cascades::*;
pub use self::constraints::*;
pub use self::core::*;
pub use self::queue::*;
pub use self::reads::*;
pub use self::seed::{Seeded, seed_every_table};

/// Everything the suite needs from a backend.
pub trait FullStore: Store + TenantStore + ApiKeyStore + MigrationStore + JobQueue {}
impl<T: Store + TenantStore + ApiKeyStore + MigrationStore + JobQueue> FullStore for T {}

/// Expand the suite into `#[tokio::test]`s. `$make` is an expression
/// (evaluated once per test) returning `(store, guard)`: a fresh,
/// *un-migrated* store and whatever must live as long as it (a temp dir).
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@each $make;
            migrations_are_idempotent_and_seed_the_root_tenant,
            tenant_slugs_are_unique_platform_wide,
            a_dev_shadow_pairs_with_its_live_tenant,
            unique_constraints_hold_within_a_tenant_only,
            unique_partial_constraints_ignore_nulls,
            api_key_hashes_are_unique_platform_wide_and_revocable,
            one_running_sync_run_per_source,
            deleting_a_tenant_leaves_no_row_of_it_anywhere,
            deleting_a_page_deletes_its_chunks_and_links,
            deleting_a_principal_cascades_and_sets_null,
            deleting_a_source_cascades_runs_and_detaches_pages,
            missing_parents_are_foreign_key_errors,
            check_constraints_reject_out_of_range_values,
            updates_move_unique_keys,
            reads_never_cross_tenants,
            batched_reads_keep_order_and_tenant,
            scans_follow_index_order,
            global_due_index_spans_tenants_and_honours_partial_conditions,
            insert_many_is_all_or_nothing,
            queue_delayed_jobs_wait_for_run_at,
            queue_retries_back_off_exponentially_then_fail,
            queue_permanent_errors_do_not_retry,
            queue_job_ids_dedupe_while_live,
            queue_coalescing_resets_timers_and_reruns_after_active,
            queue_expired_leases_return_jobs_with_their_checkpoint,
            queue_stats_and_events_and_retention,
            queue_complete_and_claim_hands_over_the_next_job,
        );
    };
    (@each $make:expr; $($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let (store, _guard) = $make;
            $crate::conformance::$name(store).await;
        }
    )*};
}

async fn migrated<S: FullStore>(s: &S) {
    s.migrate().await.expect("migrate");
}

async fn two_tenants<S: FullStore>(s: &S) -> (Uuid, Uuid) {
    migrated(s).await;
    let a = s
        .create_tenant(Tenant::new("alpha", "Alpha"))
        .await
        .unwrap();
    let b = s.create_tenant(Tenant::new("beta", "Beta")).await.unwrap();
    (a.id, b.id)
}

fn conflict(err: StorageError) -> &'static str {
    match err {
        StorageError::Conflict { constraint } => constraint,
        other => panic!("expected Conflict, got {other:?}"),
    }
}
