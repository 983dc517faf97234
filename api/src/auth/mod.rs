//! Who is calling: API keys (random, shown once, stored as a SHA-256 hash, compared in
//! constant time, revocable) and the [`Principal`] a valid key resolves to.
//!
//! Key management (create, list, revoke) lives here too; what each role may do with keys
//! is decided by `Role::may_manage`.

pub(crate) mod agent_tokens;
pub mod keys;
pub mod nats_users;
pub mod oidc;
mod principal;
pub mod sessions;
pub(crate) mod store;
pub mod users;

pub use principal::Principal;
pub use store::KeyScope;

use chrono::{Duration, Utc};
use neocloud_schema::entity::api_key;
use neocloud_schema::ids::{ApiKeyId, NodeId, ProviderId, TenantId};
use neocloud_schema::vocabulary::Role;
use sea_orm::{ConnectionTrait, DatabaseConnection, SqlErr};
use serde_json::json;
use uuid::Uuid;

use crate::audit;
use crate::error::{ApiError, ApiResult};

/// `last_used_at` is refreshed at most this often, so authentication rarely writes.
const LAST_USED_RESOLUTION_SECONDS: i64 = 60;

fn unauthenticated(message: &str) -> ApiError {
    ApiError::Unauthenticated {
        message: message.to_owned(),
    }
}

/// Resolves a presented key to its principal, or `UNAUTHENTICATED`.
pub async fn authenticate(db: &DatabaseConnection, presented: &str) -> ApiResult<Principal> {
    let parsed =
        keys::ParsedKey::parse(presented).ok_or_else(|| unauthenticated("malformed API key"))?;
    let Some(row) = store::find_by_prefix(db, &parsed.prefix).await? else {
        return Err(unauthenticated("unknown API key"));
    };
    if !parsed.matches_hash(&row.secret_hash) {
        return Err(unauthenticated("unknown API key"));
    }
    if row.revoked_at.is_some() {
        return Err(unauthenticated("this API key has been revoked"));
    }
    let now = Utc::now();
    let stale = row
        .last_used_at
        .is_none_or(|at| now - at > Duration::seconds(LAST_USED_RESOLUTION_SECONDS));
    if stale {
        store::touch(db, row.id, now).await?;
    }
    Ok(Principal::from_row(&row))
}

/// The email of the person a key acts for: a portal user's, or an operator's who signed in
/// through the identity provider; `None` for a key that is only a key.
pub async fn person_of(db: &DatabaseConnection, key: ApiKeyId) -> ApiResult<Option<String>> {
    if let Some(user) = users::store::by_key(db, key).await? {
        return Ok(Some(user.email));
    }
    Ok(oidc::store::identity_by_key(db, key)
        .await?
        .map(|identity| identity.email))
}

/// `authenticate` for agent tokens, remembering a verified one for a few seconds
/// (`agent_tokens`): the ingest path asks once per batch.
pub async fn authenticate_agent(db: &DatabaseConnection, presented: &str) -> ApiResult<Principal> {
    if let Some(principal) = agent_tokens::recall(presented) {
        return Ok(principal);
    }
    let principal = authenticate(db, presented).await?;
    if principal.role == Role::Agent {
        agent_tokens::remember(presented, &principal);
    }
    Ok(principal)
}

/// A newly minted key: the row, and the secret shown once.
#[derive(Debug)]
pub struct MintedKey {
    pub key: api_key::Model,
    pub secret: String,
}

/// Inserts a key inside the caller's transaction (used by tenant creation and node
/// registration too, so a tenant never exists without its first admin key).
pub(crate) async fn mint<C: ConnectionTrait>(
    conn: &C,
    role: Role,
    tenant_id: Option<TenantId>,
    node_id: Option<NodeId>,
    label: &str,
    created_by: Option<ApiKeyId>,
) -> ApiResult<MintedKey> {
    let owner = KeyOwner {
        tenant_id,
        node_id,
        provider_id: None,
    };
    mint_for(conn, role, owner, label, created_by).await
}

/// Whom a key belongs to: at most one of them is set.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KeyOwner {
    pub tenant_id: Option<TenantId>,
    pub node_id: Option<NodeId>,
    pub provider_id: Option<ProviderId>,
}

