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

/// Longest tier name accepted (manifest vocabulary is short words).
pub const MAX_TIER_NAME_CHARS: usize = 128;

/// A tier a member holds (§9, §5.2): a reserved platform tier, or a name
/// from the tenant's vocabulary (manifest `access_tiers`, `default_tier`).
/// The `__admin__` marker is not representable: it only appears in a
/// tool's `tiers` list, never as anyone's tier.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// `unresolved`: identity could not be resolved.
    Unresolved,
    /// `public`: the public surface.
    Public,
    /// `public_email`: an email sender nobody vouches for.
    PublicEmail,
    /// A tenant vocabulary name (`member`, `mentor`, `partner`, …).
    Named(TierName),
}

/// A validated tenant tier name: trimmed, non-empty, at most
/// [`MAX_TIER_NAME_CHARS`], no control characters, and neither a reserved
/// tier nor the `__admin__` marker in any case.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TierName(Box<str>);

impl TierName {
    /// The name as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a string is not a tier.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TierError {
    /// Empty after trimming.
    #[error("a tier name must not be empty")]
    Empty,
    /// The admins' marker.
    #[error("{ADMIN_TIER} is the admins' marker in tool tiers, not a tier")]
    AdminMarker,
    /// Too long or with control characters.
    #[error("a tier name is at most {MAX_TIER_NAME_CHARS} characters without control characters")]
    Malformed,
}

impl Tier {
    /// The `member` tier (the default `default_tier`).
    pub fn member() -> Tier {
        Tier::Named(TierName("member".into()))
    }

    /// Parse a tier: reserved names in any case and padding are the
    /// reserved variants; `__admin__` and malformed names are errors.
    pub fn parse(s: &str) -> Result<Tier, TierError> {
        match canonical_reserved_tier(s) {
            Some(TIER_UNRESOLVED) => return Ok(Tier::Unresolved),
            Some(TIER_PUBLIC) => return Ok(Tier::Public),
            Some(TIER_PUBLIC_EMAIL) => return Ok(Tier::PublicEmail),
            Some(_) => return Err(TierError::AdminMarker),
            None => {}
        }
        let t = s.trim();
        if t.is_empty() {
            return Err(TierError::Empty);
        }
        if t.chars().count() > MAX_TIER_NAME_CHARS || t.chars().any(char::is_control) {
            return Err(TierError::Malformed);
        }
        Ok(Tier::Named(TierName(t.into())))
    }

    /// A tier from stored or remote data, failing closed: anything that is
    /// not a tier (the `__admin__` marker, an empty or malformed name)
    /// is `unresolved`.
    pub fn parse_or_unresolved(s: &str) -> Tier {
        Tier::parse(s).unwrap_or(Tier::Unresolved)
    }

    /// `manifestTierFor` (§5.2): the manifest tier of an access level —
    /// `slack` / `email` / `api` → `member`, `email_mentor` → `mentor`,
    /// `unresolved_slack_user` → `unresolved`, `public_email` → `public`,
    /// anything else itself.
    pub fn manifest_tier(&self) -> Tier {
        match self {
            Tier::Unresolved => Tier::Unresolved,
            Tier::Public | Tier::PublicEmail => Tier::Public,
            Tier::Named(n) => match n.as_str() {
                "slack" | "email" | "api" | "member" => Tier::member(),
                "email_mentor" | "mentor" => Tier::Named(TierName("mentor".into())),
                "unresolved_slack_user" => Tier::Unresolved,
                _ => self.clone(),
            },
        }
    }

    /// The spec's spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Tier::Unresolved => TIER_UNRESOLVED,
            Tier::Public => TIER_PUBLIC,
            Tier::PublicEmail => TIER_PUBLIC_EMAIL,
            Tier::Named(n) => n.as_str(),
        }
    }

    /// One of the platform's reserved tiers?
    pub fn is_reserved(&self) -> bool {
        !matches!(self, Tier::Named(_))
    }
}

/// Fails closed: a tier nobody set is `unresolved`.
impl Default for Tier {
    fn default() -> Tier {
        Tier::Unresolved
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Tier {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Tier {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for Tier {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Tier {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Tier, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Tier::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names_parse_to_their_variants_in_any_case() {
        assert_eq!(Tier::parse(" Unresolved "), Ok(Tier::Unresolved));
        assert_eq!(Tier::parse("PUBLIC"), Ok(Tier::Public));
        assert_eq!(Tier::parse("public_email"), Ok(Tier::PublicEmail));
        assert_eq!(Tier::parse(" partner ").unwrap().as_str(), "partner");
        assert!(!Tier::parse("partner").unwrap().is_reserved());
        assert!(Tier::Public.is_reserved());
    }

    #[test]
    fn the_admin_marker_and_malformed_names_are_not_tiers() {
        assert_eq!(Tier::parse("__admin__"), Err(TierError::AdminMarker));
        assert_eq!(Tier::parse(" __ADMIN__"), Err(TierError::AdminMarker));
        assert_eq!(Tier::parse("  "), Err(TierError::Empty));
        assert_eq!(Tier::parse("a\u{0}b"), Err(TierError::Malformed));
        let long = "x".repeat(MAX_TIER_NAME_CHARS + 1);
        assert_eq!(Tier::parse(&long), Err(TierError::Malformed));
        assert!(Tier::parse(&"x".repeat(MAX_TIER_NAME_CHARS)).is_ok());
        assert_eq!(Tier::parse_or_unresolved("__admin__"), Tier::Unresolved);
        assert!(serde_json::from_str::<Tier>("\"__admin__\"").is_err());
        assert_eq!(
            serde_json::to_string(&Tier::PublicEmail).unwrap(),
            "\"public_email\""
        );
    }

    #[test]
    fn manifest_tier_maps_access_levels_as_spec() {
        for (level, tier) in [
            ("slack", "member"),
            ("email", "member"),
            ("api", "member"),
            ("member", "member"),
            ("email_mentor", "mentor"),
            ("mentor", "mentor"),
            ("unresolved_slack_user", "unresolved"),
            ("unresolved", "unresolved"),
            ("public_email", "public"),
            ("public", "public"),
            ("partner", "partner"),
        ] {
            assert_eq!(Tier::parse(level).unwrap().manifest_tier(), tier, "{level}");
        }
    }
}
