//! The `root` command line: `serve`, `migrate`, `seed …`, `tenant create`,
//! `tenant settings`, `tenant channel slack`, `tenant channel email`,
//! `backup`, `restore`, `tenant export`, `tenant delete`, `builds publish`,
//! `platform-key create|list|revoke`.
//!
//! Commands that touch data open the redb file themselves, so they cannot
//! run while `root serve` holds it (redb's file lock refuses, with a clear
//! message).

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use storage::{StorageError, Store, Tenant, TenantRole, TenantStore, TenantUser, key};
use uuid::Uuid;

use crate::app::{self, App};
use crate::channels::slack_setup::{SlackAppInput, SlackSetup};
use crate::config::{Config, Secret};
use crate::ops;
use crate::platform::api_keys::{self, KeyKind};
use crate::platform::clock::{Clock, SystemClock};
use crate::platform::tenancy::{self, TenantContext};

mod platform_key;

/// Root: a self-hosted, multi-tenant community assistant.
#[derive(Debug, Parser)]
#[command(name = "root", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Migrate, then serve HTTP with in-process workers (unless ROOT_RUN_WORKERS=false).
    Serve,
    /// Run the queue workers without HTTP (not at the same time as `serve`).
    Worker,
    /// Apply pending migrations and exit.
    Migrate,
    /// Mint credentials and dashboard users.
    #[command(subcommand)]
    Seed(Seed),
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(TenantCmd),
    /// Dashboard sign-in.
    #[command(subcommand)]
    Auth(AuthCmd),
    /// Write a consistent backup of the database into a new file, plus
    /// `<file>.manifest.json`. While `root serve` runs, the server takes it
    /// (over `ROOT_DATA_DIR/admin.sock`) and keeps serving.
    Backup {
        /// The backup file to create (must not exist).
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Replace the database with a verified backup (server stopped). The old
    /// file is kept as `root.redb.before-restore`; search indexes rebuild on
    /// the next start.
    Restore {
        /// The backup file (its `.manifest.json` beside it).
        file: std::path::PathBuf,
    },
    /// The community-build catalog (§15.1).
    #[command(subcommand)]
    Builds(BuildsCmd),
    /// Platform-admin API keys (`rpa_…`) for `/api/v1/platform/*`.
    #[command(subcommand)]
    PlatformKey(platform_key::PlatformKeyCmd),
    /// Benchmarks (build with --release).
    #[cfg(feature = "tooling")]
    #[command(subcommand)]
    Bench(crate::tooling::cli::BenchCmd),
    /// Retrieval quality on a golden set: hit@1/5/10 and MRR@10 per surface
    /// (§10.6). Loads the set into a fresh temporary data dir, or with
    /// `--api` into a running server through the REST API.
    #[cfg(feature = "tooling")]
    EvalRetrieval(crate::tooling::cli::EvalArgs),
    /// The community-build sandbox child (started by Root itself: one JSON
    /// request on stdin, NDJSON on stdout).
    #[command(hide = true)]
    SandboxRun,
    /// Confine this process as a sandbox child is, then report (one JSON
    /// line) what the kernel applied and whether opening each `--open`
    /// path, reading the parent's environment, a Unix socket and a fork
    /// are refused: checks a host's sandbox confinement.
    #[command(hide = true)]
    SandboxProbe {
        /// A file the confined process tries to open (repeatable).
        #[arg(long = "open")]
        open: Vec<std::path::PathBuf>,
    },
}

/// `root seed …`
#[derive(Debug, Subcommand)]
pub enum Seed {
    /// Mint an API key (printed once).
    ApiKey(SeedApiKey),
    /// Create or rotate the web test-chat access token.
    WebToken(TenantArg),
    /// Add (or change the role of) a dashboard user.
    ConfigUser(SeedConfigUser),
    /// Add a platform admin (every community as owner, the platform pages).
    PlatformAdmin {
        /// The admin's email.
        #[arg(long)]
        email: String,
    },
}

/// `root auth …`
#[derive(Debug, Subcommand)]
pub enum AuthCmd {
    /// Print a single-use dashboard sign-in link (15 minutes) for an
    /// allowlisted address (`root seed config-user`): the first-run way in
    /// when the server cannot send mail. Run it while the server is stopped.
    Link {
        /// The address to sign in.
        #[arg(long)]
        email: String,
    },
}

