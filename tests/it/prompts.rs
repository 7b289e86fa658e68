//! The prompt service over redb (§4.5, §2 `root_prompts` /
//! `root_prompt_versions`): append-only additions, a version row per save,
//! the 60 s cache (driven by a manual clock), tenant isolation, and the
//! custom character read from the tenant's settings.

use std::sync::Arc;

use storage::{Json, RootPrompt, Store, Tenant, TenantStore, Ts, key};

use root::app::{AppState, open_store};
use root::platform::clock::{Clock, ManualClock};
use root::platform::tenancy::{self, TenantContext};
use root::prompts::{
    Channel, PROMPT_CACHE_TTL, PromptError, PromptVars, Prompts, SystemPromptInput, keys,
};

use crate::support::{TwoTenants, test_config};

/// The shared two-tenant fixture plus the prompt service on its clock.
struct Fixture {
    base: TwoTenants,
    prompts: Prompts,
}

impl std::ops::Deref for Fixture {
    type Target = TwoTenants;
    fn deref(&self) -> &TwoTenants {
        &self.base
    }
}

async fn fixture() -> Fixture {
    let base = TwoTenants::new().await;
    let prompts = Prompts::new(base.store.clone(), Arc::new(base.clock.clone()));
    Fixture { base, prompts }
}

fn footer_vars() -> PromptVars {
    PromptVars::new().with("userName", "Ada")
}

#[tokio::test]
async fn every_save_writes_a_version_and_the_row_holds_the_latest_addition() {
    let f = fixture().await;
    tenancy::scope(f.acme.clone(), async {
        f.prompts
            .save(keys::SLACK_FOOTER, "v1", Some("owner@acme.test"))
            .await
            .unwrap();
        f.clock.advance_ms(1_000);
        f.prompts
            .save(keys::SLACK_FOOTER, "v2", Some("admin@acme.test"))
            .await
            .unwrap();
        f.clock.advance_ms(1_000);
        let row = f
            .prompts
            .save(keys::SLACK_FOOTER, "v3", None)
            .await
            .unwrap();
        assert_eq!(row.content, "v3");
        assert_eq!(
            row.created_at,
            Ts::from_secs(1_773_781_500),
            "created_at kept"
        );
        assert_eq!(row.updated_at, Ts::from_secs(1_773_781_502));

        let versions = f.prompts.versions(keys::SLACK_FOOTER).await.unwrap();
        let contents: Vec<&str> = versions.iter().map(|v| v.content.as_str()).collect();
        assert_eq!(contents, ["v3", "v2", "v1"], "newest first");
        assert_eq!(versions[1].saved_by.as_deref(), Some("admin@acme.test"));
        assert!(
            f.prompts
                .versions(keys::SLACK_DM_CONTEXT_BLOCK)
                .await
                .unwrap()
                .is_empty()
        );
    })
    .await;
    let stored: Option<RootPrompt> = f
        .store
        .get(Some(f.acme.id()), key().str(keys::SLACK_FOOTER))
        .await
        .unwrap();
    assert_eq!(stored.map(|r| r.content).as_deref(), Some("v3"));
}

#[tokio::test]
async fn rendering_appends_the_saved_addition_and_clearing_restores_the_default() {
    let f = fixture().await;
    tenancy::scope(f.acme.clone(), async {
        let before = f
            .prompts
            .render(keys::SLACK_FOOTER, &footer_vars())
            .await
            .unwrap();
        assert_eq!(before, "You are responding to: Ada");
        f.prompts
            .save(keys::SLACK_FOOTER, "Greet {{userName}} warmly.", None)
            .await
            .unwrap();
        let after = f
            .prompts
            .render(keys::SLACK_FOOTER, &footer_vars())
            .await
            .unwrap();
        assert_eq!(after, "You are responding to: Ada\n\nGreet Ada warmly.");
        f.prompts.save(keys::SLACK_FOOTER, "", None).await.unwrap();
        let cleared = f
            .prompts
            .render(keys::SLACK_FOOTER, &footer_vars())
            .await
            .unwrap();
        assert_eq!(cleared, "You are responding to: Ada");
        assert_eq!(
            f.prompts.versions(keys::SLACK_FOOTER).await.unwrap().len(),
            2
        );
    })
    .await;
}

