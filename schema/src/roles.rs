//! Who a caller is: the role an API key carries.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The role of an API key. Operators run the platform; tenant roles act inside one tenant;
/// an agent token belongs to exactly one registered node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Operator,
    TenantAdmin,
    TenantMember,
    Agent,
}

impl Role {
    pub const ALL: [Role; 4] = [
        Role::Operator,
        Role::TenantAdmin,
        Role::TenantMember,
        Role::Agent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Operator => "operator",
            Role::TenantAdmin => "tenant_admin",
            Role::TenantMember => "tenant_member",
            Role::Agent => "agent",
        }
    }

    /// Whether keys of this role act inside one tenant.
    pub fn is_tenant_role(self) -> bool {
        matches!(self, Role::TenantAdmin | Role::TenantMember)
    }

    /// Whether a key of role `self` may mint or revoke a key of role `other`: never a key
    /// with more power than its own, and agent tokens only through node registration.
    pub fn may_manage(self, other: Role) -> bool {
        match (self, other) {
            (_, Role::Agent) => false,
            (Role::Operator, _) => true,
            (Role::TenantAdmin, Role::TenantAdmin | Role::TenantMember) => true,
            (Role::TenantMember, Role::TenantMember) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown role `{0}` (expected operator, tenant_admin, tenant_member or agent)")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_round_trips_through_its_name() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>().expect("parses"), role);
        }
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn no_role_can_mint_a_more_powerful_key() {
        assert!(!Role::TenantMember.may_manage(Role::TenantAdmin));
        assert!(!Role::TenantAdmin.may_manage(Role::Operator));
        assert!(!Role::Operator.may_manage(Role::Agent));
        assert!(Role::TenantAdmin.may_manage(Role::TenantMember));
        assert!(Role::Operator.may_manage(Role::TenantAdmin));
    }
}
