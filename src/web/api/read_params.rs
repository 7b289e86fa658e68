//! Query-string parsing shared by the read routes (conversations,
//! analytics, interventions, mentions): every bad parameter — unknown,
//! malformed or out of range — is a 400 `invalid_field` naming it.

use std::str::FromStr;
use std::sync::Arc;

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use storage::{Principal, RedbStore, Tenant};

use super::conventions::page_limit;
use crate::insights::{self, InsightError};
use crate::platform::tenancy;
use crate::web::error::ApiError;

impl From<InsightError> for ApiError {
    fn from(e: InsightError) -> Self {
        match e {
            InsightError::Invalid { field, message } => ApiError::field(field, message),
            InsightError::NotFound(m) => ApiError::NotFound(m),
            InsightError::Conflict(m) => ApiError::StateConflict(m),
            InsightError::Storage(s) => s.into(),
        }
    }
}

/// The query struct, or a 400 naming the unknown or malformed parameter.
pub(crate) fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(v)| v).map_err(|e| {
        let text = e.body_text();
        match text.split('`').nth(1) {
            Some(field) if text.contains("unknown field") => {
                ApiError::field(field, "is not a parameter of this route")
            }
            Some(field) if text.contains("duplicate field") => {
                ApiError::field(field, "is given more than once")
            }
            _ => ApiError::BadRequest(text),
        }
    })
}

/// A page size from the raw `limit` parameter.
pub(crate) fn limit(raw: Option<&str>, default: usize, max: usize) -> Result<usize, ApiError> {
    let n = raw
        .map(|r| {
            r.trim().parse::<usize>().map_err(|_| {
                ApiError::field("limit", format!("must be a whole number (got {r:?})"))
            })
        })
        .transpose()?;
    page_limit("limit", n, default, max)
}

/// One of a CHECK enum's values (`channel=slack`), named `field` when wrong.
pub(crate) fn one_of<E: FromStr<Err = storage::StorageError>>(
    field: &str,
    raw: &str,
) -> Result<E, ApiError> {
    raw.trim().parse::<E>().map_err(|e| match e {
        storage::StorageError::Check { message, .. } => ApiError::field(field, message),
        other => ApiError::field(field, other.to_string()),
    })
}

/// The request's tenant row.
pub(crate) fn tenant() -> Result<Arc<Tenant>, ApiError> {
    tenancy::current()
        .map(|c| c.tenant)
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("no tenant context")))
}

/// The tenant's principal `principal_ref` when given (unknown: 404 naming it).
pub(crate) async fn principal(
    store: &RedbStore,
    tenant: &Tenant,
    principal_ref: Option<&str>,
) -> Result<Option<Principal>, ApiError> {
    match principal_ref.map(str::trim) {
        None => Ok(None),
        Some("") => Err(ApiError::field("principal_ref", "must not be blank")),
        Some(r) => Ok(Some(insights::principal_by_ref(store, tenant.id, r).await?)),
    }
}

#[cfg(test)]
mod tests {
    use schemars::schema_for;
    use serde_json::json;

    use super::super::*;

    /// The values of enum `name` in `schema`'s definitions.
    fn consts(schema: &serde_json::Value, name: &str) -> Vec<String> {
        schema["$defs"][name]["oneOf"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} in {schema}"))
            .iter()
            .map(|v| v["const"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn read_types_document_their_enumerated_parameters() {
        let analytics = schema_for!(AnalyticsParams).to_value();
        assert_eq!(consts(&analytics, "GroupBy"), ["day", "week", "month"]);
        assert_eq!(analytics["additionalProperties"], json!(false));
        let leaderboard = schema_for!(LeaderboardQuery).to_value();
        assert_eq!(
            consts(&leaderboard, "TierFilter"),
            ["member", "mentor", "all"]
        );
        for schema in [
            schema_for!(ConversationList).to_value(),
            schema_for!(Analytics).to_value(),
            schema_for!(InterventionList).to_value(),
            schema_for!(Leaderboard).to_value(),
            schema_for!(PrincipalMentionCounts).to_value(),
            schema_for!(MentionDetails).to_value(),
        ] {
            assert_eq!(schema["type"], json!("object"), "{schema}");
        }
    }
}
