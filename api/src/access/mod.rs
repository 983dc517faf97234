//! Access material: the SSH public keys a tenant registers so the operator's provisioner
//! can let its people onto the machines of their orders. A key is checked as an OpenSSH
//! public key ([`public_key`]) and shown with its fingerprint; a tenant has at most
//! [`MAX_KEYS`], each fingerprint once. Admins and members add and remove keys (billing
//! keys do not); operators do it for a tenant they name.
//!
//! An order names the keys it hands over (`sshKeyIds`; without it, every key the tenant
//! has then). The ids are kept on the order, and `allocation.placed` carries the keys
//! themselves, so a key removed later is no longer handed to new machines.

pub mod public_key;
pub(crate) mod store;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{order, ssh_key};
use neocloud_schema::ids::{SshKeyId, TenantId};
use neocloud_schema::vocabulary::Role;
use sea_orm::{ConnectionTrait, DatabaseConnection};
use serde_json::{Value, json};

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

pub const MAX_KEYS: u64 = 50;
pub const MAX_NAME_CHARS: usize = 64;
/// Most keys one order may name.
pub const MAX_KEYS_PER_ORDER: usize = 10;

/// The tenant whose keys a change is about; billing keys may not change them.
fn managing_tenant(actor: &Principal, asked: Option<TenantId>) -> ApiResult<TenantId> {
    let tenant = actor.acting_tenant(asked)?;
    if actor.role == Role::TenantBilling {
        return Err(ApiError::forbidden(
            "SSH keys are managed by admins and members",
        ));
    }
    Ok(tenant)
}

/// `addSshKey`.
pub async fn add(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    name: &str,
    line: &str,
    now: DateTime<Utc>,
) -> ApiResult<ssh_key::Model> {
    let tenant = managing_tenant(actor, asked)?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::invalid(
            "name",
            format!("1 to {MAX_NAME_CHARS} characters"),
        ));
    }
    let key = public_key::parse(line).map_err(|why| ApiError::invalid("publicKey", why))?;
    let txn = crate::db::begin_write(db).await?;
    if store::find_by_fingerprint(&txn, tenant, &key.fingerprint)
        .await?
        .is_some()
    {
        return Err(ApiError::AlreadyExists {
            what: format!("an SSH key with fingerprint {}", key.fingerprint),
        });
    }
    if store::count(&txn, tenant).await? >= MAX_KEYS {
        return Err(ApiError::QuotaExceeded {
            message: format!("a tenant may have at most {MAX_KEYS} SSH keys"),
        });
    }
    let row = store::insert(
        &txn,
        ssh_key::Model {
            id: SshKeyId::new(),
            tenant_id: tenant,
            name: name.to_owned(),
            key_type: key.key_type,
            public_key: key.normalized,
            comment: key.comment,
            fingerprint: key.fingerprint,
            created_at: now,
        },
    )
    .await?;
    audit::record(
        &txn,
        actor,
        entry(&row, "ssh_key.add", None, Some(summary(&row))),
    )
    .await?;
    txn.commit().await?;
    Ok(row)
}

/// `removeSshKey`: machines already handed the key keep it; new ones do not get it.
pub async fn remove(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    id: SshKeyId,
) -> ApiResult<ssh_key::Model> {
    let tenant = managing_tenant(actor, asked)?;
    let txn = crate::db::begin_write(db).await?;
    let row = store::find_many(&txn, tenant, &[id])
        .await?
        .pop()
        .ok_or_else(|| ApiError::not_found("SSH key"))?;
    store::delete(&txn, tenant, id).await?;
    audit::record(
        &txn,
        actor,
        entry(&row, "ssh_key.remove", Some(summary(&row)), None),
    )
    .await?;
    txn.commit().await?;
    Ok(row)
}

/// `sshKeys`.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
) -> ApiResult<Vec<ssh_key::Model>> {
    let tenant = actor.acting_tenant(asked)?;
    Ok(store::of_tenant(db, tenant).await?)
}

/// The keys an order hands over: those it names, each the tenant's, or with none named
/// every key the tenant has.
pub(crate) async fn for_order<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    named: Option<&[SshKeyId]>,
) -> ApiResult<Vec<ssh_key::Model>> {
    let Some(named) = named else {
        return Ok(store::of_tenant(conn, tenant).await?);
    };
    let found = store::find_many(conn, tenant, named).await?;
    if let Some(missing) = named.iter().find(|id| !found.iter().any(|k| k.id == **id)) {
        return Err(ApiError::invalid(
            "sshKeyIds",
            format!("no SSH key {missing} in this tenant"),
        ));
    }
    Ok(found)
}

/// The ids of the keys an order hands over.
pub fn key_ids_of(order: &order::Model) -> Vec<SshKeyId> {
    order
        .ssh_key_ids
        .clone()
        .and_then(|ids| serde_json::from_value(ids).ok())
        .unwrap_or_default()
}

/// The keys among `ids` that `tenant` still has.
pub async fn keys<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    ids: &[SshKeyId],
) -> ApiResult<Vec<ssh_key::Model>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(store::find_many(conn, tenant, ids).await?)
}

/// Keys as events carry them: `[{id, name, fingerprint, public_key}]`.
pub(crate) fn material(keys: &[ssh_key::Model]) -> Value {
    keys.iter()
        .map(|k| {
            json!({"id": k.id, "name": k.name, "fingerprint": k.fingerprint, "public_key": k.public_key})
        })
        .collect()
}

fn summary(row: &ssh_key::Model) -> Value {
    json!({"name": row.name, "fingerprint": row.fingerprint, "key_type": row.key_type})
}

fn entry(
    row: &ssh_key::Model,
    action: &'static str,
    before: Option<Value>,
    after: Option<Value>,
) -> audit::Entry {
    audit::Entry {
        tenant_id: Some(row.tenant_id),
        action,
        object_type: "ssh_key",
        object_id: row.id.to_string(),
        before,
        after,
    }
}
