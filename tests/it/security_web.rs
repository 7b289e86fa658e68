//! Security review 2026-12-07, the web surfaces: the token-only test chat
//! never gets an admin's rights, memory or dashboard threads (M-1), a
//! suspended community's web chat, dashboard chat and KB pages stop
//! answering (L-2), and the test chat's `user_name` / `email` caps (L-6).

use serde_json::{Value, json};
use storage::{KnowledgePage, Principal, Store, TenantRole, TenantStatus, TenantStore, key};
use testkit::stub::StubBackend;

use root::auth::DashboardAuth;
use root::platform::api_keys::KeyKind;
use root::platform::clock::SystemClock;
use root::platform::tenancy::TenantContext;

use crate::support::dashboard::{World, attrs, world};
use crate::support::fake_llm::{FakeLlm, completion, tool_calls};

const SECRET: &str = "stub-secret-0123456789";
const OWNER: &str = "owner@acme.org";

/// The dashboard world (tenant `root`) with the stub integration, a signed-in
/// owner `OWNER` whom the integration also marks admin, and a chat token.
async fn setup(llm: &FakeLlm) -> (World, StubBackend, String, String, String) {
    let w = world(
        &[
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("SEARCH_LLM_RERANK", "false"),
        ],
        false,
    )
    .await;
    let tenant = w.tenant("root").await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    stub.set_identity(
        &format!("email:{OWNER}"),
        json!({"principal": {"principal_ref": "owner-1", "display_name": "Olive Owner",
                             "tier": "member", "is_admin": true, "email": OWNER}}),
    );
    let ctx = TenantContext {
        tenant: std::sync::Arc::new(tenant.clone()),
    };
    crate::support::register_stub(&w.app, &ctx, &stub, SECRET).await;
    w.user("root", OWNER, TenantRole::Owner).await;
    let session = w.sign_in(OWNER).await;
    let csrf = DashboardAuth::csrf_token(&session);
    let token = root::channels::web::rotate_web_token(&w.app.state.store, &SystemClock, tenant.id)
        .await
        .unwrap();
    (w, stub, session, csrf, token)
}

/// `POST /chat` (the no-script form): the status and the thread key the page
/// sends back.
async fn dashboard_chat(
    w: &World,
    session: &str,
    csrf: &str,
    message: &str,
    thread: &str,
) -> (u16, String) {
    let r = w
        .post_form(
            "/chat",
            Some(session),
            &[("csrf", csrf), ("message", message), ("thread_key", thread)],
        )
        .await;
    let status = r.status().as_u16();
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    (
        status,
        attrs(&page, "#thread_key", "value")
            .pop()
            .unwrap_or_default(),
    )
}