#[tokio::test]
async fn unknown_keys_are_errors_for_render_save_and_versions() {
    let f = fixture().await;
    tenancy::scope(f.acme.clone(), async {
        let r = f.prompts.render("slack.nope", &PromptVars::new()).await;
        assert!(matches!(r, Err(PromptError::UnknownKey(_))));
        let s = f.prompts.save("slack.nope", "x", None).await;
        assert!(matches!(s, Err(PromptError::UnknownKey(_))));
        assert!(matches!(
            f.prompts.versions("x").await,
            Err(PromptError::UnknownKey(_))
        ));
    })
    .await;
    assert_eq!(
        f.store
            .count::<RootPrompt>(Some(f.acme.id()))
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn service_calls_outside_a_tenant_scope_fail() {
    let f = fixture().await;
    assert!(matches!(
        f.prompts.load().await,
        Err(PromptError::NoTenant(_))
    ));
    assert!(matches!(
        f.prompts.save(keys::SLACK_FOOTER, "x", None).await,
        Err(PromptError::NoTenant(_))
    ));
}

#[tokio::test]
async fn additions_are_cached_for_60_seconds_and_a_local_save_invalidates() {
    let f = fixture().await;
    // A second service over the same store stands in for another process.
    let elsewhere = Prompts::new(f.store.clone(), Arc::new(f.clock.clone()));
    tenancy::scope(f.acme.clone(), async {
        assert_eq!(
            f.prompts.load().await.unwrap().addition(keys::SLACK_FOOTER),
            None
        );
        elsewhere
            .save(keys::SLACK_FOOTER, "from elsewhere", None)
            .await
            .unwrap();

        let ttl_ms = i64::try_from(PROMPT_CACHE_TTL.as_millis()).unwrap();
        f.clock.advance_ms(ttl_ms - 1);
        assert_eq!(
            f.prompts.load().await.unwrap().addition(keys::SLACK_FOOTER),
            None,
            "still cached just before 60 s"
        );
        f.clock.advance_ms(1);
        assert_eq!(
            f.prompts.load().await.unwrap().addition(keys::SLACK_FOOTER),
            Some("from elsewhere"),
            "reloaded at 60 s"
        );

        // A save through this service is visible at once.
        f.prompts
            .save(keys::SLACK_FOOTER, "local", None)
            .await
            .unwrap();
        assert_eq!(
            f.prompts.load().await.unwrap().addition(keys::SLACK_FOOTER),
            Some("local")
        );
    })
    .await;
}

#[tokio::test]
async fn additions_are_per_tenant() {
    let f = fixture().await;
    tenancy::scope(
        f.acme.clone(),
        f.prompts
            .save(keys::SLACK_POLICIES_ADDENDUM, "- Acme rule.", None),
    )
    .await
    .unwrap();
    let other = tenancy::scope(f.other.clone(), f.prompts.load())
        .await
        .unwrap();
    assert_eq!(other.addition(keys::SLACK_POLICIES_ADDENDUM), None);
    let views = tenancy::scope(f.acme.clone(), f.prompts.list())
        .await
        .unwrap();
    assert_eq!(views.len(), root::prompts::all_templates().count());
    assert!(
        views
            .iter()
            .any(|v| v.template.key == "follow_ups.scheduled_run")
    );
    let policies = views
        .iter()
        .find(|v| v.template.key == keys::SLACK_POLICIES_ADDENDUM)
        .unwrap();
    assert_eq!(
        policies.addition.as_ref().map(|r| r.content.as_str()),
        Some("- Acme rule.")
    );
}

#[tokio::test]
async fn custom_character_from_tenant_settings_replaces_the_tone_and_keeps_the_addition() {
    let f = fixture().await;
    let mut tenant = (*f.acme.tenant).clone();
    tenant.settings = Json(serde_json::json!({
        "persona": "You are Juniper, Acme's concierge.",
        "agent_character": "- Speak in short, dry sentences."
    }));
    let tenant = f.store.save_tenant(tenant).await.unwrap();
    let ctx = TenantContext {
        tenant: Arc::new(tenant.clone()),
    };
    let out = tenancy::scope(ctx, async {
        f.prompts
            .save(
                keys::SLACK_IDENTITY_ADDENDUM,
                "- Mention the rooftop on Fridays.",
                None,
            )
            .await
            .unwrap();
        let input =
            SystemPromptInput::new(Channel::Slack, "Ada", f.clock.now()).with_tenant(&tenant);
        f.prompts.system_prompt(&input).await.unwrap()
    })
    .await;
    assert!(out.starts_with("You are Juniper, Acme's concierge.\n\nIDENTITY:"));
    assert!(
        out.contains("\n- Speak in short, dry sentences.\n\n- Mention the rooftop on Fridays.\n")
    );
    assert!(!out.contains("Use emojis naturally"));
}

#[tokio::test]
async fn app_state_builds_the_prompt_service() {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(&dir.path().join("data"), &[]);
    let store = open_store(&config).await.unwrap();
    let clock = ManualClock::new(Ts::from_secs(1_773_781_500));
    let state = AppState::new(config, store.clone(), Arc::new(clock.clone())).unwrap();
    let tenant = store
        .create_tenant(Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    let ctx = TenantContext {
        tenant: Arc::new(tenant.clone()),
    };
    let input = SystemPromptInput::new(Channel::Email, "Ada", clock.now()).with_tenant(&tenant);
    let out = tenancy::scope(ctx, state.prompts.system_prompt(&input))
        .await
        .unwrap();
    assert!(out.starts_with("You are an AI assistant for this community."));
    assert!(out.contains("Cheers, Root"));
    assert!(out.ends_with("You are responding to: Ada (member)"));
}

/// The fully rendered default system prompt for a fixed fixture (tenant
/// `acme` with default settings, member "Ada", the fixture's clock), on
/// Slack and on email.
#[tokio::test]
async fn the_rendered_default_system_prompts_match_their_snapshots() {
    let f = fixture().await;
    let tenant = (*f.acme.tenant).clone();
    for (channel, name) in [
        (Channel::Slack, "system_prompt_slack_default"),
        (Channel::Email, "system_prompt_email_default"),
    ] {
        let input = SystemPromptInput::new(channel, "Ada", f.clock.now()).with_tenant(&tenant);
        let out = tenancy::scope(f.acme.clone(), f.prompts.system_prompt(&input))
            .await
            .unwrap();
        insta::assert_snapshot!(name, out);
    }
}