/// `root builds …`
#[derive(Debug, Subcommand)]
pub enum BuildsCmd {
    /// Publish a build folder (`build.json` + `index.js`) to the catalog:
    /// a new listing, or a new version of the listing with its name.
    Publish {
        /// The build's folder.
        dir: std::path::PathBuf,
    },
}

/// `--tenant <slug>`
#[derive(Debug, Args)]
pub struct TenantArg {
    /// Tenant slug.
    #[arg(long)]
    pub tenant: String,
}

/// Key environment on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KeyEnv {
    /// `rpk_live_…` bound to the live tenant.
    Live,
    /// `rpk_dev_…` bound to `<slug>--dev` (created if needed).
    Dev,
    /// Bare `rpk_…` (legacy, live).
    Legacy,
}

/// `root seed api-key`
#[derive(Debug, Args)]
pub struct SeedApiKey {
    /// Tenant slug (the live slug; `--env dev` selects its shadow).
    #[arg(long)]
    pub tenant: String,
    /// Environment of the key.
    #[arg(long, value_enum, default_value = "live")]
    pub env: KeyEnv,
    /// A label for the key.
    #[arg(long, default_value = "cli")]
    pub name: String,
}

/// `root seed config-user`
#[derive(Debug, Args)]
pub struct SeedConfigUser {
    /// Tenant slug (a live tenant: dashboard identity lives on the live row).
    #[arg(long)]
    pub tenant: String,
    /// The user's email.
    #[arg(long)]
    pub email: String,
    /// owner | admin | viewer | member
    #[arg(long, default_value = "admin")]
    pub role: String,
}

