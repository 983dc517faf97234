//! Access: tenants' SSH keys (`sshKeys`, `addSshKey`, `removeSshKey`) and the
//! provisioner's report (`markAllocationReady`, `markAllocationFailed`), seen by the
//! customer as `Allocation.access`.

use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::{allocation, ssh_key};

use super::ordering::Allocation;
use super::scalars::{parse_id, tenant_arg, to_id};
use crate::access;
use crate::error::ApiError;
use crate::ordering::{self, AccessEndpoint};

/// An SSH public key of the tenant.
#[derive(SimpleObject)]
pub struct SshKey {
    pub id: ID,
    pub name: String,
    /// e.g. `ssh-ed25519`.
    pub key_type: String,
    /// `<type> <base64>`, one `authorized_keys` line.
    pub public_key: String,
    pub comment: String,
    /// `SHA256:<base64>`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    pub created_at: DateTime<Utc>,
}

impl From<ssh_key::Model> for SshKey {
    fn from(k: ssh_key::Model) -> Self {
        SshKey {
            id: to_id(k.id),
            name: k.name,
            key_type: k.key_type,
            public_key: k.public_key,
            comment: k.comment,
            fingerprint: k.fingerprint,
            created_at: k.created_at,
        }
    }
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::AccessState",
    name = "AccessState"
)]
pub enum GqlAccessState {
    /// Placed; the operator's provisioner has not handed it over yet.
    Pending,
    /// Handed over: `endpoints` are where to connect.
    Ready,
    /// Provisioning failed; the allocation was released and none of it is billed.
    Failed,
}

/// Where a customer connects to an allocation.
#[derive(SimpleObject, InputObject, Clone)]
#[graphql(input_name = "AccessEndpointInput", name = "AccessEndpoint")]
pub struct GqlAccessEndpoint {
    /// What is served there, e.g. `ssh`, `https`, `jupyter`.
    pub kind: String,
    /// A host name or IP address.
    pub host: String,
    pub port: i32,
    pub username: Option<String>,
    pub description: Option<String>,
}

/// How the customer reaches an allocation, as the operator's provisioner reported it.
#[derive(SimpleObject)]
pub struct AllocationAccess {
    pub state: GqlAccessState,
    pub endpoints: Vec<GqlAccessEndpoint>,
    /// Why provisioning failed.
    pub reason: Option<String>,
    /// When the provisioner last reported.
    pub changed_at: Option<DateTime<Utc>>,
}

pub fn access_of(row: &allocation::Model) -> AllocationAccess {
    let endpoints: Vec<AccessEndpoint> = row
        .access_endpoints
        .clone()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    AllocationAccess {
        state: row.access_state.into(),
        endpoints: endpoints
            .into_iter()
            .map(|e| GqlAccessEndpoint {
                kind: e.kind,
                host: e.host,
                port: i32::from(e.port),
                username: e.username,
                description: e.description,
            })
            .collect(),
        reason: row.access_reason.clone(),
        changed_at: row.access_changed_at,
    }
}

fn endpoint_in(i: usize, e: GqlAccessEndpoint) -> Result<AccessEndpoint, ApiError> {
    let port = u16::try_from(e.port)
        .map_err(|_| ApiError::invalid(format!("endpoints[{i}]"), "port: 1 to 65535"))?;
    Ok(AccessEndpoint {
        kind: e.kind,
        host: e.host,
        port,
        username: e.username,
        description: e.description,
    })
}

async fn shown(ctx: &Context<'_>, row: allocation::Model) -> Result<Allocation> {
    let view = ordering::view_allocations(super::db(ctx)?, vec![row])
        .await?
        .pop()
        .ok_or_else(|| ApiError::not_found("allocation"))?;
    Ok(view.into())
}

#[derive(Default)]
pub struct AccessQuery;

#[Object]
impl AccessQuery {
    /// The tenant's SSH keys, oldest first (operators name the tenant).
    async fn ssh_keys(&self, ctx: &Context<'_>, tenant_id: Option<ID>) -> Result<Vec<SshKey>> {
        let keys = access::list(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
        )
        .await?;
        Ok(keys.into_iter().map(Into::into).collect())
    }
}

#[derive(Default)]
pub struct AccessMutation;

#[Object]
impl AccessMutation {
    /// Registers an OpenSSH public key (`ssh-ed25519 AAAA… comment`) for the tenant's
    /// orders to hand to the provisioner.
    async fn add_ssh_key(
        &self,
        ctx: &Context<'_>,
        name: String,
        public_key: String,
        tenant_id: Option<ID>,
    ) -> Result<SshKey> {
        let db = super::db(ctx)?;
        let actor = super::principal(ctx)?;
        let tenant = tenant_arg(tenant_id)?;
        let now = super::now(ctx)?;
        let key = access::add(db, actor, tenant, &name, &public_key, now).await?;
        Ok(key.into())
    }

    /// Removes a key: machines already handed it keep it; new ones do not get it.
    async fn remove_ssh_key(
        &self,
        ctx: &Context<'_>,
        id: ID,
        tenant_id: Option<ID>,
    ) -> Result<SshKey> {
        let id = parse_id("id", &id)?;
        let db = super::db(ctx)?;
        let actor = super::principal(ctx)?;
        let key = access::remove(db, actor, tenant_arg(tenant_id)?, id).await?;
        Ok(key.into())
    }

    /// The provisioner handed the allocation over (operators only): where the customer
    /// connects.
    async fn mark_allocation_ready(
        &self,
        ctx: &Context<'_>,
        id: ID,
        endpoints: Vec<GqlAccessEndpoint>,
    ) -> Result<Allocation> {
        let id = parse_id("id", &id)?;
        let endpoints = endpoints
            .into_iter()
            .enumerate()
            .map(|(i, e)| endpoint_in(i, e))
            .collect::<Result<Vec<_>, _>>()?;
        let row = super::ordering_service(ctx)?
            .mark_ready(super::db(ctx)?, super::principal(ctx)?, id, endpoints)
            .await?;
        shown(ctx, row).await
    }

    /// Provisioning failed (operators only): the allocation is released and none of it
    /// is billed.
    async fn mark_allocation_failed(
        &self,
        ctx: &Context<'_>,
        id: ID,
        reason: String,
    ) -> Result<Allocation> {
        let id = parse_id("id", &id)?;
        let row = super::ordering_service(ctx)?
            .mark_failed(super::db(ctx)?, super::principal(ctx)?, id, &reason)
            .await?;
        shown(ctx, row).await
    }
}
