//! The tier names the platform itself defines (§9, §7.5): the reserved
//! tiers and the `__admin__` marker. Everything else is a tenant's manifest
//! vocabulary. Kept at the bottom of the module graph so settings, identity,
//! manifests and gating all share one definition.

/// The tier name that admits every admin.
pub const ADMIN_TIER: &str = "__admin__";
/// Reserved tier: identity could not be resolved.
pub const TIER_UNRESOLVED: &str = "unresolved";
/// Reserved tier: the public surface.
pub const TIER_PUBLIC: &str = "public";
/// Reserved tier: the public email surface.
pub const TIER_PUBLIC_EMAIL: &str = "public_email";
/// Tiers the platform hardcodes (§9); everything else is manifest vocabulary.
pub const RESERVED_TIERS: [&str; 3] = [TIER_UNRESOLVED, TIER_PUBLIC, TIER_PUBLIC_EMAIL];

/// The canonical spelling of a reserved name — one of [`RESERVED_TIERS`] or
/// the [`ADMIN_TIER`] marker — compared without case and surrounding
/// whitespace (`"Unresolved "` is `unresolved`); `None` for any other name.
pub fn canonical_reserved_tier(tier: &str) -> Option<&'static str> {
    let t = tier.trim();
    RESERVED_TIERS
        .into_iter()
        .chain([ADMIN_TIER])
        .find(|r| r.eq_ignore_ascii_case(t))
}

/// Is `tier` reserved — a platform tier (`unresolved`, `public`,
/// `public_email`) or the `__admin__` marker, which nobody can hold as a
/// tier? Case and surrounding whitespace are ignored.
pub fn is_reserved_tier(tier: &str) -> bool {
    canonical_reserved_tier(tier).is_some()
}