/// `root tenant …`
#[derive(Debug, Subcommand)]
pub enum TenantCmd {
    /// Create a live tenant (optionally with its dev shadow).
    Create {
        /// URL-safe slug: a-z, 0-9, '-'.
        slug: String,
        /// Display name (defaults to the slug).
        #[arg(long)]
        name: Option<String>,
        /// Also create `<slug>--dev`.
        #[arg(long)]
        with_dev: bool,
    },
    /// List tenants.
    List,
    /// Show or change a tenant's settings (access policy, persona, limits,
    /// runtime flags), validated as the dashboard validates them.
    Settings {
        /// Tenant slug.
        slug: String,
        /// `dotted.path=value` (value: JSON, or a plain string); repeatable.
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
    },
    /// Configure a tenant's channels without the dashboard.
    #[command(subcommand)]
    Channel(ChannelCmd),
    /// Export every row of a tenant and its dev shadow as JSON lines per
    /// table (secrets left out) plus knowledge pages as HTML (server stopped).
    Export {
        /// The live tenant's slug.
        slug: String,
        /// A new (or empty) directory.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Delete a tenant, its dev shadow, every row and index file of both
    /// (server stopped). Irreversible: take a backup or export first.
    Delete {
        /// The live tenant's slug.
        slug: String,
        /// Confirm the deletion.
        #[arg(long)]
        yes: bool,
    },
    /// Set the community's logo for its public pages from an image file
    /// (PNG, JPEG, GIF or WebP, ≤ 512 KiB), or `--clear` it (Root's mark).
    Logo {
        /// Tenant slug.
        slug: String,
        /// The image file.
        #[arg(required_unless_present = "clear", conflicts_with = "clear")]
        file: Option<std::path::PathBuf>,
        /// Remove the uploaded logo.
        #[arg(long)]
        clear: bool,
    },
}

/// `root tenant channel …`
#[derive(Debug, Subcommand)]
pub enum ChannelCmd {
    /// Set the tenant's Slack app credentials: the bot token is checked with
    /// Slack's auth.test (against SLACK_API_BASE_URL) before anything is
    /// stored; prints the workspace and the bot user, never the secrets.
    Slack {
        /// Tenant slug (`<slug>--dev` for the dev shadow).
        slug: String,
        /// The app's bot token (`xoxb-…`).
        #[arg(long)]
        bot_token: String,
        /// The app's signing secret.
        #[arg(long)]
        signing_secret: String,
        /// The workspace id (default: the one auth.test names).
        #[arg(long)]
        team_id: Option<String>,
    },
    /// Create or rotate the tenant's web test-chat token (§8.4); prints the
    /// chat page's URL once (any previous token stops working).
    Web {
        /// Tenant slug (`<slug>--dev` for the dev shadow).
        slug: String,
    },
    /// Configure the tenant's email channel (§8.3); prints the address (or
    /// the inbound URL) and any generated signing secret once.
    Email {
        /// Tenant slug (`<slug>--dev` for the dev shadow).
        slug: String,
        /// `platform_alias` or `byo_webhook`.
        #[arg(long, value_parser = ["platform_alias", "byo_webhook"])]
        mode: String,
        /// Platform alias (default: the slug).
        #[arg(long)]
        alias: Option<String>,
        /// BYO: where replies are POSTed.
        #[arg(long)]
        outbound_webhook_url: Option<String>,
        /// BYO: the key replies are signed with (default: kept or generated).
        #[arg(long)]
        outbound_signing_secret: Option<String>,
    },
}

/// Run a parsed command.
pub async fn run(cli: Cli, config: Config) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve => {
            let app = App::build(config).await?;
            app.run_until(app::shutdown_signal()).await
        }
        #[cfg(feature = "tooling")]
        Command::Bench(cmd) => crate::tooling::cli::run_bench(cmd).await,
        #[cfg(feature = "tooling")]
        Command::EvalRetrieval(args) => crate::tooling::cli::run_eval(args, config).await,
        Command::Worker => app::run_worker_until(config, app::shutdown_signal()).await,
        Command::Builds(BuildsCmd::Publish { dir }) => {
            let build = crate::builds::format::Build::read_dir(&dir)
                .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
            let store = app::open_store(&config).await?;
            let out = crate::builds::catalog::publish(&store, &build, SystemClock.now()).await;
            store.close().await;
            let row = out?.listing;
            println!(
                "published {} {} ({} tools) as listing {}",
                row.slug,
                row.version,
                build.manifest.tools.len(),
                row.id
            );
            Ok(())
        }
        Command::SandboxProbe { open } => {
            // As for `sandbox-run`: confinement is per thread for Landlock,
            // so it gets a thread of its own.
            let report = std::thread::spawn(move || crate::builds::sandbox::confine::probe(&open))
                .join()
                .map_err(|_| anyhow::anyhow!("the sandbox probe panicked"))?;
            println!("{report}");
            Ok(())
        }
        Command::SandboxRun => {
            // `main` runs the child before any runtime starts; reached here
            // (the library entry), it gets a plain thread of its own, since
            // its `fetch` drives a runtime of its own.
            let done = std::thread::spawn(crate::builds::sandbox::child::main)
                .join()
                .map_err(|_| anyhow::anyhow!("the sandbox child panicked"))?;
            if done {
                Ok(())
            } else {
                bail!("the sandbox result could not be written")
            }
        }
        Command::Migrate => {
            let store = app::open_store(&config).await?;
            let applied = storage::MigrationStore::applied_migrations(&store).await?;
            println!(
                "database {} is at migration {} ({} applied)",
                store.path().display(),
                applied.iter().map(|m| m.version).max().unwrap_or(0),
                applied.len()
            );
            store.close().await;
            Ok(())
        }
        Command::Seed(seed) => {
            let store = app::open_store(&config).await?;
            let out = run_seed(&store, &config, seed).await;
            store.close().await;
            out
        }
        Command::Backup { out } => run_backup(&config, &out).await,
        Command::Restore { file } => {
            let r = ops::backup::restore(&config.data_dir, &config.database_path(), &file)
                .with_context(|| format!("{} was not restored", file.display()))?;
            println!(
                "restored {} (migration {}, taken {}) into {}",
                file.display(),
                r.manifest.schema_version,
                r.manifest.created_at,
                config.database_path().display()
            );
            if let Some(p) = r.previous {
                println!("the previous database is kept as {}", p.display());
            }
            println!(
                "{} search index(es) rebuild on the next start; pending migrations run then too",
                r.indexes_marked
            );
            Ok(())
        }
        Command::Tenant(TenantCmd::Delete { slug, yes: false }) => bail!(
            "deleting {slug} removes every row and index file of it and of its dev shadow; \
             add --yes to confirm (take `root tenant export` or `root backup` first)"
        ),
        Command::PlatformKey(cmd) => {
            let store = app::open_store(&config).await?;
            let out = platform_key::run(&store, cmd).await;
            store.close().await;
            out
        }
        Command::Tenant(cmd) => {
            let store = app::open_store(&config).await?;
            let out = run_tenant(&store, &config, cmd).await;
            store.close().await;
            out
        }
        Command::Auth(AuthCmd::Link { email }) => {
            let store = app::open_store(&config).await?;
            let auth = crate::auth::DashboardAuth::new(
                store.clone(),
                std::sync::Arc::new(SystemClock),
                std::sync::Arc::new(config),
                crate::email::send::PlatformSender::default(),
            );
            let out = auth.issue_link(&email).await;
            store.close().await;
            match out? {
                Some(url) => {
                    eprintln!(
                        "sign-in link for {email} (works once, for {} minutes):",
                        crate::auth::LOGIN_LINK_TTL_MINUTES
                    );
                    println!("{url}");
                    Ok(())
                }
                None => bail!(
                    "{email:?} may not sign in: add it with `root seed config-user --tenant <slug> --email {email} --role owner`"
                ),
            }
        }
    }
}

