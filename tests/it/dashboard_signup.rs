//! The signup gate `/get-started` (§14.1): closed unless both
//! `PLATFORM_SIGNUP_CODE` and `SESSION_COOKIE_SECRET` are set; the invite
//! code (constant time, rate limited, never logged) earns the `root_invite`
//! cookie (HMAC-signed, 30 days); with it a visitor creates a community and
//! becomes its owner — signed in, the session opens it; otherwise a magic
//! link. The gate's forms refuse cross-site posts.

use std::cell::RefCell;
use std::collections::BTreeMap;

use hmac::{Hmac, Mac};
use scraper::Html;
use serde_json::json;
use sha2::Sha256;
use storage::{Scan, Store, TenantRole, TenantStore, TenantUser};

use root::auth::{GATE_CSRF_COOKIE, INVITE_DAYS, SIGNUP_CODE_ATTEMPTS_PER_IP_PER_MINUTE};
use root::platform::clock::Clock;

use crate::support::Reply;
use crate::support::dashboard::{World, attrs, injected_scripts, location, texts, world};
use crate::support::logs;

const CODE: &str = "open-sesame-2026";
const SECRET: &str = "cookie-secret-for-the-tests-0123456789";

async fn open_world(with_mail: bool) -> World {
    world(
        &[
            ("PLATFORM_SIGNUP_CODE", CODE),
            ("SESSION_COOKIE_SECRET", SECRET),
        ],
        with_mail,
    )
    .await
}

/// A browser: the cookies the server set, sent back on every request.
struct Visitor<'a> {
    w: &'a World,
    jar: RefCell<BTreeMap<String, String>>,
}

impl<'a> Visitor<'a> {
    fn new(w: &'a World) -> Self {
        Visitor {
            w,
            jar: RefCell::default(),
        }
    }

    fn set(&self, name: &str, value: &str) {
        self.jar.borrow_mut().insert(name.into(), value.into());
    }

    fn cookie(&self, name: &str) -> Option<String> {
        self.jar.borrow().get(name).cloned()
    }

