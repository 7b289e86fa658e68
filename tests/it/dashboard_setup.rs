//! `/setup` and `/welcome` (§14.2): the first-run checklist follows what the
//! community has configured.

use root::platform::clock::SystemClock;
use storage::{Store, TenantRole};

use crate::support::dashboard::{injected_scripts, texts, world};

fn state_of(page: &scraper::Html, title: &str) -> String {
    let items = texts(page, "#checklist li");
    let item = items
        .iter()
        .find(|i| i.contains(title))
        .unwrap_or_else(|| panic!("no item {title}: {items:?}"));
    item.split_whitespace().next().unwrap().to_string()
}

#[tokio::test]
async fn dashboard_setup_checklist_follows_the_configuration() {
    let w = world(&[], false).await;
    let (viewer, _) = w.signed_in(TenantRole::Viewer).await;
    let mut t = w.tenant("root").await;
    t.display_name = "Guild <script>alert(1)</script>".into();
    w.app.state.store.update(t.clone()).await.unwrap();

    let (status, page) = w.page("/welcome", &viewer).await;
    assert_eq!(status, 200);
    assert_eq!(injected_scripts(&page), 0, "the community name is text");
    assert_eq!(state_of(&page, "Web chat"), "to");
    assert_eq!(state_of(&page, "Knowledge"), "to");
    assert_eq!(
        state_of(&page, "A language model"),
        "to",
        "tests run without a model key"
    );
    assert_eq!(texts(&page, "#progress"), vec!["0 of 10 done."]);

    root::channels::web::rotate_web_token(&w.app.state.store, &SystemClock, t.id)
        .await
        .unwrap();
    let store = &w.app.state.store;
    let mut owner_two = storage::TenantUser {
        id: uuid::Uuid::new_v4(),
        tenant_id: t.id,
        email: "second@example.org".into(),
        role: TenantRole::Admin,
        created_at: storage::Ts::now(),
    };
    store.insert(owner_two.clone()).await.unwrap();
    owner_two.id = uuid::Uuid::new_v4();
    owner_two.email = "third@example.org".into();
    store.insert(owner_two).await.unwrap();
    let (_, page) = w.page("/setup", &viewer).await;
    assert_eq!(state_of(&page, "Web chat"), "done");
    assert_eq!(state_of(&page, "A second admin"), "done");
    assert_eq!(texts(&page, "#progress"), vec!["2 of 10 done."]);
}
