//! The tool surface (§5): the catalog of platform tools ([`catalog`]) and
//! tier gating with the dispatch gate ([`gating`]): one pure function
//! computes the allowed set with a reason per tool; the model is offered
//! only that set and every call is re-checked against it. A channel may add
//! an authorization hook for mutation tools ([`authorize`]). Installed
//! community builds join the surface last and run sandboxed
//! ([`community_build`]).

pub mod authorize;
pub mod catalog;
pub mod community_build;
pub mod core;
pub mod gating;
pub mod integration;
pub mod permalinks;
pub mod spec;
pub mod turn;

pub use authorize::{GateDecision, ToolGate};
pub use catalog::{CATALOG, CatalogTool, ToolChannel, ToolGroup};
pub use community_build::{CommunityBuilds, InstalledBuilds};
pub use gating::{
    AllowedTool, BuildToolOffer, GateInput, GateRefusal, IntegrationToolOffer, ShadowedTool,
    Surface, TierDeclaration, ToolSource, ToolSurface, allowed_tools, manifest_tier_for,
};
pub use spec::{
    CoreTool, Delivery, ToolEvent, ToolServices, TurnContext, TurnPrincipal, TypedTool,
    params_schema, parse_args,
};
pub use turn::{CoreTools, IntegrationInvoker, TurnTools};