/// Rotate the tenant's web chat token and print it (`seed web-token`: the
/// token on stdout) or the chat URL (`tenant channel web`: the URL on
/// stdout) once; the other goes to stderr.
async fn print_web_token(
    store: &storage::RedbStore,
    config: &Config,
    tenant: &Tenant,
    url_on_stdout: bool,
) -> anyhow::Result<()> {
    let token = crate::channels::web::rotate_web_token(store, &SystemClock, tenant.id).await?;
    let url = crate::channels::web::chat_url(&config.platform_base_url, &tenant.slug, &token);
    eprintln!(
        "web test-chat for {} (shown once; any previous token stops working):",
        tenant.slug
    );
    if url_on_stdout {
        println!("{url}");
    } else {
        println!("{token}");
        eprintln!("open {url}");
    }
    Ok(())
}

async fn live_tenant(store: &storage::RedbStore, slug: &str) -> anyhow::Result<Tenant> {
    let t = store.tenant_by_slug(slug).await?.with_context(|| {
        format!("no tenant with slug {slug:?} (create it with `root tenant create {slug}`)")
    })?;
    if t.live_tenant_id.is_some() {
        bail!(
            "{slug} is a dev shadow; use the live slug (dashboard identity lives on the live row)"
        );
    }
    Ok(t)
}

async fn run_seed(store: &storage::RedbStore, config: &Config, seed: Seed) -> anyhow::Result<()> {
    match seed {
        Seed::ApiKey(a) => {
            let kind = match a.env {
                KeyEnv::Live => KeyKind::Live,
                KeyEnv::Dev => KeyKind::Dev,
                KeyEnv::Legacy => KeyKind::Legacy,
            };
            let (tenant, minted) = api_keys::mint_for_slug(store, &a.tenant, &a.name, kind).await?;
            eprintln!(
                "minted {} key {:?} for tenant {} ({}); it is shown once:",
                minted.row.environment, minted.row.name, tenant.slug, tenant.id
            );
            println!("{}", minted.raw);
            Ok(())
        }
        Seed::WebToken(t) => {
            let tenant = store
                .tenant_by_slug(&t.tenant)
                .await?
                .with_context(|| format!("no tenant with slug {:?}", t.tenant))?;
            print_web_token(store, config, &tenant, false).await
        }
        Seed::PlatformAdmin { email } => {
            let email = crate::auth::normalize_email(&email)
                .with_context(|| format!("--email {email:?} is not an email address"))?;
            let existing: Option<storage::PlatformAdmin> = store
                .find_unique(None, storage::PlatformAdmin::EMAIL_KEY, key().str(&email))
                .await?;
            if existing.is_none() {
                store
                    .insert(storage::PlatformAdmin {
                        id: Uuid::new_v4(),
                        email: email.clone(),
                        created_at: SystemClock.now(),
                    })
                    .await?;
            }
            println!("{email} is a platform admin");
            Ok(())
        }
        Seed::ConfigUser(u) => {
            let tenant = live_tenant(store, &u.tenant).await?;
            let role: TenantRole = u
                .role
                .parse()
                .map_err(|e: StorageError| anyhow::anyhow!("--role: {e}"))?;
            let email = u.email.trim().to_string();
            if !email.contains('@') || email.contains(char::is_whitespace) {
                bail!("--email {email:?} is not an email address");
            }
            let existing: Option<TenantUser> = store
                .find_unique(
                    Some(tenant.id),
                    TenantUser::EMAIL_KEY,
                    key().str(&email.to_lowercase()),
                )
                .await?;
            match existing {
                Some(mut user) => {
                    user.role = role;
                    store.update(user).await?;
                    println!("updated {email}: role {role} on {}", tenant.slug);
                }
                None => {
                    store
                        .insert(TenantUser {
                            id: Uuid::new_v4(),
                            tenant_id: tenant.id,
                            email: email.clone(),
                            role,
                            created_at: SystemClock.now(),
                        })
                        .await?;
                    println!("added {email} as {role} of {}", tenant.slug);
                }
            }
            Ok(())
        }
    }
}

