//! The daily LLM budget per tenant (security finding M1): what a tenant's
//! provider calls cost today (UTC), read from `llm_token_usage` once per
//! tenant per day — one range read of the `(tenant_id, created_at)` index —
//! and then kept as an in-memory running total that every metered call adds
//! to (the [`UsageObserver`] of [`UsageRecorder`](crate::ai::usage::UsageRecorder)).
//! A turn asks [`LlmBudget::check`] before any model call: a map lookup.
//!
//! Cost is what the provider reported; calls without a reported cost still
//! count their tokens, and the token budget bounds those.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use storage::{LlmTokenUsage, RedbStore, Scan, StorageResult, Store, Ts, key};
use uuid::Uuid;

use crate::ai::usage::UsageObserver;
use crate::config::RequestLimits;
use crate::platform::clock::Clock;

const DAY_MICROS: i64 = 86_400_000_000;

/// The UTC day `at` falls in (days since the epoch).
pub fn utc_day(at: Ts) -> i64 {
    at.micros().div_euclid(DAY_MICROS)
}

/// Whole seconds from `at` until the next UTC midnight (≥ 1).
pub fn secs_until_next_utc_day(at: Ts) -> u64 {
    let next = (utc_day(at) + 1) * DAY_MICROS;
    let micros = next - at.micros();
    ((micros + 999_999) / 1_000_000).max(1) as u64
}

/// What one tenant spent on the current UTC day.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DaySpend {
    /// Provider-reported cost, USD.
    pub cost_usd: f64,
    /// Tokens (prompt + completion) of every call, costed or not.
    pub tokens: u64,
}

#[derive(Clone, Copy, Debug)]
struct Day {
    day: i64,
    spend: DaySpend,
    /// The admins were told today that the budget is used up.
    notified: bool,
}

/// The verdict of [`LlmBudget::check`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BudgetCheck {
    /// Spend is under both budgets.
    Within,
    /// A budget is used up until the next UTC day.
    Exhausted {
        /// What was spent today.
        spent: DaySpend,
        /// Seconds until the next UTC midnight.
        retry_after_secs: u64,
        /// First refusal of the day for this tenant: notify the admins.
        first_today: bool,
    },
}

/// Running per-tenant totals for the current UTC day. Cheap to clone.
#[derive(Clone)]
pub struct LlmBudget {
    store: RedbStore,
    clock: Arc<dyn Clock>,
    days: Arc<Mutex<HashMap<Uuid, Day>>>,
}

impl LlmBudget {
    /// The store the totals are read from (the turn gate reads tenant rows there too).
    pub fn store(&self) -> &RedbStore {
        &self.store
    }

