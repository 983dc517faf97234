//! Typed identifiers. Every id is a UUID on the wire and in the database, but a `TenantId`
//! can never be passed where an `AllocationId` is expected.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($($(#[$doc:meta])* $name:ident),+ $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A new, time-ordered id (UUIDv7), so ids sort by creation in indexes and pages.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }

        impl From<Uuid> for $name {
            fn from(value: Uuid) -> Self {
                Self(value)
            }
        }

        impl From<$name> for Uuid {
            fn from(value: $name) -> Self {
                value.0
            }
        }
    )+};
}

uuid_id!(
    /// The company that owns hardware in the fleet (the operator itself, or a partner).
    ProviderId,
    /// A customer organisation.
    TenantId,
    /// An API key or agent token (never the secret itself).
    ApiKeyId,
    /// A registered host.
    NodeId,
    /// One physical GPU.
    GpuId,
    /// A catalog entry.
    SkuId,
    PlanId,
    PlanVersionId,
    OrderId,
    /// A placed piece of an order: GPUs, a MIG slice, a GPU fraction or whole nodes.
    AllocationId,
    AuditId,
    /// A draft or finalized invoice.
    InvoiceId,
    /// Prepaid or promotional credit granted to a tenant.
    CreditGrantId,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_round_trips_through_its_text_form() {
        let id = TenantId::new();
        let parsed: TenantId = id.to_string().parse().expect("parses");
        assert_eq!(id, parsed);
        assert_eq!(
            serde_json::to_string(&id).expect("serializes"),
            format!("\"{id}\"")
        );
    }

    #[test]
    fn ids_are_created_in_sorting_order() {
        let a = OrderId::new();
        let b = OrderId::new();
        assert!(a < b);
    }
}