/// `root backup`: copy the file directly, or through the server holding it.
async fn run_backup(config: &Config, out: &std::path::Path) -> anyhow::Result<()> {
    let out = std::path::absolute(out).with_context(|| format!("{}", out.display()))?;
    let db = config.database_path();
    let held = |e: &anyhow::Error| {
        e.chain().any(|c| {
            matches!(
                c.downcast_ref::<StorageError>(),
                Some(StorageError::AlreadyOpen { .. })
            )
        })
    };
    let direct = {
        let (db, out) = (db.clone(), out.clone());
        tokio::task::spawn_blocking(move || ops::backup::backup_file(&db, &out, SystemClock.now()))
            .await?
    };
    let (manifest, via) = match direct {
        Ok(m) => (m, "directly (no server holds it)"),
        Err(e) if held(&e) => (
            ops::admin::request_backup(&config.data_dir, &out).await?,
            "by the running server",
        ),
        Err(e) => return Err(e.context(format!("backup of {} failed", db.display()))),
    };
    println!(
        "backup of {} written {via}: {} ({} bytes, migration {}, sha256 {})",
        db.display(),
        out.display(),
        manifest.bytes,
        manifest.schema_version,
        manifest.sha256
    );
    println!("manifest: {}", ops::backup::manifest_path(&out).display());
    Ok(())
}

