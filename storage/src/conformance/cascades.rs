//! Checks of deletes: a tenant's purge leaves no row anywhere; pages,
//! principals and knowledge sources cascade or set NULL as declared.

use uuid::Uuid;

use super::seed::seed_every_table;
use super::{FullStore, two_tenants};
use crate::key::key;
use crate::schema::*;
use crate::table::Scan;

/// Deleting a tenant removes every row it owns in every table; the other tenant is untouched.
pub async fn deleting_a_tenant_leaves_no_row_of_it_anywhere<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    seed_every_table(&s, a).await;
    seed_every_table(&s, b).await;
    let shadow = s.ensure_dev_shadow(a).await.unwrap();
    seed_every_table(&s, shadow.id).await;
    for (table, n) in s.tenant_row_counts(a).await.unwrap() {
        assert!(n > 0, "seed missed {table}");
    }
    assert!(s.delete_tenant(a).await.unwrap());
    for t in [a, shadow.id] {
        for (table, n) in s.tenant_row_counts(t).await.unwrap() {
            assert_eq!(n, 0, "{table} still has rows of a deleted tenant");
        }
    }
    assert!(
        s.tenant_by_id(shadow.id).await.unwrap().is_none(),
        "shadow cascades with its live tenant"
    );
    assert!(
        s.api_key_by_hash(&format!("hash-{a}"))
            .await
            .unwrap()
            .is_none(),
        "global index entries are gone"
    );
    // The slug is free again, the other tenant is intact.
    s.create_tenant(Tenant::new("alpha", "Alpha again"))
        .await
        .unwrap();
    for (table, n) in s.tenant_row_counts(b).await.unwrap() {
        assert!(n > 0, "{table} lost rows of an unrelated tenant");
    }
    assert!(
        s.api_key_by_hash(&format!("hash-{b}"))
            .await
            .unwrap()
            .is_some()
    );
}

/// `knowledge_chunks` and `web_link_tokens` cascade with their page.
pub async fn deleting_a_page_deletes_its_chunks_and_links<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    for i in 1..5 {
        s.insert(KnowledgeChunk {
            id: Uuid::new_v4(),
            tenant_id: a,
            knowledge_page_id: seeded.page,
            chunk_index: i,
            ..Default::default()
        })
        .await
        .unwrap();
    }
    assert_eq!(s.count::<KnowledgeChunk>(Some(a)).await.unwrap(), 5);
    assert!(
        s.delete::<KnowledgePage>(Some(a), key().uuid(seeded.page))
            .await
            .unwrap()
    );
    assert_eq!(s.count::<KnowledgeChunk>(Some(a)).await.unwrap(), 0);
    assert_eq!(s.count::<WebLinkToken>(Some(a)).await.unwrap(), 0);
    // The chunk slot (page, index) is free: re-creating the page and chunks works.
    assert!(
        !s.delete::<KnowledgePage>(Some(a), key().uuid(seeded.page))
            .await
            .unwrap()
    );
}

/// Principal delete: member features cascade (transitively), logs and interventions keep the row with `principal_id = NULL`.
pub async fn deleting_a_principal_cascades_and_sets_null<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    assert!(
        s.delete::<Principal>(Some(a), key().uuid(seeded.principal))
            .await
            .unwrap()
    );
    let logs: Vec<ConversationLog> = s.scan(Some(a), Scan::all()).await.unwrap();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].principal_id, None);
    let ivs: Vec<HumanIntervention> = s.scan(Some(a), Scan::all()).await.unwrap();
    assert_eq!(ivs.len(), 1);
    assert_eq!(ivs[0].principal_id, None);
    for (name, n) in [
        (
            "member_preferences",
            s.count::<MemberPreference>(Some(a)).await.unwrap(),
        ),
        ("follow_ups", s.count::<FollowUp>(Some(a)).await.unwrap()),
        (
            "follow_up_runs",
            s.count::<FollowUpRun>(Some(a)).await.unwrap(),
        ),
        (
            "root_action_alerts",
            s.count::<RootActionAlert>(Some(a)).await.unwrap(),
        ),
        (
            "root_action_alert_triggers",
            s.count::<RootActionAlertTrigger>(Some(a)).await.unwrap(),
        ),
        (
            "email_delegations",
            s.count::<EmailDelegation>(Some(a)).await.unwrap(),
        ),
        (
            "web_link_tokens",
            s.count::<WebLinkToken>(Some(a)).await.unwrap(),
        ),
    ] {
        assert_eq!(n, 0, "{name} should cascade from principals");
    }
    // The nulled FK no longer points at the principal: re-deleting is a no-op.
    let hits: Vec<HumanIntervention> = s
        .scan(
            Some(a),
            Scan::index(
                HumanIntervention::PRINCIPAL_IDX,
                key().uuid(seeded.principal),
            ),
        )
        .await
        .unwrap();
    assert!(hits.is_empty());
}

/// Source delete: runs cascade; pages stay, detached (`knowledge_source_id = NULL`).
pub async fn deleting_a_source_cascades_runs_and_detaches_pages<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    assert!(
        s.delete::<KnowledgeSource>(Some(a), key().uuid(seeded.source))
            .await
            .unwrap()
    );
    assert_eq!(s.count::<KnowledgeSyncRun>(Some(a)).await.unwrap(), 0);
    let page: KnowledgePage = s
        .get(Some(a), key().uuid(seeded.page))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(page.knowledge_source_id, None);
    assert_eq!(s.count::<KnowledgeChunk>(Some(a)).await.unwrap(), 1);
}
