//! The dashboard chat's team and access policy tools (§5.1, §14.1, §9):
//! scripted calls change `tenant_users` and `settings.access` through the
//! functions behind `/team` and `/access`, judged by the role of who asked
//! (an admin never makes or touches an owner; the last owner stays), an
//! invite mails a sign-in link only when mail is configured and says so,
//! an invalid policy changes nothing — and a Slack or email turn never
//! gets the tools, even with the dashboard flags set.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use storage::{Channel, Scan, Store, TenantRole, TenantUser};

use root::channels::{TurnRequest, run_channel_turn};
use root::platform::settings::AccessPolicy;
use root::platform::tenancy::{self, TenantContext};

use crate::dashboard_chat_tools::{admin_tools, chat, offered, setup_with, tool_result};
use crate::support::FakeHttp;
use crate::support::dashboard::World;
use crate::support::fake_http::Reply;
use crate::support::fake_llm::{completion, tool_calls};

const NEW_TOOLS: [&str; 6] = [
    "list_dashboard_users",
    "invite_dashboard_user",
    "set_dashboard_user_role",
    "remove_dashboard_user",
    "get_access_policy",
    "update_access_policy",
];

/// The `root` tenant's users as `(email, role)`.
async fn team(w: &World) -> BTreeSet<(String, TenantRole)> {
    let tenant = w.tenant("root").await;
    let rows: Vec<TenantUser> = w
        .app
        .state
        .store
        .scan(Some(tenant.id), Scan::all())
        .await
        .unwrap();
    rows.into_iter().map(|u| (u.email, u.role)).collect()
}

/// The signed-in user's address.
async fn email_of(w: &World, session: &str) -> String {
    w.me(session).await.1["email"].as_str().unwrap().to_string()
}

fn args(v: Value) -> String {
    v.to_string()
}

