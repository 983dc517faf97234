//! Small closed vocabularies (states, forms, classes) shared by the API, the store and the
//! engines. Each is stored as its snake_case name (a TEXT column on every database) and
//! sent on the wire under the same name.

/// Declares a closed string enum: snake_case names for serde, `as_str`/`FromStr`/`Display`,
/// and (feature `db`) a sea-orm `ActiveEnum` stored as TEXT.
macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "db", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
        #[cfg_attr(feature = "db", sea_orm(rs_type = "String", db_type = "Text"))]
        pub enum $name {
            $(
                $(#[$vdoc])*
                #[serde(rename = $text)]
                #[cfg_attr(feature = "db", sea_orm(string_value = $text))]
                $variant,
            )+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::vocabulary::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::vocabulary::UnknownName {
                        kind: stringify!($name),
                        name: s.to_owned(),
                        expected: &[$($text),+],
                    }),
                }
            }
        }
    };
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}` (expected one of: {})", expected.join(", "))]
pub struct UnknownName {
    pub kind: &'static str,
    pub name: String,
    pub expected: &'static [&'static str],
}

string_enum!(
    /// The role of an API key. Operators run the platform; tenant roles act inside one
    /// tenant; an agent token belongs to exactly one registered node.
    Role {
        Operator = "operator",
        TenantAdmin = "tenant_admin",
        TenantMember = "tenant_member",
        /// Finance: reads its tenant's orders, usage, invoices and budgets; changes nothing.
        TenantBilling = "tenant_billing",
        Agent = "agent",
        /// Reports usage events (`POST /v1/events`) and nothing else: for one tenant, or,
        /// without a tenant, for any tenant an event names (the operator's gateways).
        UsageReporter = "usage_reporter",
        /// A hardware provider whose capacity the operator resells: reads its own
        /// provider, nodes and earnings, and nothing of any tenant.
        Provider = "provider",
    }
);

impl Role {
    /// Whether keys of this role act inside one tenant.
    pub fn is_tenant_role(self) -> bool {
        matches!(
            self,
            Role::TenantAdmin | Role::TenantMember | Role::TenantBilling
        )
    }

    /// Whether keys of this role may only read (no mutation runs for them).
    pub fn read_only(self) -> bool {
        self == Role::TenantBilling
    }

    /// Whether a key of role `self` may mint or revoke a key of role `other`: never a key
    /// with more power than its own, and agent tokens only through node registration.
    pub fn may_manage(self, other: Role) -> bool {
        match (self, other) {
            (_, Role::Agent) => false,
            (Role::Operator, _) => true,
            (
                Role::TenantAdmin,
                Role::TenantAdmin | Role::TenantMember | Role::TenantBilling | Role::UsageReporter,
            ) => true,
            (Role::TenantMember, Role::TenantMember) => true,
            // Its own provider's keys (the lookup keeps it to them).
            (Role::Provider, Role::Provider) => true,
            _ => false,
        }
    }
}

string_enum!(
    /// Whether a tenant may place new orders.
    TenantStatus {
        Active = "active",
        /// No new orders (operator decision or dunning); running allocations continue.
        Suspended = "suspended",
    }
);

string_enum!(
    /// Health of one GPU, as health events (XID, ECC) leave it.
    GpuHealth {
        Ok = "ok",
        /// Usable; new placements avoid it when anything else fits.
        Degraded = "degraded",
        /// Nothing is placed here; allocations on it accrue SLA credit instead of usage.
        Failed = "failed",
    }
);

string_enum!(
    /// Scheduling state of a node.
    NodeState {
        Active = "active",
        /// Running allocations stay; nothing new is placed.
        Draining = "draining",
        Down = "down",
        /// Out of the fleet for good (`retireNode`): nothing runs there, nothing is placed,
        /// it is neither sold nor counted; its history stays.
        Retired = "retired",
    }
);

string_enum!(
    /// Whether a node's hardware is what was registered (docs/providers.md, "Onboarding").
    /// Only a `trusted` or `verified` node takes new allocations.
    NodeVerification {
        /// Registered by an operator: taken as registered.
        Trusted = "trusted",
        /// Registered by a provider; its agent has not reported its hardware yet.
        Pending = "pending",
        /// Its agent reported the hardware registered.
        Verified = "verified",
        /// Its agent reported other hardware (`verification_reason` says what differs).
        Mismatch = "mismatch",
    }
);

impl NodeVerification {
    /// Whether the node may take new allocations.
    pub fn schedulable(self) -> bool {
        matches!(self, NodeVerification::Trusted | NodeVerification::Verified)
    }
}

/// The unit of a whole-GPU SKU (the other forms' units name their profile, fraction or
/// node: `sku::Model::unit`).
pub const GPU_UNIT: &str = "GPU";

string_enum!(
    /// What a catalog entry sells.
    SkuForm {
        /// `n` whole GPUs of a model.
        WholeGpu = "whole_gpu",
        /// One MIG instance of a profile.
        Mig = "mig",
        /// A time-sliced fraction of a GPU, in milli-GPUs.
        Fractional = "fractional",
        /// Whole nodes (bare metal).
        WholeNode = "whole_node",
        /// A quantity measured by a meter from usage events (tokens, GB of egress), priced
        /// per unit of its own; never ordered.
        Metered = "metered",
        /// Storage volumes of one class in one region, priced per GB-hour provisioned;
        /// created with `createVolume`, never ordered.
        Volume = "volume",
    }
);

/// The unit of a volume SKU: its list price is per GB-hour provisioned.
pub const GB_UNIT: &str = "GB";

string_enum!(
    /// What kind of storage a volume SKU sells.
    StorageClass {
        /// A block device attached to instances (Cinder, Ceph RBD).
        Block = "block",
        /// An object store bucket (Swift, S3, Ceph RGW), provisioned with a capacity.
        Object = "object",
    }
);

impl StorageClass {
    /// FOCUS `ServiceSubcategory`.
    pub fn focus_subcategory(self) -> &'static str {
        match self {
            StorageClass::Block => "Block Storage",
            StorageClass::Object => "Object Storage",
        }
    }
}

string_enum!(
    /// Whether a volume is held (and billed) or gone.
    VolumeStatus {
        Active = "active",
        Deleted = "deleted",
    }
);

string_enum!(
    /// What kind of service a metered SKU sells (FOCUS `ServiceCategory`); GPU SKUs are
    /// compute.
    ServiceCategory {
        Compute = "compute",
        Storage = "storage",
        Networking = "networking",
        AiAndMachineLearning = "ai_and_machine_learning",
        Other = "other",
    }
);

impl ServiceCategory {
    /// The FOCUS name: `Compute`, `Storage`, `Networking`, `AI and Machine Learning`,
    /// `Other`.
    pub fn focus_name(self) -> &'static str {
        match self {
            ServiceCategory::Compute => "Compute",
            ServiceCategory::Storage => "Storage",
            ServiceCategory::Networking => "Networking",
            ServiceCategory::AiAndMachineLearning => "AI and Machine Learning",
            ServiceCategory::Other => "Other",
        }
    }
}

string_enum!(
    /// How an allocation may be treated by the scheduler.
    AllocationClass {
        OnDemand = "on_demand",
        Reserved = "reserved",
        /// Cheaper; may be preempted by on-demand work after a notice window.
        Spot = "spot",
    }
);

string_enum!(
    /// How close together the GPUs of an order must be.
    TopologyLevel {
        Node = "node",
        NvlinkDomain = "nvlink_domain",
        Rack = "rack",
        Any = "any",
    }
);

string_enum!(
    OrderStatus {
        Pending = "pending",
        Active = "active",
        Released = "released",
        Failed = "failed",
    }
);

string_enum!(
    AllocationStatus {
        Active = "active",
        /// Preempted: running until its notice window ends.
        Preempting = "preempting",
        Released = "released",
    }
);

string_enum!(
    /// Where handing an allocation to its customer stands: the operator's provisioner
    /// reports it `ready` (with where to connect) or `failed` (released unbilled).
    AccessState {
        Pending = "pending",
        Ready = "ready",
        Failed = "failed",
    }
);

string_enum!(
    /// A billed metric (docs/architecture.md, billing semantics).
    Metric {
        Allocated = "allocated",
        Active = "active",
        Memory = "memory",
        Energy = "energy",
        SlaCredit = "sla_credit",
        /// What a meter aggregated from usage events, in the unit of its SKU.
        Metered = "metered",
    }
);

string_enum!(
    /// How a meter turns the values of a period's events into one quantity (per group).
    MeterAggregation {
        /// The sum of the values.
        Sum = "sum",
        /// How many events there were.
        Count = "count",
        /// The largest value.
        Max = "max",
        /// How many distinct values there were.
        UniqueCount = "unique_count",
        /// The value of the latest event (by its time).
        Latest = "latest",
    }
);

string_enum!(
    /// Pricing model of a rate, with Stripe's vocabulary.
    TiersMode {
        PerUnit = "per_unit",
        Graduated = "graduated",
        Volume = "volume",
        Package = "package",
    }
);

string_enum!(
    /// What a quota limits.
    QuotaScope {
        /// Concurrent GPUs of one model (`scope_value` = model code).
        GpuModel = "gpu_model",
        /// Concurrent GPUs of one SKU (`scope_value` = SKU id).
        Sku = "sku",
        /// Concurrent GPUs in one region (`scope_value` = region).
        Region = "region",
        /// Concurrent allocations (`scope_value` empty).
        Allocations = "allocations",
        /// GB of live storage volumes (`scope_value` empty for all regions, or a region).
        StorageGb = "storage_gb",
        /// Live storage volumes (`scope_value` empty).
        Volumes = "volumes",
    }
);

string_enum!(
    /// Life of an invoice. A draft is the open period's invoice, re-rated on every read;
    /// finalizing freezes it (`open`: owed), and only its payment state changes after that.
    InvoiceStatus {
        Draft = "draft",
        /// Finalized and owed.
        Open = "open",
        Paid = "paid",
        /// Cancelled by an operator, with a reason; keeps its number.
        Void = "void",
        /// Payment given up on after dunning.
        Uncollectible = "uncollectible",
        /// Finalized, owed and past its due date.
        Overdue = "overdue",
    }
);

impl InvoiceStatus {
    /// Finalized and still owed: open, or open past its due date.
    pub const OWED: [InvoiceStatus; 2] = [InvoiceStatus::Open, InvoiceStatus::Overdue];

    pub fn is_owed(self) -> bool {
        Self::OWED.contains(&self)
    }
}

string_enum!(
    /// Where collecting a finalized invoice stands.
    PaymentState {
        /// Payments are not configured: collected outside neocloud.
        External = "external",
        /// Being collected (a payment is on its way or awaited).
        Pending = "pending",
        Paid = "paid",
        /// The last attempt failed; the invoice is still owed.
        PaymentFailed = "payment_failed",
        Uncollectible = "uncollectible",
        Void = "void",
    }
);

string_enum!(
    /// Where a prepaid top-up paid through Stripe stands.
    TopUpStatus {
        /// Started; the payment is on its way.
        Pending = "pending",
        /// Paid: its credit was granted.
        Paid = "paid",
        /// The payment was refused.
        Failed = "failed",
    }
);

string_enum!(
    /// How a tenant's finalized invoices are collected through Stripe.
    CollectionMode {
        /// Each invoice is charged to the default payment method.
        ChargeAutomatically = "charge_automatically",
        /// A Stripe-hosted invoice is sent, to be paid by transfer before its due date.
        SendInvoice = "send_invoice",
    }
);

string_enum!(
    /// What an invoice line is.
    LineKind {
        /// Usage of one SKU × metric (× tier) priced by the plan.
        Usage = "usage",
        /// A tier's flat fee.
        FlatFee = "flat_fee",
        /// Failed-GPU time credited under the SLA (negative).
        SlaCredit = "sla_credit",
        /// The commitment's discount on usage (negative).
        CommitmentDiscount = "commitment_discount",
        /// What is missing to the commitment's monthly minimum.
        CommitmentTrueUp = "commitment_true_up",
        /// Usage that arrived after an earlier period was closed.
        Adjustment = "adjustment",
        /// Prepaid or promotional credit applied (negative).
        Credit = "credit",
    }
);

string_enum!(
    /// Where a credit grant came from.
    CreditKind {
        /// Paid for in advance (a top-up or a contract).
        Prepaid = "prepaid",
        /// Given away (a trial, a goodwill gesture).
        Promotional = "promotional",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_and_unknown_names_list_the_choices() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>().expect("parses"), *role);
            assert_eq!(
                serde_json::to_string(role).expect("serializes"),
                format!("\"{role}\"")
            );
        }
        let err = "root".parse::<Role>().expect_err("unknown");
        assert!(err.to_string().contains("tenant_admin"), "{err}");
        for form in SkuForm::ALL {
            assert_eq!(form.as_str().parse::<SkuForm>().expect("parses"), *form);
        }
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
