//! Knowledge sources and sync (spec §11): where synced KB pages come from
//! and how a sync run turns a source into pages. [`fetch`] is step 1 of a
//! run — getting the documents out of a `web_page`, `api_pull` or `webhook`
//! source through the guarded outbound client — kept apart from
//! normalisation and storage so the network edge (SSRF, size and time
//! bounds, signing) can be reviewed and tested on its own.

pub mod fetch;