    fn header(&self) -> String {
        let jar = self.jar.borrow();
        jar.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn absorb(&self, resp: &reqwest::Response) {
        for c in set_cookies(resp) {
            let pair = c.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() || c.contains("Max-Age=0") {
                self.jar.borrow_mut().remove(name);
            } else {
                self.set(name, value);
            }
        }
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        let resp = self
            .w
            .http
            .get(self.w.app.url(path))
            .header("cookie", self.header())
            .send()
            .await
            .unwrap();
        self.absorb(&resp);
        resp
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        let resp = self
            .w
            .http
            .post(self.w.app.url(path))
            .header("cookie", self.header())
            .form(form)
            .send()
            .await
            .unwrap();
        self.absorb(&resp);
        resp
    }

    /// The CSRF token of the gate's form at `path`.
    async fn csrf(&self, path: &str) -> String {
        let resp = self.get(path).await;
        assert_eq!(resp.status(), 200, "{path}");
        let page = Html::parse_document(&resp.text().await.unwrap());
        attrs(&page, "input[name=csrf]", "value").remove(0)
    }

    /// Enter `code` on the code form.
    async fn enter_code(&self, code: &str) -> reqwest::Response {
        let csrf = self.csrf("/get-started").await;
        self.post("/get-started", &[("csrf", &csrf), ("code", code)])
            .await
    }

    /// Post the community form with this browser's gate token (computed,
    /// so no page visit first touches the invite cookie under test).
    async fn create(&self, name: &str, slug: &str, email: &str) -> reqwest::Response {
        if self.cookie(GATE_CSRF_COOKIE).is_none() {
            self.csrf("/get-started").await;
        }
        let key = self.cookie(GATE_CSRF_COOKIE).unwrap();
        let csrf = self
            .w
            .app
            .state
            .auth
            .signup_gate()
            .unwrap()
            .form_token(&key);
        self.post(
            "/get-started/community",
            &[
                ("csrf", &csrf),
                ("name", name),
                ("slug", slug),
                ("owner_email", email),
            ],
        )
        .await
    }
}

fn set_cookies(resp: &reqwest::Response) -> Vec<String> {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

/// The `Set-Cookie` of `name` in `resp`.
fn set_cookie(resp: &reqwest::Response, name: &str) -> Option<String> {
    set_cookies(resp)
        .into_iter()
        .find(|c| c.starts_with(&format!("{name}=")))
}

async fn page_of(resp: reqwest::Response) -> Html {
    Html::parse_document(&resp.text().await.unwrap())
}

async fn exists(w: &World, slug: &str) -> bool {
    w.app
        .state
        .store
        .tenant_by_slug(slug)
        .await
        .unwrap()
        .is_some()
}

async fn owners(w: &World, slug: &str) -> Vec<(String, TenantRole)> {
    let t = w.tenant(slug).await;
    let rows: Vec<TenantUser> = w
        .app
        .state
        .store
        .scan(Some(t.id), Scan::all())
        .await
        .unwrap();
    rows.into_iter().map(|u| (u.email, u.role)).collect()
}

/// An invite as the server signs it, with `secret` (the scheme spelled out:
/// HMAC-SHA256 over `root-invite:v1:<issued-secs>.<nonce>`).
fn sign_invite(secret: &str, issued_secs: i64) -> String {
    let payload = format!("{issued_secs}.{}", "ab".repeat(16));
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(b"root-invite:v1:");
    mac.update(payload.as_bytes());
    format!("{payload}.{}", hex::encode(mac.finalize().into_bytes()))
}

#[tokio::test]
async fn dashboard_signup_is_closed_unless_both_the_code_and_the_secret_are_set() {
    for env in [
        vec![],
        vec![("PLATFORM_SIGNUP_CODE", CODE)],
        vec![("SESSION_COOKIE_SECRET", SECRET)],
    ] {
        let w = world(&env, false).await;
        let v = Visitor::new(&w);
        for path in ["/get-started", "/get-started/community"] {
            let r = v.get(path).await;
            assert_eq!(r.status(), 404, "{env:?} GET {path}");
            let page = page_of(r).await;
            assert_eq!(texts(&page, "h1"), vec!["Signups are closed"]);
            assert!(texts(&page, "p")[0].contains("Ask its operator"), "{env:?}");
            let r = v
                .post(
                    path,
                    &[
                        ("code", CODE),
                        ("name", "X"),
                        ("slug", "x"),
                        ("owner_email", "x@example.org"),
                    ],
                )
                .await;
            assert_eq!(r.status(), 404, "{env:?} POST {path}");
            assert!(set_cookie(&r, "root_invite").is_none());
        }
        assert!(!exists(&w, "x").await);
        let login = page_of(w.get("/auth/login", None).await).await;
        assert!(texts(&login, "#start-community").is_empty(), "{env:?}");
    }
    let w = open_world(false).await;
    let login = page_of(w.get("/auth/login", None).await).await;
    assert_eq!(
        attrs(&login, "#start-community a", "href"),
        vec!["/get-started"]
    );
    assert_eq!(w.get("/get-started", None).await.status(), 200);
}

#[tokio::test(flavor = "current_thread")]
async fn dashboard_signup_a_wrong_code_is_422_without_a_cookie_and_is_never_logged() {
    let (out, _guard) = logs::capture(tracing::Level::INFO);
    let w = open_world(false).await;
    let v = Visitor::new(&w);
    let near_miss = "open-sesame-2025";
    let mut r = v.enter_code(near_miss).await;
    // tracing's per-callsite interest is process-global: another test's
    // thread may race this thread-local subscriber for it, so retry a few
    // times until the line is seen (each attempt must still be a 422).
    for _ in 0..5 {
        assert_eq!(r.status(), 422);
        assert!(set_cookie(&r, "root_invite").is_none());
        if out.text().contains("wrong invite code") {
            break;
        }
        tracing::callsite::rebuild_interest_cache();
        r = v.enter_code(near_miss).await;
    }
    assert!(v.cookie("root_invite").is_none());
    let page = page_of(r).await;
    assert_eq!(texts(&page, "#code-error").len(), 1);
    assert_eq!(
        attrs(&page, "#code", "value"),
        Vec::<String>::new(),
        "the guess is not echoed"
    );
    let logged = out.text();
    let line = logged
        .lines()
        .find(|l| l.contains("wrong invite code"))
        .unwrap_or_else(|| panic!("no log line in {logged}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(!logged.contains(near_miss), "{logged}");
    assert!(!logged.contains(CODE), "{logged}");
    assert!(!logged.contains(SECRET), "{logged}");
    // The community form stays shut.
    assert_eq!(
        location(&v.get("/get-started/community").await),
        "/get-started"
    );
}

#[tokio::test]
async fn dashboard_signup_gate_forms_refuse_cross_site_posts() {
    let w = open_world(false).await;
    // No gate cookie at all (a post from another site's page).
    for path in ["/get-started", "/get-started/community"] {
        let r = w
            .post_form(path, None, &[("csrf", ""), ("code", CODE)])
            .await;
        assert_eq!(r.status(), 403, "{path}");
        assert!(set_cookie(&r, "root_invite").is_none());
    }
    // The attacker's own valid token, posted with the victim's cookie.
    let attacker = Visitor::new(&w);
    let token = attacker.csrf("/get-started").await;
    let victim = Visitor::new(&w);
    victim.csrf("/get-started").await;
    assert_ne!(victim.cookie("root_signup_csrf"), None);
    let r = victim
        .post("/get-started", &[("csrf", &token), ("code", CODE)])
        .await;
    assert_eq!(r.status(), 403);
    assert!(victim.cookie("root_invite").is_none());
    // The gate cookie is strict and confined to the gate.
    let fresh = w.get("/get-started", None).await;
    let c = set_cookie(&fresh, "root_signup_csrf").unwrap();
    assert!(
        c.contains("Path=/get-started") && c.contains("SameSite=Strict") && c.contains("HttpOnly"),
        "{c}"
    );
}

#[tokio::test]
async fn dashboard_signup_the_right_code_sets_the_signed_invite_cookie() {
    let w = open_world(false).await;
    let v = Visitor::new(&w);
    let r = v.enter_code(&format!("  {CODE} ")).await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/get-started/community");
    let set = set_cookie(&r, "root_invite").expect("the invite cookie");
    let parts: Vec<&str> = set.split("; ").collect();
    let value = parts[0].strip_prefix("root_invite=").unwrap();
    assert_eq!(
        parts[1..],
        ["Path=/", "Max-Age=2592000", "HttpOnly", "SameSite=Lax"],
        "{set}"
    );
    assert_eq!(INVITE_DAYS * 86_400, 2_592_000);
    // <issued-at secs>.<nonce>.<hmac>, issued by the app clock.
    let fields: Vec<&str> = value.split('.').collect();
    assert_eq!(fields.len(), 3, "{value}");
    assert_eq!(
        fields[0].parse::<i64>().unwrap(),
        w.clock.now().micros() / 1_000_000
    );
    assert_eq!((fields[1].len(), fields[2].len()), (32, 64), "{value}");
    let gate = w.app.state.auth.signup_gate().unwrap();
    assert!(gate.check_invite(value, w.clock.now()).is_ok());

    let r = v.get("/get-started/community").await;
    assert_eq!(r.status(), 200);
    let page = page_of(r).await;
    for field in ["#name", "#slug", "#owner_email"] {
        assert_eq!(texts(&page, field).len(), 1, "{field}");
    }
    assert!(attrs(&page, "#owner_email", "readonly").is_empty());
    // Back at /get-started with a valid invite: on to the form.
    assert_eq!(
        location(&v.get("/get-started").await),
        "/get-started/community"
    );
}

#[tokio::test]
async fn dashboard_signup_forged_tampered_and_expired_invites_are_refused() {
    let w = open_world(false).await;
    let now = w.clock.now().micros() / 1_000_000;
    // The scheme with the server's secret is accepted (the control), with
    // another secret it is forged.
    let v = Visitor::new(&w);
    v.set("root_invite", &sign_invite(SECRET, now));
    assert_eq!(v.get("/get-started/community").await.status(), 200);
    let real = {
        let v = Visitor::new(&w);
        v.enter_code(CODE).await;
        v.cookie("root_invite").unwrap()
    };
    let (_, rest) = real.split_once('.').unwrap();
    for (what, bad) in [
        ("forged", sign_invite("another-secret", now)),
        ("tampered", format!("{}.{rest}", now + 86_400)),
        ("malformed", "garbage".to_string()),
    ] {
        let v = Visitor::new(&w);
        v.set("root_invite", &bad);
        let r = v.get("/get-started/community").await;
        assert_eq!(r.status(), 403, "{what}");
        let cleared = set_cookie(&r, "root_invite").unwrap();
        assert!(cleared.contains("Max-Age=0"), "{what}: {cleared}");
        let page = page_of(r).await;
        assert_eq!(
            texts(&page, "#invite-code").len(),
            1,
            "{what}: the code form"
        );
        assert!(
            texts(&page, "#gate-message")[0].contains("not valid"),
            "{what}"
        );
        // Posting the community form with it creates nothing.
        v.set("root_invite", &bad);
        let r = v.create("Evil", "evil", "eve@example.org").await;
        assert_eq!(r.status(), 403, "{what}");
    }
    assert!(!exists(&w, "evil").await);

    // 30 days is honoured to the second, then the invite is gone.
    let v = Visitor::new(&w);
    v.enter_code(CODE).await;
    w.clock.advance_ms(INVITE_DAYS * 86_400_000 - 1_000);
    assert_eq!(v.get("/get-started/community").await.status(), 200);
    w.clock.advance_ms(2_000);
    let invite = v.cookie("root_invite").unwrap();
    let r = v.get("/get-started/community").await;
    assert_eq!(r.status(), 410);
    let page = page_of(r).await;
    assert!(texts(&page, "#gate-message")[0].contains("expired"));
    assert!(v.cookie("root_invite").is_none(), "cleared");
    v.set("root_invite", &invite);
    let r = v.create("Late", "late", "late@example.org").await;
    assert_eq!(r.status(), 410);
    assert!(!exists(&w, "late").await);

    // No invite at all: the code comes first.
    let v = Visitor::new(&w);
    assert_eq!(
        location(&v.get("/get-started/community").await),
        "/get-started"
    );
    let r = v.create("Sneaky", "sneaky", "s@example.org").await;
    assert_eq!(r.status(), 403);
    assert!(texts(&page_of(r).await, "#gate-message")[0].contains("invite code first"));
}

#[tokio::test]
async fn dashboard_signup_creates_the_community_and_mails_its_owner_a_link() {
    let w = open_world(true).await;
    let mail = w.mail.as_ref().unwrap();
    mail.route("POST", "/email", |_| {
        Reply::json(200, &json!({"MessageID": "pm-1", "ErrorCode": 0}))
    });
    let v = Visitor::new(&w);
    v.enter_code(CODE).await;
    let name = "<script>alert(1)</script> Garden";
    let r = v.create(name, "garden", " Ann@Example.org ").await;
    assert_eq!(r.status(), 201);
    let cleared = set_cookie(&r, "root_invite").unwrap();
    assert!(cleared.starts_with("root_invite=;") && cleared.contains("Max-Age=0"));
    let page = page_of(r).await;
    assert_eq!(injected_scripts(&page), 0, "the name is escaped");
    assert_eq!(texts(&page, "#created"), vec![format!("{name} is ready")]);
    assert!(texts(&page, "#next-step")[0].contains("Check your inbox"));

    let t = w.tenant("garden").await;
    assert_eq!(t.display_name, name);
    assert!(t.live_tenant_id.is_none());
    assert_eq!(
        owners(&w, "garden").await,
        vec![("ann@example.org".to_string(), TenantRole::Owner)]
    );
    let sent = mail.requests_to("/email");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body["To"], "ann@example.org");
    let text = sent[0].body["TextBody"].as_str().unwrap();
    let link = text
        .split_whitespace()
        .find(|w| w.contains("/auth/callback?token="))
        .unwrap();
    let r = w.get(&link[link.find("/auth/").unwrap()..], None).await;
    assert_eq!(r.status(), 303, "the mailed link signs the owner in");
    let session = crate::support::dashboard::session_of(&r).unwrap();
    let (_, me) = w.me(&session).await;
    assert_eq!(
        (me["tenant"]["slug"].as_str(), me["role"].as_str()),
        (Some("garden"), Some("owner"))
    );

    // One community per accepted code entry: the cleared invite opens no
    // second one.
    let r = v.create("Second", "second", "ann@example.org").await;
    assert_eq!(r.status(), 403);
    assert!(!exists(&w, "second").await);
}

#[tokio::test]
async fn dashboard_signup_a_signed_in_visitor_owns_it_and_the_session_opens_it() {
    let w = open_world(false).await;
    let (session, _) = w.signed_in(TenantRole::Viewer).await;
    let email = w.me(&session).await.1["email"]
        .as_str()
        .unwrap()
        .to_string();
    let v = Visitor::new(&w);
    v.set("root_session", &session);
    v.enter_code(CODE).await;
    let page = page_of(v.get("/get-started/community").await).await;
    assert_eq!(attrs(&page, "#owner_email", "value"), vec![email.clone()]);
    assert_eq!(attrs(&page, "#owner_email", "readonly").len(), 1);
    assert!(texts(&page, "#signed-in-as")[0].contains(&email));

    // The posted address is ignored: the owner is the signed-in user.
    let r = v.create("Choir", "choir", "someone-else@example.org").await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/welcome");
    assert!(set_cookie(&r, "root_invite").unwrap().contains("Max-Age=0"));
    assert_eq!(
        owners(&w, "choir").await,
        vec![(email.clone(), TenantRole::Owner)]
    );
    let (_, me) = w.me(&session).await;
    assert_eq!(me["tenant"]["slug"], "choir", "the session shows it");
    assert_eq!(me["role"], "owner");
    let (status, welcome) = w.page("/welcome", &session).await;
    assert_eq!(status, 200);
    assert_eq!(texts(&welcome, "header .community"), vec!["Choir"]);
}

#[tokio::test]
async fn dashboard_signup_a_taken_slug_or_bad_values_are_422_with_the_typed_values() {
    let w = open_world(false).await;
    let v = Visitor::new(&w);
    v.enter_code(CODE).await;
    let name = "<script>alert(2)</script> Club";
    let r = v.create(name, "root", "ann@example.org").await;
    assert_eq!(r.status(), 422);
    let page = page_of(r).await;
    assert_eq!(texts(&page, "#slug-error"), vec!["root is already taken."]);
    assert_eq!(attrs(&page, "#name", "value"), vec![name]);
    assert_eq!(attrs(&page, "#slug", "value"), vec!["root"]);
    assert_eq!(
        attrs(&page, "#owner_email", "value"),
        vec!["ann@example.org"]
    );
    assert_eq!(injected_scripts(&page), 0, "the typed name is escaped");
    for (slug, email, error) in [
        ("Bad Slug", "ann@example.org", "#slug-error"),
        ("club--dev", "ann@example.org", "#slug-error"),
        ("club", "not-an-address", "#email-error"),
    ] {
        let r = v.create(name, slug, email).await;
        assert_eq!(r.status(), 422, "{slug} {email}");
        assert_eq!(texts(&page_of(r).await, error).len(), 1, "{slug} {email}");
    }
    let r = v.create("", "club", "ann@example.org").await;
    assert_eq!(r.status(), 422);
    assert_eq!(texts(&page_of(r).await, "#name-error").len(), 1);
    assert_eq!(owners(&w, "root").await.len(), 0, "root gained no owner");

    // The invite survived the mistakes; without mail the page says how the
    // owner gets a link.
    let r = v.create(name, "club", "ann@example.org").await;
    assert_eq!(r.status(), 201);
    let page = page_of(r).await;
    let next = texts(&page, "#next-step").remove(0);
    assert!(
        next.contains("root auth link --email ann@example.org"),
        "{next}"
    );
    assert_eq!(injected_scripts(&page), 0);
    assert_eq!(
        owners(&w, "club").await,
        vec![("ann@example.org".to_string(), TenantRole::Owner)]
    );
}

#[tokio::test]
async fn dashboard_signup_code_attempts_are_rate_limited() {
    let w = open_world(false).await;
    let v = Visitor::new(&w);
    let csrf = v.csrf("/get-started").await;
    for i in 0..SIGNUP_CODE_ATTEMPTS_PER_IP_PER_MINUTE {
        let r = v
            .post("/get-started", &[("csrf", &csrf), ("code", "guess")])
            .await;
        assert_eq!(r.status(), 422, "attempt {i}");
    }
    let r = v
        .post("/get-started", &[("csrf", &csrf), ("code", CODE)])
        .await;
    assert_eq!(r.status(), 429, "even the right code waits");
    assert!(r.headers().get("retry-after").is_some());
    assert!(set_cookie(&r, "root_invite").is_none());
    w.clock.advance_ms(61_000);
    let r = v
        .post("/get-started", &[("csrf", &csrf), ("code", CODE)])
        .await;
    assert_eq!(r.status(), 303);
    assert!(v.cookie("root_invite").is_some());
}