/// Inserts a key for `owner` inside the caller's transaction.
pub(crate) async fn mint_for<C: ConnectionTrait>(
    conn: &C,
    role: Role,
    owner: KeyOwner,
    label: &str,
    created_by: Option<ApiKeyId>,
) -> ApiResult<MintedKey> {
    let KeyOwner {
        tenant_id,
        node_id,
        provider_id,
    } = owner;
    let generated = keys::GeneratedKey::new(role);
    let key = store::insert(
        conn,
        store::NewKey {
            prefix: &generated.prefix,
            secret_hash: &generated.secret_hash,
            role,
            tenant_id,
            node_id,
            label,
            created_by,
            provider_id,
        },
    )
    .await
    .map_err(|err| match err.sql_err() {
        Some(SqlErr::ForeignKeyConstraintViolation(_)) if tenant_id.is_some() => {
            ApiError::not_found("tenant")
        }
        _ => err.into(),
    })?;
    Ok(MintedKey {
        key,
        secret: generated.secret,
    })
}

pub(crate) fn validate_label(label: Option<&str>) -> ApiResult<String> {
    let label = label.unwrap_or("").trim();
    if label.chars().count() > 100 || label.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "label",
            "at most 100 printable characters",
        ));
    }
    Ok(label.to_owned())
}

/// `createApiKey`: a key of `role`, never more powerful than the caller's own. Operators
/// mint operator keys, or tenant keys for the tenant they name; tenant roles mint keys of
/// their own tenant only.
pub async fn create_key(
    db: &DatabaseConnection,
    actor: &Principal,
    role: Role,
    tenant_id: Option<TenantId>,
    label: Option<&str>,
) -> ApiResult<MintedKey> {
    if role == Role::Agent {
        return Err(ApiError::invalid(
            "role",
            "agent tokens are issued by registerNode",
        ));
    }
    if role == Role::Provider {
        return Err(ApiError::invalid(
            "role",
            "provider keys are issued by createProvider and createProviderKey",
        ));
    }
    if !actor.role.may_manage(role) {
        return Err(ApiError::forbidden(format!(
            "a {} key cannot create a {} key",
            actor.role, role
        )));
    }
    let label = validate_label(label)?;
    // A usage reporter belongs to one tenant, or (minted by an operator without a tenant)
    // reports for any tenant its events name.
    let tenant_bound = role.is_tenant_role()
        || (role == Role::UsageReporter && (actor.tenant_id.is_some() || tenant_id.is_some()));
    let tenant_id = match (actor.tenant_id, tenant_bound, tenant_id) {
        (_, false, Some(_)) => {
            return Err(ApiError::invalid(
                "tenantId",
                "operator keys belong to no tenant",
            ));
        }
        (_, false, None) => None,
        (Some(own), true, None) => Some(own),
        (Some(own), true, Some(asked)) if asked == own => Some(own),
        // Another tenant's id from a tenant key: answer as if it did not exist.
        (Some(_), true, Some(_)) => return Err(ApiError::not_found("tenant")),
        (None, true, Some(asked)) => Some(asked),
        (None, true, None) => {
            return Err(ApiError::invalid(
                "tenantId",
                "an operator creating a tenant key must name the tenant",
            ));
        }
    };
    let txn = crate::db::begin_write(db).await?;
    // A key of a tenant that does not exist is refused by the key's foreign key.
    let minted = mint(&txn, role, tenant_id, None, &label, Some(actor.key_id)).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id,
            action: "api_key.create",
            object_type: "api_key",
            object_id: minted.key.id.to_string(),
            before: None,
            after: Some(store::describe(&minted.key)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(minted)
}

/// `apiKeys`: the caller's tenant's keys (a provider key: its provider's keys); for an
/// operator, operator keys or the keys of the tenant it names. Agent tokens are listed
/// with their nodes, not here.
pub async fn list_keys(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant_id: Option<TenantId>,
) -> ApiResult<Vec<api_key::Model>> {
    let scope = scope_for(actor, tenant_id)?;
    Ok(store::list(db, scope).await?)
}

fn scope_for(actor: &Principal, tenant_id: Option<TenantId>) -> ApiResult<KeyScope> {
    if actor.role == Role::Provider {
        return match tenant_id {
            None => Ok(KeyScope::Provider(actor.acting_provider(None)?)),
            Some(_) => Err(ApiError::not_found("tenant")),
        };
    }
    actor.require_user()?;
    match (actor.role, actor.tenant_id, tenant_id) {
        (Role::Operator, _, None) => Ok(KeyScope::Operators),
        (Role::Operator, _, Some(t)) => Ok(KeyScope::Tenant(t)),
        (_, Some(own), None) => Ok(KeyScope::Tenant(own)),
        (_, Some(own), Some(asked)) if asked == own => Ok(KeyScope::Tenant(own)),
        (_, Some(_), Some(_)) => Err(ApiError::not_found("tenant")),
        _ => Err(ApiError::forbidden("this key cannot manage API keys")),
    }
}

/// `revokeApiKey`: only keys the caller could have created (operators may also revoke
/// agent tokens). Revoking a revoked key changes nothing.
pub async fn revoke_key(
    db: &DatabaseConnection,
    actor: &Principal,
    id: ApiKeyId,
) -> ApiResult<api_key::Model> {
    let txn = crate::db::begin_write(db).await?;
    let found = if actor.role == Role::Provider {
        // A provider revokes its own provider's keys only.
        store::find_of_provider(&txn, id, actor.acting_provider(None)?).await?
    } else {
        store::find_in_scope(&txn, id, actor.tenant_scope_or_all()).await?
    };
    let key = found.ok_or_else(|| ApiError::not_found("API key"))?;
    let allowed = actor.role == Role::Operator || actor.role.may_manage(key.role);
    if !allowed || (actor.role.is_tenant_role() && key.tenant_id.is_none()) {
        return Err(ApiError::forbidden(format!(
            "a {} key cannot revoke a {} key",
            actor.role, key.role
        )));
    }
    if key.revoked_at.is_some() {
        return Ok(key);
    }
    let revoked = store::revoke(&txn, &key, Utc::now()).await?;
    if let Some(node) = key.node_id {
        // The node's NATS credentials came with its agent's token.
        nats_users::revoke_node(&txn, node, Utc::now()).await?;
    }
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: key.tenant_id,
            action: "api_key.revoke",
            object_type: "api_key",
            object_id: key.id.to_string(),
            before: Some(store::describe(&key)),
            after: Some(json!({"revoked_at": revoked.revoked_at})),
        },
    )
    .await?;
    txn.commit().await?;
    agent_tokens::forget_all();
    Ok(revoked)
}

