//! The catalog and installs (§15.1, §2.6): publishing a checked [`Build`]
//! as a platform-wide `community_build_listings` row (upsert by slug),
//! installing a listing into a tenant with a config validated against the
//! listing's `config_schema`, and reading, patching and removing installs.
//! Config properties the schema marks `writeOnly: true` are secrets: they
//! are stored and handed to the sandbox, never returned.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use storage::{
    CommunityBuildInstall, CommunityBuildListing, Json, RedbStore, Scan, StorageError, Store, Ts,
    key,
};
use uuid::Uuid;

use super::format::{Build, FormatError, ToolDeclaration, secret_properties, validate_config};

/// Why a catalog operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// Bad input (400), naming the field.
    #[error("{field}: {message}")]
    Invalid {
        /// The field at fault.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// No such listing or install (404).
    #[error("{0}")]
    NotFound(String),
    /// Already there (409).
    #[error("{0}")]
    Conflict(String),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<FormatError> for CatalogError {
    fn from(e: FormatError) -> Self {
        CatalogError::Invalid {
            field: e.field,
            message: e.message,
        }
    }
}

/// A listing as the API shows it (the module source is not listed).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ListingView {
    /// Row id.
    pub id: Uuid,
    /// Catalog slug (`build.json` `name`).
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Description.
    pub description: Option<String>,
    /// Author.
    pub author: Option<String>,
    /// JSON Schema of an install's config.
    pub config_schema: Value,
    /// Tool declarations.
    pub tools: Vec<ToolDeclaration>,
    /// Last publish.
    #[schemars(with = "String")]
    pub updated_at: Ts,
}

impl ListingView {
    /// The view of a stored listing.
    pub fn of(row: &CommunityBuildListing) -> Self {
        ListingView {
            id: row.id,
            slug: row.slug.clone(),
            name: row.name.clone(),
            version: row.version.clone(),
            description: row.description.clone(),
            author: row.author.clone(),
            config_schema: row.config_schema.0.clone(),
            tools: declarations(&row.tools),
            updated_at: row.updated_at,
        }
    }
}

/// An install as the API shows it: secrets omitted, their names listed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct InstallView {
    /// Row id.
    pub id: Uuid,
    /// The listing's id.
    pub listing_id: Uuid,
    /// The listing's slug (absent when the listing was removed).
    pub listing: Option<String>,
    /// Config without its `writeOnly` properties.
    pub config: Value,
    /// `writeOnly` properties that have a value.
    pub secrets_set: Vec<String>,
    /// Offered to the agent.
    pub enabled: bool,
    /// The tools as installed (snapshot).
    pub tools: Vec<ToolDeclaration>,
    /// Installed at.
    #[schemars(with = "String")]
    pub created_at: Ts,
    /// Last change.
    #[schemars(with = "String")]
    pub updated_at: Ts,
}

/// The declarations stored in a `tools` column (rows written by this
/// module are always valid; anything else reads as no tools).
pub fn declarations(tools: &Json) -> Vec<ToolDeclaration> {
    serde_json::from_value(tools.0.clone()).unwrap_or_default()
}

