//! Dashboard pages `/team`, `/access` and `/access/matrix` (§14.2, §9):
//! who may see and change them (CSRF first, then the role), the team rules
//! (admins never touch owners, the last owner stays), the access policy
//! saved through the settings validator, and the authority matrix agreeing
//! with `GET /api/v1/tools` cell by cell — pages parsed with a real HTML
//! parser, every user-supplied string escaped.

use root::auth::DashboardAuth;
use root::platform::api_keys::KeyKind;
use root::platform::settings::{AccessPolicy, EmailAccess, SlackAccess};
use std::collections::HashMap;

use scraper::{Html, Selector};
use serde_json::{Value, json};
use storage::{Scan, Store, TenantRole, TenantStore, TenantUser};
use uuid::Uuid;

use crate::support::dashboard::{World, attrs, injected_scripts, location, texts, world};

const XSS: &str = "<script>alert(1)</script>";
const PAGES: [&str; 3] = ["/team", "/access", "/access/matrix"];

async fn parsed(r: reqwest::Response) -> (u16, Html) {
    let status = r.status().as_u16();
    (status, Html::parse_document(&r.text().await.unwrap()))
}

/// A signed-in `email` with `role` in `root`, and its CSRF token.
async fn as_user(w: &World, email: &str, role: TenantRole) -> (String, String) {
    w.user("root", email, role).await;
    let session = w.sign_in(email).await;
    let csrf = DashboardAuth::csrf_token(&session);
    (session, csrf)
}

async fn team(w: &World) -> Vec<TenantUser> {
    let root = w.tenant("root").await;
    w.app
        .state
        .store
        .scan(Some(root.id), Scan::all())
        .await
        .unwrap()
}

async fn user_id(w: &World, email: &str) -> Uuid {
    team(w)
        .await
        .into_iter()
        .find(|u| u.email == email)
        .unwrap_or_else(|| panic!("{email} is a user"))
        .id
}

async fn role_of(w: &World, email: &str) -> Option<TenantRole> {
    team(w)
        .await
        .into_iter()
        .find(|u| u.email == email)
        .map(|u| u.role)
}

#[tokio::test]
async fn dashboard_access_pages_answer_by_role() {
    let w = world(&[], false).await;
    let (owner, _) = w.signed_in(TenantRole::Owner).await;
    let (admin, _) = w.signed_in(TenantRole::Admin).await;
    let (viewer, _) = w.signed_in(TenantRole::Viewer).await;
    let (member, _) = as_user(&w, "member@example.org", TenantRole::Member).await;
    for path in PAGES {
        for (who, session) in [("owner", &owner), ("admin", &admin), ("viewer", &viewer)] {
            let (status, page) = w.page(path, session).await;
            assert_eq!(status, 200, "{who} {path}");
            assert_eq!(injected_scripts(&page), 0);
        }
        assert_eq!(w.get(path, Some(&member)).await.status(), 403, "{path}");
        let r = w.get(path, None).await;
        assert_eq!(
            (r.status().as_u16(), location(&r)),
            (303, "/auth/login"),
            "{path}"
        );
    }
    // Team and Access are in the navigation; the matrix is linked from Access.
    let (_, page) = w.page("/team", &owner).await;
    let nav = attrs(&page, "nav.pages a", "href");
    assert!(nav.contains(&"/team".to_string()) && nav.contains(&"/access".to_string()));
    let (_, page) = w.page("/access", &owner).await;
    assert_eq!(attrs(&page, "#matrix-link", "href"), vec!["/access/matrix"]);
    // A viewer sees no forms that change the team, nor a save button.
    let (_, page) = w.page("/team", &viewer).await;
    assert!(texts(&page, "form#add-user").is_empty());
    assert!(texts(&page, "#users form").is_empty());
    let (_, page) = w.page("/access", &viewer).await;
    assert!(texts(&page, "#access-form button").is_empty());
}