async fn test_chat(w: &World, token: &str, body: &Value) -> (u16, Value) {
    let r = w
        .app
        .post_json(&format!("/web/root/messages?token={token}"), None, body)
        .await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The non-system messages of a model request, in order.
fn dialogue(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The first model request whose dialogue ends with the member's `message`.
fn request_with(llm: &FakeLlm, message: &str) -> Value {
    llm.bodies()
        .into_iter()
        .find(|b| dialogue(b).last().is_some_and(|m| m == message))
        .unwrap_or_else(|| panic!("no model request for {message:?}"))
}

#[tokio::test]
async fn security_m1_test_chat_never_gets_admin_rights_memory_or_dashboard_threads() {
    let llm = FakeLlm::start().await;
    let (w, stub, owner, csrf, token) = setup(&llm).await;
    let tenant = w.tenant("root").await;

    // The owner's own dashboard chat: its threads are `dashboard:…`.
    llm.json(completion("Noted, admin."));
    let (status, thread) =
        dashboard_chat(&w, &owner, &csrf, "ADMIN-PLAN: rotate the sources", "").await;
    assert_eq!(status, 200);
    assert_eq!(thread, format!("dashboard:{OWNER}"));
    let mut row: Principal = w
        .app
        .state
        .store
        .find_unique(Some(tenant.id), Principal::REF_KEY, key().str("owner-1"))
        .await
        .unwrap()
        .expect("the owner's principal row");
    row.conversation_memory = Some("OWNER-MEMORY: prefers terse answers".into());
    w.app.state.store.update(row).await.unwrap();

    // A token holder names the owner and the owner's old shared key.
    llm.json(tool_calls(
        None,
        &[("c1", "book_room", r#"{"room":"Library"}"#)],
    ))
    .json(completion("Booked the Library."))
    .json(completion("Booked the Library."));
    let (status, v) = test_chat(
        &w,
        &token,
        &json!({"email": OWNER, "thread_key": format!("web:{OWNER}"),
                "message": "Summarise everything we discussed, verbatim."}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["thread_key"], format!("web:{OWNER}"));
    // The model saw no history and no memory: system text and this message.
    let sent = &llm.bodies()[1];
    assert_eq!(
        dialogue(sent),
        ["Summarise everything we discussed, verbatim."],
        "{sent}"
    );
    let text = sent.to_string();
    assert!(
        !text.contains("ADMIN-PLAN") && !text.contains("Noted, admin."),
        "{text}"
    );
    assert!(!text.contains("OWNER-MEMORY"), "{text}");
    // The integration was invoked without admin rights; admin tools not offered.
    let booked = stub.requests_to("/integration/tools/book_room");
    assert_eq!(booked.len(), 1);
    assert_eq!(booked[0].json()["principal"]["is_admin"], json!(false));
    let offered: Vec<&str> = v["offered_tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(!offered.contains(&"admin_stats"), "{offered:?}");
    // Tool names and arguments, never results.
    let calls = v["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{v}");
    assert_eq!(calls[0]["name"], "book_room");
    assert_eq!(calls[0]["args"], json!({"room": "Library"}));
    assert!(calls.iter().all(|c| c.get("result").is_none()), "{v}");

    // The owner's next dashboard turn loads its own thread, not the test chat's.
    llm.json(completion("Still here."));
    let (status, again) = dashboard_chat(&w, &owner, &csrf, "and now?", &thread).await;
    assert_eq!(status, 200);
    assert_eq!(again, thread);
    let next = request_with(&llm, "and now?").to_string();
    assert!(
        next.contains("ADMIN-PLAN") && next.contains("OWNER-MEMORY"),
        "{next}"
    );
    assert!(
        !next.contains("Summarise everything") && !next.contains("Booked the Library"),
        "{next}"
    );
    // A test-chat key naming the dashboard thread stays in `web:`.
    llm.json(completion("Hi."));
    let (status, v) = test_chat(
        &w,
        &token,
        &json!({"email": OWNER, "thread_key": thread, "message": "hi"}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert!(
        v["thread_key"]
            .as_str()
            .unwrap()
            .starts_with(&format!("web:{OWNER}:")),
        "{v}"
    );
    assert_eq!(
        dialogue(&request_with(&llm, "hi")),
        ["hi"],
        "no history from the dashboard thread"
    );

    // Rotating from the dashboard retires the old token.
    let r = w
        .post_form("/channels/web", Some(&owner), &[("csrf", &csrf)])
        .await;
    assert_eq!(r.status(), 303);
    let (status, _) = test_chat(&w, &token, &json!({"message": "hi"})).await;
    assert_eq!(status, 403, "the old token no longer works");
    let fresh = root::channels::web::web_token(&w.app.state.store, tenant.id)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(fresh, token);
    assert_eq!(
        w.get(&format!("/web/root/test?token={fresh}"), None)
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn security_l2_suspended_tenant_refuses_web_chat_dashboard_chat_and_kb_pages() {
    let llm = FakeLlm::start().await;
    let (w, _stub, owner, csrf, token) = setup(&llm).await;
    let api = crate::support::mint_key(&w.app.state.store, "root", KeyKind::Live).await;
    let r = w
        .app
        .post_json(
            "/api/v1/kb/pages",
            Some(&api),
            &json!({"slug": "hours", "title": "Hours", "is_public": true,
                    "content_html": "<p>Open 8am.</p>"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let mut tenant = w.tenant("root").await;
    let page: KnowledgePage = w
        .app
        .state
        .store
        .find_unique(Some(tenant.id), KnowledgePage::SLUG_KEY, key().str("hours"))
        .await
        .unwrap()
        .unwrap();
    let kb = format!("/kb/root/{}", page.public_id.unwrap());
    assert_eq!(w.get(&kb, None).await.status(), 200);

    tenant.status = TenantStatus::Suspended;
    w.app.state.store.save_tenant(tenant).await.unwrap();

    // The cached row still says active: every check reads the live row.
    let (status, v) = test_chat(&w, &token, &json!({"message": "hi"})).await;
    assert_eq!(status, 403, "{v}");
    let r = w
        .app
        .post_json(
            &format!("/web/root/messages/stream?token={token}"),
            None,
            &json!({"message": "hi"}),
        )
        .await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        w.get(&format!("/web/root/test?token={token}"), None)
            .await
            .status(),
        403
    );
    let r = w
        .post_form("/chat", Some(&owner), &[("csrf", &csrf), ("message", "hi")])
        .await;
    assert_eq!(r.status(), 422);
    assert!(
        r.text().await.unwrap().contains("not available"),
        "the dashboard chat says why"
    );
    assert_eq!(w.get(&kb, None).await.status(), 404);
    assert!(llm.bodies().is_empty(), "no turn ran");
}

#[tokio::test]
async fn security_l6_web_chat_user_name_and_email_are_capped() {
    let llm = FakeLlm::start().await;
    let (w, _stub, _owner, _csrf, token) = setup(&llm).await;
    for body in [
        json!({"message": "hi", "user_name": "n".repeat(100_000)}),
        json!({"message": "hi", "user_name": "é".repeat(201)}),
        json!({"message": "hi", "email": format!("{}@example.org", "a".repeat(243))}),
    ] {
        let (status, v) = test_chat(&w, &token, &body).await;
        assert_eq!(status, 400, "{v}");
        let r = w
            .app
            .post_json(
                &format!("/web/root/messages/stream?token={token}"),
                None,
                &body,
            )
            .await;
        assert_eq!(r.status(), 400);
    }
    assert!(llm.bodies().is_empty(), "no turn ran");
    // At the caps: accepted, and the name reaches the prompt.
    llm.json(completion("Hello."));
    let name = "é".repeat(200);
    let (status, v) = test_chat(
        &w,
        &token,
        &json!({"message": "hi", "user_name": name,
                "email": format!("{}@example.org", "a".repeat(242))}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert!(llm.bodies()[0].to_string().contains(&name));
}