fn view(row: &CommunityBuildInstall, listing: Option<&CommunityBuildListing>) -> InstallView {
    let secrets = listing
        .map(|l| secret_properties(&l.config_schema.0))
        .unwrap_or_default();
    let mut config = row.config.expose().0.clone();
    let mut secrets_set = Vec::new();
    if let Some(obj) = config.as_object_mut() {
        for s in &secrets {
            if obj.remove(s).is_some() {
                secrets_set.push(s.clone());
            }
        }
    }
    InstallView {
        id: row.id,
        listing_id: row.listing_id,
        listing: listing.map(|l| l.slug.clone()),
        config,
        secrets_set,
        enabled: row.enabled,
        tools: declarations(&row.tools),
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// What [`publish`] did.
#[derive(Clone, Debug)]
pub struct Published {
    /// The listing as stored.
    pub listing: CommunityBuildListing,
    /// `true` for a new listing, `false` for a new version of one.
    pub created: bool,
}

/// Publish `build`: a new listing, or a new version of the listing with
/// its slug (installs keep the snapshot they were installed with). The
/// one publish of `root builds publish` and the platform API.
pub async fn publish(store: &RedbStore, build: &Build, now: Ts) -> Result<Published, CatalogError> {
    let m = &build.manifest;
    let existing: Option<CommunityBuildListing> = store
        .find_unique(None, CommunityBuildListing::SLUG_KEY, key().str(&m.name))
        .await?;
    let tools = serde_json::to_value(&m.tools).map_err(|e| CatalogError::Invalid {
        field: "tools".into(),
        message: e.to_string(),
    })?;
    let row = CommunityBuildListing {
        id: existing.as_ref().map_or_else(Uuid::new_v4, |l| l.id),
        slug: m.name.clone(),
        name: m.name.clone(),
        description: m.description.clone(),
        module_source: build.module_source.clone(),
        config_schema: Json(m.config_schema.clone()),
        tools: Json(tools),
        version: m.version.clone(),
        author: m.author.clone(),
        created_at: existing.as_ref().map_or(now, |l| l.created_at),
        updated_at: now,
    };
    Ok(match existing {
        Some(_) => Published {
            listing: store.update(row).await?,
            created: false,
        },
        None => Published {
            listing: store.insert(row).await?,
            created: true,
        },
    })
}

/// Every listing, slug order.
pub async fn listings(store: &RedbStore) -> Result<Vec<ListingView>, CatalogError> {
    let mut rows: Vec<CommunityBuildListing> = store.scan(None, Scan::all()).await?;
    rows.sort_by(|a, b| a.slug.cmp(&b.slug));
    Ok(rows.iter().map(ListingView::of).collect())
}

/// A listing by slug or id.
async fn listing(
    store: &RedbStore,
    reference: &str,
) -> Result<CommunityBuildListing, CatalogError> {
    let found = match Uuid::parse_str(reference) {
        Ok(id) => store.get(None, key().uuid(id)).await?,
        Err(_) => {
            store
                .find_unique(None, CommunityBuildListing::SLUG_KEY, key().str(reference))
                .await?
        }
    };
    found.ok_or_else(|| CatalogError::NotFound(format!("community build {reference:?}: not found")))
}

/// `POST /community-builds/installs` body.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallBody {
    /// The listing's slug or id.
    pub listing: String,
    /// The config (validated against the listing's `config_schema`).
    #[serde(default = "empty_object")]
    pub config: Value,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Install a listing into `tenant` (enabled).
pub async fn install(
    store: &RedbStore,
    tenant: Uuid,
    body: InstallBody,
    now: Ts,
) -> Result<InstallView, CatalogError> {
    let listing = listing(store, body.listing.trim()).await?;
    validate_config(&listing.config_schema.0, &body.config)?;
    let row = CommunityBuildInstall {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        listing_id: listing.id,
        module_source: listing.module_source.clone(),
        tools: listing.tools.clone(),
        config: Json(body.config).into(),
        enabled: true,
        created_at: now,
        updated_at: now,
    };
    match store.insert(row).await {
        Ok(row) => Ok(view(&row, Some(&listing))),
        Err(StorageError::Conflict { .. }) => Err(CatalogError::Conflict(format!(
            "{} is already installed in this community",
            listing.slug
        ))),
        Err(e) => Err(e.into()),
    }
}

/// Every install of `tenant`, with its listing.
pub async fn installs(
    store: &RedbStore,
    tenant: Uuid,
) -> Result<Vec<(CommunityBuildInstall, Option<CommunityBuildListing>)>, CatalogError> {
    let rows: Vec<CommunityBuildInstall> = store.scan(Some(tenant), Scan::all()).await?;
    let listings = store
        .get_many::<CommunityBuildListing>(
            None,
            rows.iter().map(|r| key().uuid(r.listing_id)).collect(),
        )
        .await?;
    Ok(rows.into_iter().zip(listings).collect())
}

/// Every install of `tenant` as the API shows them.
pub async fn install_views(
    store: &RedbStore,
    tenant: Uuid,
) -> Result<Vec<InstallView>, CatalogError> {
    Ok(installs(store, tenant)
        .await?
        .iter()
        .map(|(r, l)| view(r, l.as_ref()))
        .collect())
}

async fn install_row(
    store: &RedbStore,
    tenant: Uuid,
    id: Uuid,
) -> Result<(CommunityBuildInstall, Option<CommunityBuildListing>), CatalogError> {
    let row: CommunityBuildInstall = store
        .get(Some(tenant), key().uuid(id))
        .await?
        .ok_or_else(|| CatalogError::NotFound(format!("install {id}: not found")))?;
    let listing = store.get(None, key().uuid(row.listing_id)).await?;
    Ok((row, listing))
}

/// One install.
pub async fn install_view(
    store: &RedbStore,
    tenant: Uuid,
    id: Uuid,
) -> Result<InstallView, CatalogError> {
    let (row, listing) = install_row(store, tenant, id).await?;
    Ok(view(&row, listing.as_ref()))
}

/// `PATCH /community-builds/installs/:id` body.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallPatch {
    /// Top-level merge into the config: a key replaces, `null` removes
    /// (secrets not named keep their value); the result is validated.
    #[serde(default)]
    pub config: Option<Map<String, Value>>,
    /// Offer the tools or not.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Take the listing's current version (source and tools).
    #[serde(default)]
    pub upgrade: bool,
}

/// Apply `patch` to install `id`.
pub async fn patch_install(
    store: &RedbStore,
    tenant: Uuid,
    id: Uuid,
    patch: InstallPatch,
    now: Ts,
) -> Result<InstallView, CatalogError> {
    let (mut row, listing) = install_row(store, tenant, id).await?;
    let Some(listing) = listing else {
        return Err(CatalogError::Conflict(
            "the listing of this install was removed; it can only be deleted".into(),
        ));
    };
    if let Some(changes) = patch.config {
        let mut config = row
            .config
            .expose()
            .0
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (k, v) in changes {
            if v.is_null() {
                config.remove(&k);
            } else {
                config.insert(k, v);
            }
        }
        row.config = Json(Value::Object(config)).into();
    }
    if patch.upgrade {
        row.module_source = listing.module_source.clone();
        row.tools = listing.tools.clone();
    }
    validate_config(&listing.config_schema.0, &row.config.expose().0)?;
    if let Some(enabled) = patch.enabled {
        row.enabled = enabled;
    }
    row.updated_at = now;
    let row = store.update(row).await?;
    Ok(view(&row, Some(&listing)))
}

/// Remove install `id` (its run history goes with it).
pub async fn delete_install(store: &RedbStore, tenant: Uuid, id: Uuid) -> Result<(), CatalogError> {
    if store
        .delete::<CommunityBuildInstall>(Some(tenant), key().uuid(id))
        .await?
    {
        Ok(())
    } else {
        Err(CatalogError::NotFound(format!("install {id}: not found")))
    }
}
