//! The authenticated caller of a request.

use neocloud_schema::entity::api_key;
use neocloud_schema::ids::{ApiKeyId, NodeId, ProviderId, TenantId};
use neocloud_schema::vocabulary::Role;

use crate::error::{ApiError, ApiResult};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub key_id: ApiKeyId,
    pub role: Role,
    /// Set for tenant roles.
    pub tenant_id: Option<TenantId>,
    /// Set for agent tokens.
    pub node_id: Option<NodeId>,
    /// Set for provider keys.
    pub provider_id: Option<ProviderId>,
    /// A portal user's session whose tenant requires a second factor the user has not
    /// set up: it may only set one up (`SECOND_FACTOR_SETUP_REQUIRED` for anything else).
    pub second_factor_setup_required: bool,
}

impl Principal {
    pub(crate) fn from_row(row: &api_key::Model) -> Self {
        Principal {
            key_id: row.id,
            role: row.role,
            tenant_id: row.tenant_id,
            node_id: row.node_id,
            provider_id: row.provider_id,
            second_factor_setup_required: false,
        }
    }

    pub fn require_operator(&self) -> ApiResult<()> {
        if self.role == Role::Operator {
            Ok(())
        } else {
            Err(ApiError::forbidden("this operation needs an operator key"))
        }
    }

    /// The tenant a tenant-role key acts in; `FORBIDDEN` for operators and agents.
    pub fn tenant(&self) -> ApiResult<TenantId> {
        match (self.role.is_tenant_role(), self.tenant_id) {
            (true, Some(tenant)) => Ok(tenant),
            _ => Err(ApiError::forbidden("this operation needs a tenant key")),
        }
    }

    /// `None` for operators (every tenant), the own tenant for tenant roles.
    pub fn tenant_scope_or_all(&self) -> Option<TenantId> {
        match (self.role, self.tenant_id) {
            (Role::Operator, _) => None,
            (role, Some(tenant)) if role.is_tenant_role() => Some(tenant),
            // Agents and usage reporters read nothing: a nil scope matches nothing.
            _ => Some(TenantId(uuid::Uuid::nil())),
        }
    }

    /// The tenant a call is about: a tenant key's own (naming another tenant finds
    /// nothing, as if it did not exist), or the one an operator names.
    pub fn acting_tenant(&self, asked: Option<TenantId>) -> ApiResult<TenantId> {
        self.require_user()?;
        match (self.tenant_scope_or_all(), asked) {
            (None, Some(t)) => Ok(t),
            (None, None) => Err(ApiError::invalid("tenantId", "operators name the tenant")),
            (Some(own), None) => Ok(own),
            (Some(own), Some(t)) if t == own => Ok(own),
            _ => Err(ApiError::not_found("tenant")),
        }
    }

    /// The provider a provider key acts for: its own, or for operators the one named
    /// (naming another provider from a provider key finds nothing, as if it did not
    /// exist). `FORBIDDEN` for every other role.
    pub fn acting_provider(&self, asked: Option<ProviderId>) -> ApiResult<ProviderId> {
        match (self.role, self.provider_id, asked) {
            (Role::Operator, _, Some(p)) => Ok(p),
            (Role::Operator, _, None) => Err(ApiError::invalid(
                "providerId",
                "operators name the provider",
            )),
            (Role::Provider, Some(own), None) => Ok(own),
            (Role::Provider, Some(own), Some(p)) if p == own => Ok(own),
            (Role::Provider, Some(_), Some(_)) => Err(ApiError::not_found("provider")),
            _ => Err(ApiError::forbidden(
                "this operation needs a provider or operator key",
            )),
        }
    }

    /// A role people sign in to a web app with: an operator, a tenant role (the portal)
    /// or a provider (the provider console); not an agent token or a usage reporter.
    pub fn require_person(&self) -> ApiResult<()> {
        match self.role {
            Role::Provider => Ok(()),
            _ => self.require_user(),
        }
    }

    /// Any operator or tenant role (not an agent token, a usage reporter or a provider).
    pub fn require_user(&self) -> ApiResult<()> {
        match self.role {
            Role::Agent => Err(ApiError::forbidden("agent tokens can only ingest")),
            Role::Provider => Err(ApiError::forbidden(
                "provider keys read their own provider and nodes only",
            )),
            Role::UsageReporter => Err(ApiError::forbidden(
                "usage reporter keys can only report usage events (POST /v1/events)",
            )),
            _ => Ok(()),
        }
    }

    /// Who a usage event reporter reports for: an operator key or an operator's usage
    /// reporter for any tenant (`None`), a tenant's usage reporter for its own.
    pub fn usage_reporter(&self) -> ApiResult<Option<TenantId>> {
        match (self.role, self.tenant_id) {
            (Role::Operator, _) | (Role::UsageReporter, None) => Ok(None),
            (Role::UsageReporter, Some(tenant)) => Ok(Some(tenant)),
            _ => Err(ApiError::forbidden(
                "usage events are reported with a usage_reporter key (or an operator key)",
            )),
        }
    }
}
