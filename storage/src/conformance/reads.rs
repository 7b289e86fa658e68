//! Checks of the read paths: batched reads keep order and tenant, lookups
//! never cross tenants, scans follow index order, and the platform-wide due
//! indexes hold only active, scheduled rows.

use uuid::Uuid;

use super::seed::seed_every_table;
use super::{FullStore, two_tenants};
use crate::codec::Ts;
use crate::enums::*;
use crate::key::{Key, key};
use crate::schema::*;
use crate::table::Scan;

/// `get_many` / `find_unique_many` answer in input order, `None` for misses,
/// and never see another tenant's rows.
pub async fn batched_reads_keep_order_and_tenant<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let p1 = s.insert(Principal::new(a, "one")).await.unwrap();
    let p2 = s.insert(Principal::new(a, "two")).await.unwrap();
    let ids = vec![
        key().uuid(p2.id),
        key().uuid(Uuid::new_v4()),
        key().uuid(p1.id),
    ];
    let got: Vec<Option<Principal>> = s.get_many(Some(a), ids.clone()).await.unwrap();
    assert_eq!(
        got.iter()
            .map(|p| p.as_ref().map(|p| p.id))
            .collect::<Vec<_>>(),
        vec![Some(p2.id), None, Some(p1.id)]
    );
    let other: Vec<Option<Principal>> = s.get_many(Some(b), ids).await.unwrap();
    assert!(other.iter().all(Option::is_none));
    let refs = vec![key().str("one"), key().str("nope"), key().str("two")];
    let got: Vec<Option<Principal>> = s
        .find_unique_many(Some(a), Principal::REF_KEY, refs.clone())
        .await
        .unwrap();
    assert_eq!(
        got.iter()
            .map(|p| p.as_ref().map(|p| p.id))
            .collect::<Vec<_>>(),
        vec![Some(p1.id), None, Some(p2.id)]
    );
    let other: Vec<Option<Principal>> = s
        .find_unique_many(Some(b), Principal::REF_KEY, refs)
        .await
        .unwrap();
    assert!(other.iter().all(Option::is_none));
}

/// Lookups with tenant B never see tenant A's rows.
pub async fn reads_never_cross_tenants<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    assert!(
        s.get::<Principal>(Some(b), key().uuid(seeded.principal))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.find_unique::<Principal>(Some(b), Principal::REF_KEY, key().str("member-1"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.scan::<KnowledgePage>(Some(b), Scan::all())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.scan::<ConversationLog>(
            Some(b),
            Scan::index(ConversationLog::MESSAGE_AT_IDX, Key::default())
        )
        .await
        .unwrap()
        .is_empty()
    );
    assert!(
        !s.delete::<KnowledgePage>(Some(b), key().uuid(seeded.page))
            .await
            .unwrap()
    );
    assert!(
        s.get::<KnowledgePage>(Some(a), key().uuid(seeded.page))
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        s.get::<Principal>(None, key().uuid(seeded.principal))
            .await
            .is_err(),
        "tenant-scoped tables demand a tenant"
    );
}

/// Newest-first scans over `(tenant, message_at DESC)` and a thread's range.
pub async fn scans_follow_index_order<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let base = Ts::now();
    let mut rows = Vec::new();
    for i in 0..30 {
        let mut l = ConversationLog::new(a, Channel::Slack, Direction::Inbound);
        l.message_at = base.plus_micros(i * 1000);
        l.thread_key = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        l.exchange_key = Some(format!("x{}", i / 2));
        rows.push(l);
    }
    s.insert_many(rows).await.unwrap();
    let mut other = ConversationLog::new(b, Channel::Slack, Direction::Inbound);
    other.thread_key = Some("even".into());
    s.insert(other).await.unwrap();
    let newest: Vec<ConversationLog> = s
        .scan(
            Some(a),
            Scan::index(ConversationLog::MESSAGE_AT_IDX, Key::default())
                .desc()
                .limit(5),
        )
        .await
        .unwrap();
    let times: Vec<i64> = newest
        .iter()
        .map(|l| (l.message_at.0 - base.0) / 1000)
        .collect();
    assert_eq!(times, vec![29, 28, 27, 26, 25]);
    let thread: Vec<ConversationLog> = s
        .scan(
            Some(a),
            Scan::index(ConversationLog::THREAD_KEY_IDX, key().str("even"))
                .desc()
                .limit(20),
        )
        .await
        .unwrap();
    assert_eq!(thread.len(), 15, "only tenant a's 'even' thread");
    assert!(thread.windows(2).all(|w| w[0].message_at > w[1].message_at));
    let window: Vec<ConversationLog> = s
        .scan(
            Some(a),
            Scan::index(ConversationLog::MESSAGE_AT_IDX, Key::default()).between(
                Some(key().ts(base.plus_micros(10_000))),
                Some(key().ts(base.plus_micros(13_000))),
            ),
        )
        .await
        .unwrap();
    assert_eq!(window.len(), 3, "[10, 13) ms");
    let exch: Vec<ConversationLog> = s
        .scan(
            Some(a),
            Scan::index(ConversationLog::EXCHANGE_KEY_IDX, key().str("x3")),
        )
        .await
        .unwrap();
    assert_eq!(exch.len(), 2);
}

/// The due indexes are platform-wide (for sweeps) and only hold active, scheduled rows.
pub async fn global_due_index_spans_tenants_and_honours_partial_conditions<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let sa = seed_every_table(&s, a).await;
    seed_every_table(&s, b).await;
    let due: Vec<FollowUp> = s
        .scan(
            None,
            Scan::index(FollowUp::DUE_IDX, Key::default()).until_ts(Ts::now()),
        )
        .await
        .unwrap();
    assert_eq!(due.len(), 2, "one due follow-up per tenant");
    let mut fu: FollowUp = s
        .get(Some(a), key().uuid(sa.follow_up))
        .await
        .unwrap()
        .unwrap();
    fu.status = FollowUpStatus::Processing;
    s.update(fu).await.unwrap();
    let due: Vec<FollowUp> = s
        .scan(None, Scan::index(FollowUp::DUE_IDX, Key::default()))
        .await
        .unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].tenant_id, b);
    // The claimed row moved to the processing index, keyed by claim time.
    let claimed: Vec<FollowUp> = s
        .scan(None, Scan::index(FollowUp::PROCESSING_IDX, Key::default()))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, sa.follow_up);
    let mut src = KnowledgeSource {
        id: Uuid::new_v4(),
        tenant_id: a,
        source_key: "sched".into(),
        schedule_interval_minutes: Some(60),
        next_sync_at: Some(Ts::now()),
        ..Default::default()
    };
    s.insert(src.clone()).await.unwrap();
    let due: Vec<KnowledgeSource> = s
        .scan(None, Scan::index(KnowledgeSource::DUE_IDX, Key::default()))
        .await
        .unwrap();
    assert_eq!(due.len(), 1, "unscheduled sources are not due");
    src.status = SourceStatus::Paused;
    s.update(src).await.unwrap();
    assert!(
        s.scan::<KnowledgeSource>(None, Scan::index(KnowledgeSource::DUE_IDX, Key::default()))
            .await
            .unwrap()
            .is_empty()
    );
}