/// `agentTokens` of a node (operator): every token it was given, newest last.
pub async fn agent_tokens(
    db: &DatabaseConnection,
    actor: &Principal,
    nodes: &[NodeId],
) -> ApiResult<Vec<api_key::Model>> {
    actor.require_operator()?;
    Ok(store::agent_tokens_of(db, nodes).await?)
}

/// `rotateAgentToken` (operator): a new token for the node's agent, and every token it
/// held before revoked, in one transaction — the old token stops working the moment the
/// new one exists. Audited; the secret is shown once.
pub async fn rotate_agent_token(
    db: &DatabaseConnection,
    actor: &Principal,
    node: NodeId,
    hostname: &str,
) -> ApiResult<MintedKey> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let revoked = revoke_agent_tokens(&txn, node, Utc::now()).await?;
    let label = format!("agent of {hostname}");
    let minted = mint(
        &txn,
        Role::Agent,
        None,
        Some(node),
        &label,
        Some(actor.key_id),
    )
    .await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "agent_token.rotate",
            object_type: "node",
            object_id: Uuid::from(node).to_string(),
            before: Some(json!({"revoked": revoked})),
            after: Some(store::describe(&minted.key)),
        },
    )
    .await?;
    txn.commit().await?;
    agent_tokens::forget_all();
    Ok(minted)
}

/// Revokes every live token of `node`'s agent, and its NATS credentials, inside the
/// caller's transaction; returns what was revoked, for the audit entry. The caller
/// forgets remembered tokens (`agent_tokens::forget_all`) once it commits.
pub(crate) async fn revoke_agent_tokens<C: ConnectionTrait>(
    conn: &C,
    node: NodeId,
    now: chrono::DateTime<Utc>,
) -> ApiResult<Vec<serde_json::Value>> {
    let mut revoked = Vec::new();
    for key in store::agent_tokens_of(conn, &[node]).await? {
        if key.revoked_at.is_none() {
            revoked.push(store::describe(&store::revoke(conn, &key, now).await?));
        }
    }
    nats_users::revoke_node(conn, node, now).await?;
    Ok(revoked)
}

/// `neocloud admin create-operator-key`: an operator key with no key behind it (the
/// operator's first), recorded in the audit log as a system action.
pub async fn bootstrap_operator_key(db: &DatabaseConnection, label: &str) -> ApiResult<MintedKey> {
    let label = validate_label(Some(label))?;
    let txn = crate::db::begin_write(db).await?;
    let minted = mint(&txn, Role::Operator, None, None, &label, None).await?;
    audit::record_as(
        &txn,
        None,
        audit::Entry {
            tenant_id: None,
            action: "api_key.create",
            object_type: "api_key",
            object_id: minted.key.id.to_string(),
            before: None,
            after: Some(store::describe(&minted.key)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(minted)
}