#[tokio::test]
async fn dashboard_access_team_adds_changes_and_removes_users_with_csrf_and_roles() {
    let w = world(&[], false).await;
    let (owner, csrf) = as_user(&w, "owner@example.org", TenantRole::Owner).await;
    let (viewer, viewer_csrf) = as_user(&w, "viewer@example.org", TenantRole::Viewer).await;
    let add = |email: &'static str, role: &'static str| vec![("email", email), ("role", role)];

    // CSRF first: none, another session's, then a viewer's own → 403.
    let r = w
        .post_form("/team", Some(&owner), &add("new@example.org", "viewer"))
        .await;
    assert_eq!(r.status(), 403);
    let mut f = add("new@example.org", "viewer");
    f.push(("csrf", &viewer_csrf));
    assert_eq!(w.post_form("/team", Some(&owner), &f).await.status(), 403);
    assert_eq!(w.post_form("/team", Some(&viewer), &f).await.status(), 403);
    assert_eq!(role_of(&w, "new@example.org").await, None);

    // Add: the address is normalised.
    let r = w
        .post_form(
            "/team",
            Some(&owner),
            &[
                ("csrf", &csrf),
                ("email", "  New@Example.ORG "),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(
        (r.status().as_u16(), location(&r)),
        (303, "/team?done=user-added")
    );
    assert_eq!(
        role_of(&w, "new@example.org").await,
        Some(TenantRole::Viewer)
    );
    let (_, page) = w.page("/team?done=user-added", &owner).await;
    assert_eq!(texts(&page, "p.message").len(), 1);
    assert!(texts(&page, "#users .user-email").contains(&"new@example.org".to_string()));

    // A duplicate (any case) re-renders with the field error and the typed values.
    let (status, page) = parsed(
        w.post_form(
            "/team",
            Some(&owner),
            &[
                ("csrf", &csrf),
                ("email", "NEW@example.org"),
                ("role", "admin"),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(texts(&page, "#email-error").len(), 1);
    assert_eq!(attrs(&page, "#email", "value"), vec!["NEW@example.org"]);
    assert_eq!(
        attrs(&page, "#role option[selected]", "value"),
        vec!["admin"]
    );
    // Not an address, or not a role: 422 with the field's error.
    let (status, page) = parsed(
        w.post_form(
            "/team",
            Some(&owner),
            &[("csrf", &csrf), ("email", "nobody"), ("role", "boss")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(texts(&page, "#email-error").len(), 1);
    assert_eq!(texts(&page, "#role-error").len(), 1);
    assert_eq!(attrs(&page, "#email", "value"), vec!["nobody"]);

    // An address that is markup is listed as text.
    let odd = format!("{XSS}@example.org");
    let r = w
        .post_form(
            "/team",
            Some(&owner),
            &[("csrf", &csrf), ("email", &odd), ("role", "member")],
        )
        .await;
    assert_eq!(r.status(), 303);
    let (_, page) = w.page("/team", &owner).await;
    assert_eq!(injected_scripts(&page), 0);
    assert!(texts(&page, "#users .user-email").contains(&odd));

    // Change a role; a viewer may not, nor without the token.
    let id = user_id(&w, "new@example.org").await;
    let path = format!("/team/{id}/role");
    let r = w
        .post_form(
            &path,
            Some(&viewer),
            &[("csrf", &viewer_csrf), ("role", "admin")],
        )
        .await;
    assert_eq!(r.status(), 403);
    let r = w.post_form(&path, Some(&owner), &[("role", "admin")]).await;
    assert_eq!(r.status(), 403);
    let r = w
        .post_form(&path, Some(&owner), &[("csrf", &csrf), ("role", "admin")])
        .await;
    assert_eq!(
        (r.status().as_u16(), location(&r)),
        (303, "/team?done=role-changed")
    );
    assert_eq!(
        role_of(&w, "new@example.org").await,
        Some(TenantRole::Admin)
    );

    // Remove: the same checks; the removed user's session loses access at
    // its next request (memberships are re-read every time).
    let removed = w.sign_in("new@example.org").await;
    assert_eq!(w.get("/team", Some(&removed)).await.status(), 200);
    let path = format!("/team/{id}/remove");
    let r = w
        .post_form(&path, Some(&viewer), &[("csrf", &viewer_csrf)])
        .await;
    assert_eq!(r.status(), 403);
    let r = w
        .post_form(&path, Some(&owner), &[("csrf", &viewer_csrf)])
        .await;
    assert_eq!(r.status(), 403, "another session's token");
    let r = w.post_form(&path, Some(&owner), &[("csrf", &csrf)]).await;
    assert_eq!(
        (r.status().as_u16(), location(&r)),
        (303, "/team?done=user-removed")
    );
    assert_eq!(role_of(&w, "new@example.org").await, None);
    let r = w.get("/team", Some(&removed)).await;
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/auth/login"));
    let r = w.post_form(&path, Some(&owner), &[("csrf", &csrf)]).await;
    assert_eq!(r.status(), 404, "already gone");
}

#[tokio::test]
async fn dashboard_access_team_admins_never_touch_owners_and_the_last_owner_stays() {
    let w = world(&[], false).await;
    let (owner, csrf) = as_user(&w, "owner@example.org", TenantRole::Owner).await;
    let (admin, admin_csrf) = as_user(&w, "admin@example.org", TenantRole::Admin).await;
    w.user("root", "viewer@example.org", TenantRole::Viewer)
        .await;
    let owner_id = user_id(&w, "owner@example.org").await;
    let viewer_id = user_id(&w, "viewer@example.org").await;

    // An admin's page offers no owner role and no forms on an owner's row.
    let (_, page) = w.page("/team", &admin).await;
    assert_eq!(
        attrs(&page, "#role option", "value"),
        vec!["admin", "viewer", "member"]
    );
    assert!(texts(&page, &format!("#user-{owner_id} form")).is_empty());
    assert_eq!(texts(&page, &format!("#user-{viewer_id} form")).len(), 2);

    // An admin may not grant owner, demote or remove an owner: 403.
    let r = w
        .post_form(
            "/team",
            Some(&admin),
            &[
                ("csrf", &admin_csrf),
                ("email", "boss@example.org"),
                ("role", "owner"),
            ],
        )
        .await;
    assert_eq!(r.status(), 403);
    assert_eq!(role_of(&w, "boss@example.org").await, None);
    for (path, form) in [
        (format!("/team/{viewer_id}/role"), vec![("role", "owner")]),
        (format!("/team/{owner_id}/role"), vec![("role", "viewer")]),
        (format!("/team/{owner_id}/remove"), vec![]),
    ] {
        let mut form = form;
        form.push(("csrf", &admin_csrf));
        let r = w.post_form(&path, Some(&admin), &form).await;
        assert_eq!(r.status(), 403, "{path}");
    }
    assert_eq!(
        role_of(&w, "owner@example.org").await,
        Some(TenantRole::Owner)
    );
    assert_eq!(
        role_of(&w, "viewer@example.org").await,
        Some(TenantRole::Viewer)
    );
    // …but manages admins, viewers and members.
    let r = w
        .post_form(
            &format!("/team/{viewer_id}/role"),
            Some(&admin),
            &[("csrf", &admin_csrf), ("role", "member")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(
        role_of(&w, "viewer@example.org").await,
        Some(TenantRole::Member)
    );
    let r = w
        .post_form(
            "/team",
            Some(&admin),
            &[
                ("csrf", &admin_csrf),
                ("email", "helper@example.org"),
                ("role", "admin"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);

    // The last owner can be neither demoted nor removed: 409 with the
    // error on that row, nothing changed.
    for (path, form) in [
        (format!("/team/{owner_id}/role"), vec![("role", "admin")]),
        (format!("/team/{owner_id}/remove"), vec![]),
    ] {
        let mut form = form;
        form.push(("csrf", &csrf));
        let (status, page) = parsed(w.post_form(&path, Some(&owner), &form).await).await;
        assert_eq!(status, 409, "{path}");
        let error = texts(&page, &format!("#user-{owner_id} #row-error"));
        assert_eq!(error.len(), 1, "{path}");
        assert!(error[0].contains("last owner"), "{error:?}");
    }
    assert_eq!(
        role_of(&w, "owner@example.org").await,
        Some(TenantRole::Owner)
    );
    // With a second owner, the first may step down.
    let r = w
        .post_form(
            "/team",
            Some(&owner),
            &[
                ("csrf", &csrf),
                ("email", "second@example.org"),
                ("role", "owner"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let r = w
        .post_form(
            &format!("/team/{owner_id}/role"),
            Some(&owner),
            &[("csrf", &csrf), ("role", "admin")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(
        role_of(&w, "owner@example.org").await,
        Some(TenantRole::Admin)
    );
    // Now an admin, the former owner may not touch the new owner.
    let second = user_id(&w, "second@example.org").await;
    let r = w
        .post_form(
            &format!("/team/{second}/remove"),
            Some(&owner),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status(), 403);
}

#[tokio::test]
async fn dashboard_access_team_in_the_dev_environment_edits_the_live_users() {
    let w = world(&[], false).await;
    let (owner, csrf) = as_user(&w, "owner@example.org", TenantRole::Owner).await;
    let r = w
        .post_form(
            "/dashboard/environment",
            Some(&owner),
            &[("environment", "dev"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status(), 303);
    let (status, page) = w.page("/team", &owner).await;
    assert_eq!(status, 200);
    assert_eq!(texts(&page, "#live-users").len(), 1);
    assert!(texts(&page, "#users .user-email").contains(&"owner@example.org".to_string()));
    let r = w
        .post_form(
            "/team",
            Some(&owner),
            &[
                ("csrf", &csrf),
                ("email", "dev-helper@example.org"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(
        role_of(&w, "dev-helper@example.org").await,
        Some(TenantRole::Viewer),
        "a user of the live community"
    );
}

/// The access form as posted (the checkbox only when ticked).
fn policy_form<'a>(
    csrf: &'a str,
    slack: &'a str,
    email: &'a str,
    tier: &'a str,
    domains: &'a str,
    addresses: &'a str,
    dashboard_users: bool,
) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![
        ("csrf", csrf),
        ("slack", slack),
        ("email", email),
        ("default_tier", tier),
        ("email_domains", domains),
        ("email_addresses", addresses),
    ];
    if dashboard_users {
        f.push(("dashboard_users", "on"));
    }
    f
}

async fn stored_policy(w: &World) -> (AccessPolicy, Value) {
    let t = w.tenant("root").await;
    (AccessPolicy::from_settings(&t.settings.0), t.settings.0)
}

#[tokio::test]
async fn dashboard_access_policy_saves_through_the_validator_and_keeps_typed_values() {
    let w = world(&[], false).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;
    let key = crate::support::mint_key(&w.app.state.store, "root", KeyKind::Live).await;

    // The defaults of §9 are shown.
    let (_, page) = w.page("/access", &owner).await;
    assert_eq!(
        attrs(&page, "input[name=slack][checked]", "value"),
        vec!["open"]
    );
    assert_eq!(
        attrs(&page, "input[name=email][checked]", "value"),
        vec!["domains"]
    );
    assert_eq!(attrs(&page, "#default_tier", "value"), vec!["member"]);
    assert_eq!(
        attrs(&page, "input[name=dashboard_users][checked]", "value").len(),
        1
    );

    // CSRF then role.
    let good = policy_form(
        &csrf,
        "integration",
        "domains",
        "partner",
        "acme.org\r\nExample.com",
        "ada@example.org",
        false,
    );
    let mut no_token = good.clone();
    no_token.remove(0);
    assert_eq!(
        w.post_form("/access", Some(&owner), &no_token)
            .await
            .status(),
        403
    );
    let mut foreign = good.clone();
    foreign[0].1 = &viewer_csrf;
    assert_eq!(
        w.post_form("/access", Some(&owner), &foreign)
            .await
            .status(),
        403
    );
    foreign[0].1 = &viewer_csrf;
    assert_eq!(
        w.post_form("/access", Some(&viewer), &foreign)
            .await
            .status(),
        403
    );
    let (before, settings_before) = stored_policy(&w).await;
    assert_eq!(before, AccessPolicy::default());

    // Bad values: 422, each field's error, every typed value kept, nothing saved.
    let bad = policy_form(
        &csrf,
        "integration",
        "integration",
        " Public ",
        "acme.org\nnot a domain",
        "nobody",
        false,
    );
    let (status, page) = parsed(w.post_form("/access", Some(&owner), &bad).await).await;
    assert_eq!(status, 422);
    let tier_error = texts(&page, "#default_tier-error");
    assert_eq!(tier_error.len(), 1);
    assert!(tier_error[0].contains("reserved"), "{tier_error:?}");
    assert_eq!(texts(&page, "#email_domains-error").len(), 1);
    assert_eq!(texts(&page, "#email_addresses-error").len(), 1);
    assert!(texts(&page, "#slack-error").is_empty());
    assert_eq!(attrs(&page, "#default_tier", "value"), vec![" Public "]);
    assert_eq!(
        texts(&page, "#email_domains"),
        vec!["acme.org\nnot a domain"]
    );
    assert_eq!(texts(&page, "#email_addresses"), vec!["nobody"]);
    assert_eq!(
        attrs(&page, "input[name=slack][checked]", "value"),
        vec!["integration"]
    );
    assert_eq!(
        attrs(&page, "input[name=email][checked]", "value"),
        vec!["integration"]
    );
    assert!(attrs(&page, "input[name=dashboard_users][checked]", "value").is_empty());
    assert_eq!(stored_policy(&w).await.1, settings_before, "nothing saved");

    // A good save: the re-read row holds exactly what was posted.
    let t0 = w.tenant("root").await.updated_at;
    w.clock.advance_ms(5_000);
    let r = w.post_form("/access", Some(&owner), &good).await;
    assert_eq!(
        (r.status().as_u16(), location(&r)),
        (303, "/access?done=access-saved")
    );
    let (saved, _) = stored_policy(&w).await;
    assert_eq!(
        saved,
        AccessPolicy {
            slack: SlackAccess::Integration,
            email: EmailAccess::Domains,
            default_tier: "partner".into(),
            email_domains: vec!["acme.org".into(), "example.com".into()],
            email_addresses: vec!["ada@example.org".into()],
            dashboard_users: false,
        }
    );
    let row = w.tenant("root").await;
    assert!(row.updated_at > t0, "updated_at stamped");
    assert_eq!(row.updated_at, w.app.state.clock.now());
    let (_, page) = w.page("/access?done=access-saved", &owner).await;
    assert_eq!(texts(&page, "p.message").len(), 1);
    assert_eq!(attrs(&page, "#default_tier", "value"), vec!["partner"]);
    assert_eq!(
        texts(&page, "#email_domains"),
        vec!["acme.org\nexample.com"]
    );
    // The API sees the new policy at once (the tenant cache was dropped).
    let tools: Value = w
        .http
        .get(w.app.url("/api/v1/tools"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        tools["audiences"]
            .as_array()
            .unwrap()
            .contains(&json!("partner")),
        "{}",
        tools["audiences"]
    );

    // Markup typed into the fields is text wherever it is shown: the
    // default tier on the editor and the matrix, the community's name.
    let mut t = w.tenant("root").await;
    t.display_name = format!("Root {XSS}");
    w.app.state.store.save_tenant(t.clone()).await.unwrap();
    w.app.state.tenants.invalidate(&t);
    let odd_domains = format!("{XSS}.example.org");
    let xss = policy_form(&csrf, "open", "domains", XSS, &odd_domains, "", true);
    let (status, page) = parsed(w.post_form("/access", Some(&owner), &xss).await).await;
    assert_eq!(status, 422, "the domain is refused");
    assert_eq!(injected_scripts(&page), 0);
    assert_eq!(texts(&page, "#email_domains"), vec![odd_domains.clone()]);
    assert_eq!(
        texts(&page, "header .community"),
        vec![format!("Root {XSS}")]
    );
    let xss = policy_form(&csrf, "open", "domains", XSS, "acme.org", "", true);
    let r = w.post_form("/access", Some(&owner), &xss).await;
    assert_eq!(r.status(), 303);
    assert_eq!(stored_policy(&w).await.0.default_tier, XSS);
    for path in PAGES {
        let (status, page) = w.page(path, &owner).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(injected_scripts(&page), 0, "{path}");
        assert_eq!(
            texts(&page, "header .community"),
            vec![format!("Root {XSS}")]
        );
    }
    let (_, page) = w.page("/access", &owner).await;
    assert_eq!(attrs(&page, "#default_tier", "value"), vec![XSS]);
    let (_, page) = w.page("/access/matrix", &owner).await;
    assert_eq!(texts(&page, ".default-tier"), vec![XSS]);
    assert!(texts(&page, "#surface-slack th.audience").contains(&XSS.to_string()));
}

/// `GET /api/v1/tools` as the `root` tenant.
async fn api_tools(w: &World) -> Value {
    let key = crate::support::mint_key(&w.app.state.store, "root", KeyKind::Live).await;
    let r = w
        .http
        .get(w.app.url("/api/v1/tools"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// The matrix page's cells: (surface, tool, audience) → (verdict, why) per
/// row of that name, in page order.
fn cells(page: &Html) -> HashMap<(String, String, String), Vec<(String, String)>> {
    let cell = Selector::parse("td.cell").unwrap();
    let verdict = Selector::parse(".verdict").unwrap();
    let why = Selector::parse(".why").unwrap();
    let text = |e: scraper::ElementRef<'_>, s: &Selector| {
        e.select(s)
            .next()
            .map(|x| x.text().collect::<String>().trim().to_string())
            .unwrap_or_default()
    };
    let mut out: HashMap<_, Vec<_>> = HashMap::new();
    for td in page.select(&cell) {
        let attr = |a: &str| td.value().attr(a).unwrap_or_default().to_string();
        out.entry((
            attr("data-surface"),
            attr("data-tool"),
            attr("data-audience"),
        ))
        .or_default()
        .push((text(td, &verdict), text(td, &why)));
    }
    out
}

/// Every cell of the matrix page against the API: the same tools on every
/// surface, the same verdict, and for an allowed cell the same reason.
fn assert_matches_api(page: &Html, api: &Value) -> (usize, usize) {
    let tools = api["tools"].as_array().unwrap();
    let audiences: Vec<&str> = api["audiences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    let shown = cells(page);
    let (mut allowed, mut denied) = (0, 0);
    for surface in api["surfaces"].as_array().unwrap() {
        let surface = surface.as_str().unwrap();
        let mut listed = texts(page, &format!("#surface-{surface} .tool-name"));
        listed.sort();
        assert_eq!(listed, names, "every tool of the API on {surface}");
        assert_eq!(
            texts(page, &format!("#surface-{surface} th.audience")),
            audiences
        );
        for tool in tools {
            let name = tool["name"].as_str().unwrap();
            // A name two sources share has a row each, in the API's order.
            let same: Vec<&Value> = tools.iter().filter(|t| t["name"] == name).collect();
            let i = same
                .iter()
                .position(|t| t["source"] == tool["source"])
                .unwrap();
            for audience in &audiences {
                let at = (surface.to_string(), name.to_string(), audience.to_string());
                let row = shown.get(&at).unwrap_or_else(|| panic!("{at:?} is shown"));
                assert_eq!(row.len(), same.len(), "{at:?}");
                let (verdict, why) = &row[i];
                match tool["allowed"][audience][surface].as_str() {
                    Some(reason) => {
                        assert_eq!(
                            (verdict.as_str(), why.as_str()),
                            ("allowed", reason),
                            "{at:?}"
                        );
                        allowed += 1;
                    }
                    None => {
                        assert_eq!(verdict, "denied", "{at:?}");
                        assert!(!why.is_empty(), "{at:?}: a denial says why");
                        denied += 1;
                    }
                }
            }
        }
    }
    (allowed, denied)
}

#[tokio::test]
async fn dashboard_access_matrix_matches_the_tools_api_cell_by_cell() {
    use testkit::stub::StubBackend;

    let w = world(&[], false).await;
    let (viewer, _) = w.signed_in(TenantRole::Viewer).await;

    // The platform's own tools.
    let api = api_tools(&w).await;
    let (status, page) = w.page("/access/matrix", &viewer).await;
    assert_eq!(status, 200, "viewers read the matrix");
    let (allowed, denied) = assert_matches_api(&page, &api);
    assert!(
        allowed > 0 && denied > 0,
        "{allowed} allowed, {denied} denied"
    );
    let cell = "#surface-slack td[data-tool=\"escalate_to_admin\"][data-audience=\"unresolved\"]";
    assert_eq!(texts(&page, &format!("{cell} .verdict")), vec!["allowed"]);
    assert_eq!(
        texts(&page, &format!("{cell} .why")),
        vec![api_reason(&api, "escalate_to_admin", "unresolved", "slack")]
    );

    // With an integration: its tools, manifest tiers and allowlist, and a
    // description that is markup.
    let stub = StubBackend::start("stub-secret-0123456789").await.unwrap();
    let mut manifest = StubBackend::default_manifest();
    manifest["tools"][0]["description"] = json!(format!("Look up {XSS}"));
    stub.set_manifest(manifest);
    let ctx = crate::support::ctx(w.tenant("root").await);
    crate::support::register_stub(&w.app, &ctx, &stub, "stub-secret-0123456789").await;
    let api = api_tools(&w).await;
    let (status, page) = w.page("/access/matrix", &viewer).await;
    assert_eq!(status, 200);
    assert_eq!(injected_scripts(&page), 0);
    assert!(texts(&page, ".tool-description").contains(&format!("Look up {XSS}")));
    assert!(
        texts(&page, "#surface-slack .tool-name").contains(&"lookup_member".to_string()),
        "integration tools are listed"
    );
    assert_matches_api(&page, &api);
    // The member tier's core_tools allowlist leaves who_knows out, and says so.
    let cell = "#surface-slack td[data-tool=\"who_knows\"][data-audience=\"member\"]";
    assert_eq!(texts(&page, &format!("{cell} .verdict")), vec!["denied"]);
    assert_eq!(
        texts(&page, &format!("{cell} .why")),
        vec!["not in the manifest's core_tools allowlist for tier member"]
    );
    let cell = "#surface-slack td[data-tool=\"lookup_member\"][data-audience=\"partner\"]";
    assert_eq!(texts(&page, &format!("{cell} .verdict")), vec!["allowed"]);
    assert_eq!(
        texts(&page, &format!("{cell} .why")),
        vec![api_reason(&api, "lookup_member", "partner", "slack")]
    );
}

fn api_reason(api: &Value, tool: &str, audience: &str, surface: &str) -> String {
    api["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .and_then(|t| t["allowed"][audience][surface].as_str())
        .unwrap_or_else(|| panic!("{tool} is allowed for {audience} on {surface}"))
        .to_string()
}