    /// Totals over `store`, days measured on `clock`.
    pub fn new(store: RedbStore, clock: Arc<dyn Clock>) -> Self {
        LlmBudget {
            store,
            clock,
            days: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// What `tenant` spent today: from memory, or seeded from today's
    /// `llm_token_usage` rows on the first ask of the day.
    pub async fn spent_today(&self, tenant: Uuid) -> StorageResult<DaySpend> {
        Ok(self.today(tenant).await?.spend)
    }

    async fn today(&self, tenant: Uuid) -> StorageResult<Day> {
        let now = self.clock.now();
        let day = utc_day(now);
        if let Some(d) = self.lock().get(&tenant).copied().filter(|d| d.day == day) {
            return Ok(d);
        }
        let start = Ts(day * DAY_MICROS);
        let rows: Vec<LlmTokenUsage> = self
            .store
            .scan(
                Some(tenant),
                Scan::index(LlmTokenUsage::CREATED_AT_IDX, key())
                    .between(Some(key().ts(start)), None),
            )
            .await?;
        let mut spend = DaySpend::default();
        for r in &rows {
            add(&mut spend, r);
        }
        let mut days = self.lock();
        // Another check may have seeded the same day meanwhile: keep its
        // entry (it may already carry the notified flag).
        let entry = days.entry(tenant).or_insert(Day {
            day,
            spend,
            notified: false,
        });
        if entry.day != day {
            *entry = Day {
                day,
                spend,
                notified: false,
            };
        }
        Ok(*entry)
    }

    /// Is `tenant` under its daily budget? A read-only peek (no admin
    /// notice bookkeeping) for pre-loop helper calls such as the Slack
    /// intent gate; turns themselves go through [`LlmBudget::check`].
    pub async fn within(&self, tenant: Uuid, limits: &RequestLimits) -> StorageResult<bool> {
        let spend = self.spent_today(tenant).await?;
        Ok(spend.cost_usd < limits.daily_llm_budget_usd
            && spend.tokens < limits.daily_llm_token_budget)
    }

    /// Whether `tenant` may make more LLM calls today under `limits`.
    pub async fn check(&self, tenant: Uuid, limits: &RequestLimits) -> StorageResult<BudgetCheck> {
        let today = self.today(tenant).await?;
        let over = today.spend.cost_usd >= limits.daily_llm_budget_usd
            || today.spend.tokens >= limits.daily_llm_token_budget;
        if !over {
            return Ok(BudgetCheck::Within);
        }
        let first_today = {
            let mut days = self.lock();
            match days.get_mut(&tenant) {
                Some(d) if d.day == today.day && !d.notified => {
                    d.notified = true;
                    true
                }
                _ => false,
            }
        };
        Ok(BudgetCheck::Exhausted {
            spent: today.spend,
            retry_after_secs: secs_until_next_utc_day(self.clock.now()),
            first_today,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Day>> {
        self.days.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn add(spend: &mut DaySpend, row: &LlmTokenUsage) {
    spend.cost_usd += row
        .cost_usd
        .filter(|c| c.is_finite() && *c > 0.0)
        .unwrap_or(0.0);
    spend.tokens = spend
        .tokens
        .saturating_add(u64::try_from(row.total_tokens).unwrap_or(0));
}

impl UsageObserver for LlmBudget {
    /// Add a metered call to its tenant's running total. A tenant not seeded
    /// today is skipped: its first check reads the row from storage.
    fn recorded(&self, row: &LlmTokenUsage) {
        let day = utc_day(row.created_at);
        if let Some(d) = self.lock().get_mut(&row.tenant_id)
            && d.day == day
        {
            add(&mut d.spend, row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::clock::ManualClock;
    use storage::{MigrationStore, TenantStore};

    fn row(tenant: Uuid, at: Ts, tokens: i64, cost: Option<f64>) -> LlmTokenUsage {
        LlmTokenUsage {
            id: Uuid::new_v4(),
            tenant_id: tenant,
            purpose: "agent".into(),
            model: "m".into(),
            total_tokens: tokens,
            cost_usd: cost,
            created_at: at,
            ..Default::default()
        }
    }

    #[test]
    fn utc_days_and_the_wait_until_midnight() {
        let noon = Ts::from_secs(20_000 * 86_400 + 43_200);
        assert_eq!(utc_day(noon), 20_000);
        assert_eq!(secs_until_next_utc_day(noon), 43_200);
        assert_eq!(secs_until_next_utc_day(Ts(20_001 * DAY_MICROS - 1)), 1);
    }

    #[tokio::test]
    async fn seeded_from_todays_rows_only_then_kept_in_memory() {
        let store = RedbStore::open_in_memory().unwrap();
        store.migrate().await.unwrap();
        let tenant = store
            .create_tenant(storage::Tenant::new("acme", "Acme"))
            .await
            .unwrap()
            .id;
        let day_start = Ts(20_000 * DAY_MICROS);
        let clock = ManualClock::new(day_start.plus_micros(3_600_000_000));
        for r in [
            row(tenant, day_start.plus_micros(-1), 1_000, Some(5.0)),
            row(tenant, day_start, 100, Some(0.5)),
            row(tenant, day_start.plus_micros(60_000_000), 200, None),
        ] {
            store.insert(r).await.unwrap();
        }
        let budget = LlmBudget::new(store.clone(), Arc::new(clock.clone()));
        assert_eq!(
            budget.spent_today(tenant).await.unwrap(),
            DaySpend {
                cost_usd: 0.5,
                tokens: 300
            },
            "yesterday's row is not today's spend"
        );
        // A later row reaches the total through the observer, not a re-read.
        let later = row(tenant, clock.now(), 50, Some(0.25));
        store.insert(later.clone()).await.unwrap();
        budget.recorded(&later);
        let tight = RequestLimits {
            daily_llm_budget_usd: 0.75,
            ..RequestLimits::default()
        };
        match budget.check(tenant, &tight).await.unwrap() {
            BudgetCheck::Exhausted {
                spent,
                first_today,
                retry_after_secs,
            } => {
                assert_eq!(spent.tokens, 350);
                assert!(first_today);
                assert_eq!(retry_after_secs, 23 * 3_600);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            budget.check(tenant, &tight).await.unwrap(),
            BudgetCheck::Exhausted {
                first_today: false,
                ..
            }
        ));
        let by_tokens = RequestLimits {
            daily_llm_token_budget: 350,
            ..RequestLimits::default()
        };
        assert!(matches!(
            budget.check(tenant, &by_tokens).await.unwrap(),
            BudgetCheck::Exhausted { .. }
        ));
        // The next UTC day starts from zero.
        clock.advance_ms(23 * 3_600_000);
        assert_eq!(
            budget.check(tenant, &tight).await.unwrap(),
            BudgetCheck::Within
        );
    }
}
