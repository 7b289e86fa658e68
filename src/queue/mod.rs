//! Background jobs (§13) on the durable queue of the storage crate: the
//! queue table as data (`registry`), the worker runtime (`runtime`), rate
//! limits (`crate::platform::rate`), repeatables (`scheduler`), per-tenant
//! fan-out of a tick (`fan_out`) and queue metrics (`metrics`).

pub mod fan_out;
pub mod job;
pub mod metrics;
pub mod registry;
pub mod runtime;
pub mod scheduler;

pub use runtime::{
    Enqueue, HandlerResult, Heartbeat, JobContext, JobError, JobHandler, Outcome, Queues,
    WorkerConfig, Workers,
};
