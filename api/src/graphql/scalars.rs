//! GraphQL mirrors of the shared vocabularies (same names, SCREAMING_CASE on the wire),
//! and helpers to turn ids and pages into GraphQL values.

use async_graphql::connection::{Connection, Edge};
use async_graphql::{Enum, ID, OutputType};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::pagination::PageOf;

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "neocloud_schema::vocabulary::Role", name = "Role")]
pub enum GqlRole {
    Operator,
    TenantAdmin,
    TenantMember,
    /// Reads its tenant's orders, usage, invoices and budgets; every mutation is refused.
    TenantBilling,
    Agent,
    /// Reports usage events (`POST /v1/events`) and nothing else: for its tenant, or
    /// without one for any tenant an event names.
    UsageReporter,
    /// A hardware provider: reads its own provider and nodes (who uses a node only as an
    /// allocation id), and nothing of any tenant.
    Provider,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::TenantStatus",
    name = "TenantStatus"
)]
pub enum GqlTenantStatus {
    Active,
    Suspended,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "neocloud_schema::vocabulary::NodeState", name = "NodeState")]
pub enum GqlNodeState {
    Active,
    Draining,
    Down,
    /// Out of the fleet for good (`retireNode`).
    Retired,
}

/// Whether a node's hardware is what was registered; only `TRUSTED` and `VERIFIED` nodes
/// take new allocations.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::NodeVerification",
    name = "NodeVerification"
)]
pub enum GqlNodeVerification {
    /// Registered by an operator: taken as registered.
    Trusted,
    /// Registered by a provider; its agent has not reported its hardware yet.
    Pending,
    /// Its agent reported the hardware registered.
    Verified,
    /// Its agent reported other hardware (`verificationReason`).
    Mismatch,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "neocloud_schema::vocabulary::GpuHealth", name = "GpuHealth")]
pub enum GqlGpuHealth {
    Ok,
    Degraded,
    Failed,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "neocloud_schema::vocabulary::SkuForm", name = "SkuForm")]
pub enum GqlSkuForm {
    WholeGpu,
    Mig,
    Fractional,
    WholeNode,
    /// A quantity meters count from usage events, priced per unit of its own; never
    /// ordered.
    Metered,
    /// Storage volumes of one class in one region, priced per GB-hour provisioned;
    /// created with `createVolume`, never ordered.
    Volume,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::StorageClass",
    name = "StorageClass"
)]
pub enum GqlStorageClass {
    /// A block device attached to instances (Cinder, Ceph RBD).
    Block,
    /// An object store bucket (Swift, S3), provisioned with a capacity.
    Object,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::ServiceCategory",
    name = "ServiceCategory"
)]
pub enum GqlServiceCategory {
    Compute,
    Storage,
    Networking,
    AiAndMachineLearning,
    Other,
}

/// Parses a GraphQL `ID` argument as a UUID, naming the argument when it is not one.
pub fn parse_id<T: From<Uuid>>(field: &str, id: &ID) -> ApiResult<T> {
    Uuid::parse_str(id.as_str())
        .map(T::from)
        .map_err(|_| ApiError::invalid(field, "not an id from this API"))
}

/// The optional `tenantId` argument by which operators name a tenant.
pub fn tenant_arg(id: Option<ID>) -> ApiResult<Option<neocloud_schema::ids::TenantId>> {
    id.map(|id| parse_id("tenantId", &id)).transpose()
}

pub fn provider_arg(id: Option<ID>) -> ApiResult<Option<neocloud_schema::ids::ProviderId>> {
    id.map(|id| parse_id("providerId", &id)).transpose()
}

pub fn to_id(id: impl Into<Uuid>) -> ID {
    let id: Uuid = id.into();
    ID(id.to_string())
}

/// Turns a page of rows into a Relay connection whose cursors are row ids.
pub fn connection<M, N: OutputType>(
    page: PageOf<M>,
    id_of: impl Fn(&M) -> Uuid,
    node: impl Fn(M) -> N,
) -> Connection<String, N> {
    let mut conn = Connection::new(page.has_previous, page.has_next);
    conn.edges.extend(
        page.items
            .into_iter()
            .map(|m| Edge::new(id_of(&m).to_string(), node(m))),
    );
    conn
}