async fn run_tenant(
    store: &storage::RedbStore,
    config: &Config,
    cmd: TenantCmd,
) -> anyhow::Result<()> {
    match cmd {
        TenantCmd::Export { slug, out } => {
            let summary = ops::tenant::export_tenant(store, &slug, &out).await?;
            for t in &summary.tenants {
                println!(
                    "exported {} ({}): {} rows in {} tables, {} pages",
                    t.slug,
                    t.id,
                    t.tables.values().sum::<u64>(),
                    t.tables.len(),
                    t.pages
                );
            }
            println!(
                "into {} (secret columns left out; see export.json)",
                out.display()
            );
            Ok(())
        }
        TenantCmd::Delete { slug, .. } => {
            let done = ops::tenant::delete_tenant(store, &config.data_dir, &slug).await?;
            for (s, id, rows) in &done.tenants {
                println!("deleted tenant {s} ({id}) and its {rows} rows");
            }
            println!("{} index directories removed", done.index_dirs.len());
            println!("{} queued jobs removed", done.jobs);
            Ok(())
        }
        TenantCmd::Channel(ChannelCmd::Slack {
            slug,
            bot_token,
            signing_secret,
            team_id,
        }) => {
            let tenant = store
                .tenant_by_slug(&slug)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no tenant with slug {slug:?}"))?;
            let clock: std::sync::Arc<dyn Clock> = std::sync::Arc::new(SystemClock);
            let queues = crate::queue::Queues::new(store.clone(), clock.clone());
            let setup = SlackSetup::new(store.clone(), queues, clock, config)?;
            let ctx = TenantContext {
                tenant: std::sync::Arc::new(tenant),
            };
            let input = SlackAppInput {
                bot_token: Secret::new(bot_token),
                signing_secret: Secret::new(signing_secret),
                team_id,
            };
            let done = tenancy::scope(ctx, setup.set_credentials(input))
                .await
                .map_err(|e| anyhow::anyhow!("slack credentials for {slug} not set: {e}"))?;
            println!(
                "slack credentials {} for {slug}: team {}, bot user {}",
                if done.created { "set" } else { "replaced" },
                done.team_id,
                done.bot_user_id
            );
            if done.join_sweep_queued {
                println!(
                    "a channel join sweep is queued; it runs with `root serve` or `root worker`"
                );
            }
            Ok(())
        }
        TenantCmd::Logo { slug, file, clear } => {
            use crate::platform::branding::{clear_logo, set_logo};
            let tenant = store
                .tenant_by_slug(&slug)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no tenant with slug {slug:?}"))?;
            match file {
                Some(path) if !clear => {
                    let bytes = std::fs::read(&path)
                        .with_context(|| format!("cannot read {}", path.display()))?;
                    let size = bytes.len();
                    let kind = set_logo(store, &SystemClock, tenant.id, bytes)
                        .await?
                        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                    println!("logo set for {slug}: {kind}, {size} bytes");
                }
                _ => {
                    let removed = clear_logo(store, tenant.id).await?;
                    println!(
                        "{} for {slug}: public pages show Root's mark",
                        if removed {
                            "logo removed"
                        } else {
                            "no logo was set"
                        }
                    );
                }
            }
            println!(
                "served at {}/assets/{slug}/logo",
                config.platform_base_url.trim_end_matches('/')
            );
            Ok(())
        }
        TenantCmd::Channel(ChannelCmd::Web { slug }) => {
            let tenant = store.tenant_by_slug(&slug).await?.with_context(|| {
                format!("no tenant with slug {slug:?} (create it with `root tenant create {slug}`)")
            })?;
            print_web_token(store, config, &tenant, true).await
        }
        TenantCmd::Channel(ChannelCmd::Email {
            slug,
            mode,
            alias,
            outbound_webhook_url,
            outbound_signing_secret,
        }) => {
            use crate::channels::email::directory::EmailMode;
            use crate::channels::email::setup::{EmailChannelInput, configure};
            let tenant = store
                .tenant_by_slug(&slug)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no tenant with slug {slug:?}"))?;
            let mode = match mode.as_str() {
                "byo_webhook" => EmailMode::ByoWebhook,
                _ => EmailMode::PlatformAlias,
            };
            let input = EmailChannelInput {
                mode,
                alias,
                outbound_webhook_url,
                outbound_signing_secret: outbound_signing_secret.map(Secret::new),
            };
            let done = configure(store, config, &SystemClock, None, &tenant, input)
                .await
                .map_err(|e| anyhow::anyhow!("email channel for {slug} not set: {e}"))?;
            println!(
                "email channel {} for {slug} ({})",
                if done.created { "set" } else { "replaced" },
                match done.mode {
                    EmailMode::PlatformAlias => "platform_alias",
                    EmailMode::ByoWebhook => "byo_webhook",
                }
            );
            match (&done.address, done.mode) {
                (Some(a), _) => println!("members write to {a}"),
                (None, EmailMode::PlatformAlias) => {
                    println!("set PLATFORM_EMAIL_DOMAIN to give this alias an address")
                }
                _ => {}
            }
            if let Some(url) = &done.inbound_url {
                println!(
                    "forward inbound mail to {} (shown once; keep it secret)",
                    url.expose()
                );
            }
            if let Some(s) = &done.generated_signing_secret {
                println!(
                    "replies are signed with {} (shown once; verify x-root-signature with it)",
                    s.expose()
                );
            }
            Ok(())
        }
        TenantCmd::Create {
            slug,
            name,
            with_dev,
        } => {
            if let Some(problem) = tenancy::slug_problem(&slug) {
                bail!("{problem} (use --with-dev for a dev shadow)");
            }
            let display = name.unwrap_or_else(|| slug.clone());
            let tenant = match store
                .create_tenant(Tenant::new(slug.clone(), display))
                .await
            {
                Ok(t) => t,
                Err(StorageError::Conflict { .. }) => {
                    bail!("a tenant with slug {slug:?} already exists")
                }
                Err(e) => return Err(e.into()),
            };
            println!("created tenant {} ({})", tenant.slug, tenant.id);
            if with_dev {
                let shadow = store.ensure_dev_shadow(tenant.id).await?;
                println!("created dev shadow {} ({})", shadow.slug, shadow.id);
            }
            Ok(())
        }
        TenantCmd::List => {
            for t in store.list_tenants().await? {
                println!("{}\t{}\t{}\t{}", t.slug, t.id, t.environment, t.status);
            }
            Ok(())
        }
        TenantCmd::Settings { slug, set } => {
            let mut tenant = store
                .tenant_by_slug(&slug)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no tenant with slug {slug:?}"))?;
            let mut settings = tenant.settings.0.clone();
            for edit in &set {
                let (path, raw) = edit
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("--set expects PATH=VALUE, got {edit:?}"))?;
                crate::platform::settings::apply_setting(
                    &mut settings,
                    path.trim(),
                    &crate::platform::settings::parse_value(raw.trim()),
                )
                .map_err(|e| anyhow::anyhow!(e))?;
            }
            if !set.is_empty() {
                tenant.settings = storage::Json(settings);
                tenant.updated_at = SystemClock.now();
                store.update(tenant.clone()).await?;
            }
            println!("{}", serde_json::to_string_pretty(&tenant.settings.0)?);
            Ok(())
        }
    }
}