fn error_of(v: &Value) -> String {
    assert_eq!(v["success"], json!(false), "{v}");
    v["error"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn dashboard_chat_team_tools_follow_the_callers_role_and_keep_the_last_owner() {
    let (llm, w) = setup_with(false).await;
    let (owner, owner_csrf) = w.signed_in(TenantRole::Owner).await;
    let owner_email = email_of(&w, &owner).await;

    // The owner lists, invites (no mail sender: no link, and it says so),
    // re-roles; a duplicate and a bad address change nothing.
    // The list is its own turn: the calls of one round run concurrently.
    llm.json(tool_calls(None, &[("l1", "list_dashboard_users", "{}")]))
        .json(completion("You are the only dashboard user."));
    chat(&w, &owner, &owner_csrf, "Who can sign in?").await;
    llm.json(tool_calls(
        None,
        &[(
            "v1",
            "invite_dashboard_user",
            &args(json!({"email": " Ada@Example.org ", "role": "viewer"})),
        )],
    ))
    .json(tool_calls(
        None,
        &[
            (
                "s1",
                "set_dashboard_user_role",
                &args(json!({"email": "ADA@example.org", "role": "admin"})),
            ),
            (
                "x1",
                "invite_dashboard_user",
                &args(json!({"email": "ada@example.org", "role": "member"})),
            ),
            (
                "b1",
                "invite_dashboard_user",
                &args(json!({"email": "not an address", "role": "viewer"})),
            ),
            (
                "b2",
                "invite_dashboard_user",
                &args(json!({"email": "bo@example.org", "role": "boss"})),
            ),
        ],
    ))
    .json(completion("Ada is an admin now."));
    chat(&w, &owner, &owner_csrf, "Add Ada as an admin.").await;
    let names = offered(&llm.bodies()[0]);
    for n in NEW_TOOLS {
        assert!(names.iter().any(|o| o == n), "{n} offered on /chat");
        assert!(admin_tools().contains(&n), "{n} in the admin config group");
    }
    let listed = tool_result(&llm, "l1");
    assert_eq!(listed["data"]["count"], json!(1), "{listed}");
    let me = &listed["data"]["users"][0];
    assert_eq!(me["email"], owner_email.as_str());
    assert_eq!(me["role"], "owner");
    assert_eq!(me["is_you"], json!(true));
    let invited = tool_result(&llm, "v1");
    assert_eq!(invited["success"], json!(true), "{invited}");
    assert_eq!(invited["data"]["email"], "ada@example.org");
    assert_eq!(invited["data"]["sign_in_link_sent"], json!(false));
    assert!(
        invited["data"]["note"]
            .as_str()
            .unwrap()
            .contains("no mail sender"),
        "{invited}"
    );
    assert_eq!(tool_result(&llm, "s1")["data"]["role"], "admin");
    assert!(error_of(&tool_result(&llm, "x1")).contains("already a dashboard user"));
    assert!(error_of(&tool_result(&llm, "b1")).contains("not one email address"));
    assert!(error_of(&tool_result(&llm, "b2")).contains("Choose owner, admin, viewer or member"));
    let expected: BTreeSet<(String, TenantRole)> = [
        (owner_email.clone(), TenantRole::Owner),
        ("ada@example.org".to_string(), TenantRole::Admin),
    ]
    .into();
    assert_eq!(team(&w).await, expected);

    // An admin: never makes, re-roles or removes an owner.
    let (admin, admin_csrf) = w.signed_in(TenantRole::Admin).await;
    let admin_email = email_of(&w, &admin).await;
    let before = team(&w).await;
    llm.json(tool_calls(
        None,
        &[
            (
                "a1",
                "invite_dashboard_user",
                &args(json!({"email": "eve@example.org", "role": "owner"})),
            ),
            (
                "a2",
                "set_dashboard_user_role",
                &args(json!({"email": owner_email, "role": "viewer"})),
            ),
            (
                "a3",
                "remove_dashboard_user",
                &args(json!({"email": owner_email})),
            ),
            (
                "a4",
                "set_dashboard_user_role",
                &args(json!({"email": "ada@example.org", "role": "owner"})),
            ),
            ("a5", "list_dashboard_users", "{}"),
        ],
    ))
    .json(completion("Only an owner can do that."));
    chat(
        &w,
        &admin,
        &admin_csrf,
        "Make Eve an owner and demote the owner.",
    )
    .await;
    for id in ["a1", "a2", "a3", "a4"] {
        let e = error_of(&tool_result(&llm, id));
        assert!(e.contains("Only an owner"), "{id}: {e}");
    }
    assert_eq!(team(&w).await, before, "no row changed");
    let listed = tool_result(&llm, "a5");
    let row = |email: &str| {
        listed["data"]["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["email"] == email)
            .unwrap()
            .clone()
    };
    assert_eq!(row(&owner_email)["you_may_change"], json!(false));
    assert_eq!(row("ada@example.org")["you_may_change"], json!(true));
    assert_eq!(row(&admin_email)["is_you"], json!(true));

    // The admin manages a non-owner: demote, then remove; a stranger is
    // not found.
    llm.json(tool_calls(
        None,
        &[(
            "m1",
            "set_dashboard_user_role",
            &args(json!({"email": "ada@example.org", "role": "member"})),
        )],
    ))
    .json(tool_calls(
        None,
        &[
            (
                "m2",
                "remove_dashboard_user",
                &args(json!({"email": "ada@example.org"})),
            ),
            (
                "m3",
                "remove_dashboard_user",
                &args(json!({"email": "ghost@example.org"})),
            ),
        ],
    ))
    .json(completion("Ada is removed."));
    chat(&w, &admin, &admin_csrf, "Demote Ada, then remove her.").await;
    assert_eq!(tool_result(&llm, "m1")["data"]["role"], "member");
    assert_eq!(tool_result(&llm, "m2")["data"]["removed"], json!(true));
    assert!(error_of(&tool_result(&llm, "m3")).contains("not a dashboard user"));
    let expected: BTreeSet<(String, TenantRole)> = [
        (owner_email.clone(), TenantRole::Owner),
        (admin_email.clone(), TenantRole::Admin),
    ]
    .into();
    assert_eq!(team(&w).await, expected);

    // The last owner can neither step down nor be removed.
    llm.json(tool_calls(
        None,
        &[
            (
                "o1",
                "remove_dashboard_user",
                &args(json!({"email": owner_email})),
            ),
            (
                "o2",
                "set_dashboard_user_role",
                &args(json!({"email": owner_email, "role": "admin"})),
            ),
        ],
    ))
    .json(completion("You are the last owner."));
    chat(&w, &owner, &owner_csrf, "Remove me.").await;
    for id in ["o1", "o2"] {
        let e = error_of(&tool_result(&llm, id));
        assert!(e.contains("last owner"), "{id}: {e}");
    }
    assert_eq!(team(&w).await, expected, "no row changed");
}

#[tokio::test]
async fn dashboard_chat_invite_mails_a_sign_in_link_when_mail_is_configured() {
    let (llm, w) = setup_with(true).await;
    let mail: &FakeHttp = w.mail.as_ref().unwrap();
    mail.route("POST", "/email", |_| {
        Reply::json(200, &json!({"MessageID": "pm-1", "ErrorCode": 0}))
    });
    let (admin, csrf) = w.signed_in(TenantRole::Admin).await;
    llm.json(tool_calls(
        None,
        &[
            (
                "i1",
                "invite_dashboard_user",
                &args(json!({"email": "Bo@Example.org", "role": "viewer"})),
            ),
            (
                "i2",
                "invite_dashboard_user",
                &args(json!({"email": "eve@example.org", "role": "owner"})),
            ),
        ],
    ))
    .json(completion("Bo is invited."));
    chat(&w, &admin, &csrf, "Invite Bo and Eve.").await;
    let invited = tool_result(&llm, "i1");
    assert_eq!(
        invited["data"]["sign_in_link_sent"],
        json!(true),
        "{invited}"
    );
    assert!(error_of(&tool_result(&llm, "i2")).contains("Only an owner"));
    let sent = mail.requests_to("/email");
    assert_eq!(sent.len(), 1, "only the accepted invite mails");
    assert_eq!(sent[0].body["To"], "bo@example.org");
    let text = sent[0].body["TextBody"].as_str().unwrap();
    let link = text
        .split_whitespace()
        .find(|w| w.contains("/auth/callback?token="))
        .unwrap();
    let resp = w.get(&link[link.find("/auth/").unwrap()..], None).await;
    assert_eq!(resp.status(), 303, "the mailed link signs Bo in");
    assert!(
        team(&w)
            .await
            .contains(&("bo@example.org".to_string(), TenantRole::Viewer))
    );
    assert!(!team(&w).await.iter().any(|(e, _)| e == "eve@example.org"));
}

#[tokio::test]
async fn dashboard_chat_access_policy_tools_validate_like_the_access_form() {
    let (llm, w) = setup_with(false).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let settings_before = w.tenant("root").await.settings.0;
    llm.json(tool_calls(
        None,
        &[
            ("g1", "get_access_policy", "{}"),
            (
                "u1",
                "update_access_policy",
                &args(json!({"slack": "everyone", "default_tier": "public", "dashboard_users": false})),
            ),
            ("u0", "update_access_policy", "{}"),
        ],
    ))
    .json(completion("That policy is not valid."));
    chat(&w, &owner, &csrf, "Let everyone in.").await;
    let got = tool_result(&llm, "g1");
    assert_eq!(
        got["data"],
        json!({"slack": "open", "email": "domains", "default_tier": "member",
            "email_domains": [], "email_addresses": [], "dashboard_users": true})
    );
    let refused = error_of(&tool_result(&llm, "u1"));
    assert!(
        refused.starts_with("Nothing was changed: slack: "),
        "{refused}"
    );
    assert!(refused.contains("default_tier: "), "{refused}");
    assert!(!refused.contains("dashboard_users:"), "{refused}");
    assert!(error_of(&tool_result(&llm, "u0")).contains("at least one field"));
    assert_eq!(
        w.tenant("root").await.settings.0,
        settings_before,
        "an invalid policy changes nothing"
    );

    llm.json(tool_calls(
        None,
        &[(
            "u2",
            "update_access_policy",
            &args(json!({"email": "domains", "email_domains": ["Acme.org"], "dashboard_users": false})),
        )],
    ))
    .json(completion("Acme addresses are trusted now."));
    chat(&w, &owner, &csrf, "Trust acme.org, not dashboard users.").await;
    let saved = tool_result(&llm, "u2");
    assert_eq!(saved["data"]["saved"], json!(true), "{saved}");
    let policy = AccessPolicy::from_settings(&w.tenant("root").await.settings.0);
    assert_eq!(policy.email_domains, ["acme.org"]);
    assert!(!policy.dashboard_users);
    assert_eq!(
        policy.default_tier, "member",
        "left-out fields keep their value"
    );
    // The /access page shows what the chat saved.
    let (status, page) = w.page("/access", &owner).await;
    assert_eq!(status, 200);
    let html = page.html();
    assert!(html.contains("acme.org"), "{html}");
}

#[tokio::test]
async fn dashboard_chat_team_tools_never_reach_a_slack_or_email_turn() {
    let (llm, w) = setup_with(false).await;
    let (owner, _) = w.signed_in(TenantRole::Owner).await;
    let email = email_of(&w, &owner).await;
    let tenant = w.tenant("root").await;
    let me = w.app.state.auth.signed_in(&owner).await.unwrap().unwrap();
    for (i, channel) in [Channel::Email, Channel::Slack].into_iter().enumerate() {
        llm.json(completion("Hello."));
        let req = TurnRequest {
            channel: Some(channel),
            message: "who can sign in to the dashboard?".into(),
            email: (channel == Channel::Email).then(|| email.clone()),
            slack_user_id: (channel == Channel::Slack).then(|| "U0OWNER".to_string()),
            // Even with the dashboard's flags set by mistake.
            dashboard_chat: true,
            dashboard_user: Some(me.team_actor()),
            ..TurnRequest::default()
        };
        let ctx = TenantContext {
            tenant: Arc::new(tenant.clone()),
        };
        let turns = w.app.state.turns.clone();
        let out = tenancy::scope(ctx, async move { run_channel_turn(&turns, req).await }).await;
        assert!(out.is_ok(), "{channel:?} turn ran");
        let names = offered(&llm.bodies()[i]);
        assert!(!names.is_empty(), "{channel:?}");
        for n in admin_tools() {
            assert!(!names.iter().any(|o| o == n), "{n} on {channel:?}");
        }
    }
}
