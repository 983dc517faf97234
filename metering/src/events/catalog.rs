//! The event catalog (**contract**): every event type, who sees it, and what its `data`
//! holds. Each type's JSON Schema is generated from the fields listed here, served at
//! `GET /v1/events/schema` and checked in as `docs/events.schema.json`; `record` checks
//! every event against it, so an emitter cannot drift from what receivers were promised.
//!
//! A type's `version` moves only for a change receivers must know of (a field's meaning
//! or type); adding an optional field is not such a change.

use serde_json::{Map, Value, json};

/// Who may see an event: the tenant it is about (and the operator), or the operator only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    Tenant,
    Operator,
    /// Whoever owns the webhook endpoint it is about: a tenant, or the operator.
    Owner,
}

/// What a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// A UUID.
    Id,
    /// RFC 3339 time, UTC.
    Time,
    Integer,
    /// An exact decimal as a string, e.g. `"12.50"`.
    Decimal,
    /// An object of string values (an order's labels).
    Labels,
    /// The GPUs of an allocation: `[{uuid, index}]`.
    Gpus,
    /// SSH public keys: `[{id, name, fingerprint, public_key}]`.
    SshKeys,
    /// Where a customer connects: `[{kind, host, port, username?, description?}]`.
    Endpoints,
}

#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub kind: Kind,
    /// Present and not null in every event of the type.
    pub required: bool,
    pub doc: &'static str,
}

#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    pub audience: Audience,
    pub version: u32,
    pub summary: &'static str,
    pub fields: &'static [Field],
}

const fn req(name: &'static str, kind: Kind, doc: &'static str) -> Field {
    Field {
        name,
        kind,
        required: true,
        doc,
    }
}

const fn opt(name: &'static str, kind: Kind, doc: &'static str) -> Field {
    Field {
        name,
        kind,
        required: false,
        doc,
    }
}

use Audience::{Operator, Owner, Tenant};
use Kind::{Decimal, Endpoints, Gpus, Id, Integer, Labels, SshKeys, Text, Time};

const ALLOCATION: Field = req("allocation_id", Id, "the allocation");
const ORDER: Field = req("order_id", Id, "the order it belongs to");
const INVOICE: Field = req("invoice_id", Id, "the invoice");
const NUMBER: Field = req("number", Text, "the invoice number, e.g. `NC-2026-000123`");
const TOTAL: Field = req("total", Decimal, "the amount due, in `currency`");
const CURRENCY: Field = req("currency", Text, "ISO 4217 code");
const DUE_AT: Field = req("due_at", Time, "when it fell or falls due");
const NODE: Field = req("node_id", Id, "the node");
const HOSTNAME: Field = req("hostname", Text, "the node's host name");

const VOLUME_ID: Field = req("volume_id", Id, "the volume");
const VOLUME_TENANT: Field = req("tenant_id", Id, "the tenant holding it");
const VOLUME_NAME: Field = req("name", Text, "the tenant's name for it");
const VOLUME_SKU: Field = req("sku", Text, "the catalog entry's name");
const STORAGE_CLASS: Field = req("storage_class", Text, "`block` or `object`");
const VOLUME_REGION: Field = req("region", Text, "where it is");
const VOLUME_LABELS: Field = req("labels", Labels, "the tenant's labels");
const VOLUME_CREATED: Field = req("created_at", Time, "billing started here");

/// A storage volume: what the operator's storage needs to create it.
const VOLUME: &[Field] = &[
    VOLUME_ID,
    VOLUME_TENANT,
    VOLUME_NAME,
    VOLUME_SKU,
    STORAGE_CLASS,
    VOLUME_REGION,
    req("size_gb", Integer, "its size, in GB"),
    VOLUME_LABELS,
    VOLUME_CREATED,
];

const VOLUME_RESIZED: &[Field] = &[
    VOLUME_ID,
    VOLUME_TENANT,
    VOLUME_NAME,
    VOLUME_SKU,
    STORAGE_CLASS,
    VOLUME_REGION,
    req("size_gb", Integer, "the new size, in GB"),
    VOLUME_LABELS,
    VOLUME_CREATED,
    req("previous_size_gb", Integer, "the size before"),
    req("resized_at", Time, "the new size bills from here"),
];

const VOLUME_DELETED: &[Field] = &[
    VOLUME_ID,
    VOLUME_TENANT,
    VOLUME_NAME,
    VOLUME_SKU,
    STORAGE_CLASS,
    VOLUME_REGION,
    req("size_gb", Integer, "its last size, in GB"),
    VOLUME_LABELS,
    VOLUME_CREATED,
    req("deleted_at", Time, "billing stops here"),
    req(
        "reason",
        Text,
        "`deleted`, or `provisioning_failed` (nothing of it is billed)",
    ),
    opt("failure", Text, "why the storage could not create it"),
];

/// Where an allocation runs and what it holds: what a provisioner needs.
const PLACED: &[Field] = &[
    ALLOCATION,
    ORDER,
    req("tenant_id", Id, "the tenant holding it"),
    req("sku", Text, "the catalog entry's name"),
    req(
        "form",
        Text,
        "`whole_gpu`, `mig_slice`, `fractional` or `whole_node`",
    ),
    req("class", Text, "`on_demand`, `spot` or `reserved`"),
    req("region", Text, "the node's region"),
    HOSTNAME,
    NODE,
    req("gpus", Gpus, "the physical GPUs it uses"),
    opt("mig_profile", Text, "the MIG profile, e.g. `3g.40gb`"),
    opt("mig_start_slot", Integer, "the MIG instance's start slot"),
    opt(
        "milli_gpu",
        Integer,
        "a fraction's share of its GPU, in thousandths",
    ),
    req("labels", Labels, "the order's labels"),
    req(
        "ssh_keys",
        SshKeys,
        "the tenant's SSH public keys the order hands over, to install for its people",
    ),
    req("started_at", Time, "billing starts here"),
];

const CATALOG: &[Spec] = &[
    Spec {
        name: "allocation.placed",
        audience: Tenant,
        version: 1,
        summary: "An allocation of an order was placed on hardware; billing starts at `started_at`.",
        fields: PLACED,
    },
    Spec {
        name: "allocation.ready",
        audience: Tenant,
        version: 1,
        summary: "The operator's provisioner handed an allocation over: `endpoints` are where to connect.",
        fields: &[
            ALLOCATION,
            ORDER,
            HOSTNAME,
            req("endpoints", Endpoints, "where the customer connects"),
        ],
    },
    Spec {
        name: "allocation.preempting",
        audience: Tenant,
        version: 1,
        summary: "An allocation got its preemption notice and ends at `preempt_at`.",
        fields: &[
            ALLOCATION,
            ORDER,
            req("preempt_at", Time, "when it ends"),
            req(
                "reason",
                Text,
                "`preempted` (a spot allocation made room) or `budget_stop` (the budget's hard stop)",
            ),
        ],
    },
    Spec {
        name: "allocation.ended",
        audience: Tenant,
        version: 1,
        summary: "An allocation ended; billing stops at `ended_at`.",
        fields: &[
            ALLOCATION,
            ORDER,
            req("tenant_id", Id, "the tenant that held it"),
            HOSTNAME,
            req("gpus", Gpus, "the physical GPUs it used"),
            req("ended_at", Time, "billing stops here"),
            req(
                "reason",
                Text,
                "`released`, `preempted` or `provisioning_failed` (nothing of it is billed)",
            ),
            opt(
                "failure",
                Text,
                "why provisioning failed, as the provisioner said",
            ),
        ],
    },
    Spec {
        name: "volume.created",
        audience: Tenant,
        version: 1,
        summary: "A tenant created a storage volume; the storage should create it (then `markVolumeReady` or `markVolumeFailed`). Billing starts at `created_at`.",
        fields: VOLUME,
    },
    Spec {
        name: "volume.resized",
        audience: Tenant,
        version: 1,
        summary: "A volume's size changed to `size_gb` at `resized_at`; the storage should grow (or, for object storage, shrink) it.",
        fields: VOLUME_RESIZED,
    },
    Spec {
        name: "volume.deleted",
        audience: Tenant,
        version: 1,
        summary: "A volume was deleted (or its storage could not create it); billing stops at `deleted_at`. The storage should delete its data.",
        fields: VOLUME_DELETED,
    },
    Spec {
        name: "allocation.gpu_failed",
        audience: Tenant,
        version: 1,
        summary: "A GPU under an allocation failed; its time is credited from `at`.",
        fields: &[
            ALLOCATION,
            req("gpu_uuid", Text, "the GPU"),
            req("at", Time, "when it failed"),
            req("cause", Text, "what failed it, e.g. `xid 79`"),
        ],
    },
    Spec {
        name: "sla_credit.accrued",
        audience: Tenant,
        version: 1,
        summary: "Time on a failed GPU is being credited instead of billed, from `from`.",
        fields: &[
            ALLOCATION,
            req("gpu_uuid", Text, "the failed GPU"),
            req(
                "from",
                Time,
                "credit accrues from here until the GPU is repaired or released",
            ),
        ],
    },
    Spec {
        name: "invoice.paid",
        audience: Tenant,
        version: 1,
        summary: "An invoice was paid.",
        fields: &[INVOICE, NUMBER, TOTAL, CURRENCY],
    },
    Spec {
        name: "invoice.finalized",
        audience: Tenant,
        version: 1,
        summary: "A billing period closed into a numbered, immutable invoice.",
        fields: &[
            INVOICE,
            NUMBER,
            req("period_start", Time, "the period's first instant"),
            req("period_end", Time, "the period's end (exclusive)"),
            TOTAL,
            CURRENCY,
            opt("due_at", Time, "when it falls due (the tenant's net terms)"),
        ],
    },
    Spec {
        name: "invoice.due_soon",
        audience: Tenant,
        version: 1,
        summary: "An owed invoice falls due within three days.",
        fields: &[INVOICE, NUMBER, TOTAL, CURRENCY, DUE_AT],
    },
    Spec {
        name: "invoice.overdue",
        audience: Tenant,
        version: 1,
        summary: "An invoice was not paid by its due date; its status is now OVERDUE.",
        fields: &[INVOICE, NUMBER, TOTAL, CURRENCY, DUE_AT],
    },
    Spec {
        name: "invoice.payment_reminder",
        audience: Tenant,
        version: 1,
        summary: "An overdue invoice is still unpaid 7, 14 or 30 days after its due date.",
        fields: &[
            INVOICE,
            NUMBER,
            TOTAL,
            CURRENCY,
            DUE_AT,
            req("days_overdue", Integer, "whole days since the due date"),
        ],
    },
    Spec {
        name: "invoice.payment_failed",
        audience: Tenant,
        version: 1,
        summary: "An attempt to collect an invoice failed.",
        fields: &[
            INVOICE,
            NUMBER,
            TOTAL,
            CURRENCY,
            req("failures", Integer, "failed attempts so far"),
        ],
    },
    Spec {
        name: "invoice.voided",
        audience: Tenant,
        version: 1,
        summary: "A finalized invoice was voided by the operator.",
        fields: &[INVOICE, NUMBER, req("reason", Text, "why")],
    },
    Spec {
        name: "credit_note.issued",
        audience: Tenant,
        version: 1,
        summary: "A credit note was issued against a finalized invoice.",
        fields: &[
            req("credit_note_id", Id, "the credit note"),
            req("number", Text, "its number, e.g. `NC-CN-2026-000001`"),
            INVOICE,
            req("invoice_number", Text, "the invoice it credits"),
            req(
                "total",
                Decimal,
                "what it credits, tax included, in `currency`",
            ),
            CURRENCY,
            req(
                "applied",
                Decimal,
                "of `total`, what reduced the invoice's amount due",
            ),
            req(
                "to_balance",
                Decimal,
                "of `total`, what went to the balance as prepaid credit",
            ),
            req(
                "refunded",
                Decimal,
                "of `total`, what is refunded to the card",
            ),
            req("reason", Text, "why"),
        ],
    },
    Spec {
        name: "top_up.succeeded",
        audience: Tenant,
        version: 1,
        summary: "A prepaid top-up was paid and its credit granted.",
        fields: &[
            req("top_up_id", Id, "the top-up"),
            req("amount", Decimal, "the credit granted"),
            CURRENCY,
        ],
    },
    Spec {
        name: "top_up.failed",
        audience: Tenant,
        version: 1,
        summary: "A prepaid top-up's payment failed.",
        fields: &[
            req("top_up_id", Id, "the top-up"),
            req("amount", Decimal, "the amount asked for"),
            CURRENCY,
            req("failure", Text, "why"),
        ],
    },
    Spec {
        name: "budget.threshold_crossed",
        audience: Tenant,
        version: 1,
        summary: "The period's spend crossed an alert threshold of the budget.",
        fields: &[
            req(
                "threshold_pct",
                Integer,
                "the threshold, in percent of the limit",
            ),
            req("spend", Decimal, "the period's spend so far"),
            req("monthly_limit", Decimal, "the limit it was judged against"),
            CURRENCY,
            req("period_start", Time, "the billing period"),
        ],
    },
    Spec {
        name: "budget.blocked",
        audience: Tenant,
        version: 1,
        summary: "The budget's hard cap now refuses new orders (with `stopAllocations`, running allocations get `allocation.preempting` with reason `budget_stop`).",
        fields: &[
            req("spend", Decimal, "the period's spend so far"),
            req("monthly_limit", Decimal, "the limit"),
            CURRENCY,
            req("period_start", Time, "the billing period"),
        ],
    },
    Spec {
        name: "budget.allocations_stopped",
        audience: Tenant,
        version: 1,
        summary: "With `stopAllocations`, the limit was reached with no prepaid credit left: the running allocations got their notice (`allocation.preempting`, reason `budget_stop`).",
        fields: &[
            req("spend", Decimal, "the period's spend so far"),
            req("monthly_limit", Decimal, "the limit"),
            CURRENCY,
            req("period_start", Time, "the billing period"),
        ],
    },
    Spec {
        name: "quota.changed",
        audience: Tenant,
        version: 1,
        summary: "The operator changed one of the tenant's quotas.",
        fields: &[
            req(
                "scope",
                Text,
                "what the quota counts, e.g. `gpu_model:H100`",
            ),
            opt(
                "limit",
                Integer,
                "the new limit; null: the quota was removed",
            ),
            opt(
                "previous_limit",
                Integer,
                "the limit before, if there was one",
            ),
        ],
    },
    Spec {
        name: "tenant.suspended",
        audience: Tenant,
        version: 1,
        summary: "The tenant was suspended: new orders are refused.",
        fields: &[req("reason", Text, "why")],
    },
    Spec {
        name: "tenant.resumed",
        audience: Tenant,
        version: 1,
        summary: "The tenant was resumed.",
        fields: &[],
    },
    Spec {
        name: "webhook_endpoint.disabled",
        audience: Owner,
        version: 1,
        summary: "A webhook endpoint was disabled after failing for days.",
        fields: &[
            req("endpoint_id", Id, "the endpoint"),
            req("url", Text, "its URL"),
            req("failing_since", Time, "since when every attempt failed"),
        ],
    },
    Spec {
        name: "webhook.test",
        audience: Owner,
        version: 1,
        summary: "A test event, sent to one endpoint on request.",
        fields: &[
            req("endpoint_id", Id, "the endpoint it was sent to"),
            opt("note", Text, "what the sender wrote"),
        ],
    },
    Spec {
        name: "node.registered",
        audience: Operator,
        version: 1,
        summary: "A node joined the fleet.",
        fields: &[
            NODE,
            HOSTNAME,
            req("region", Text, "its region"),
            req("gpu_model", Text, "its GPUs' model"),
            req("gpu_count", Integer, "how many GPUs"),
        ],
    },
    Spec {
        name: "node.verified",
        audience: Operator,
        version: 1,
        summary: "A node's agent reported the hardware it was registered with: it takes allocations.",
        fields: &[
            NODE,
            HOSTNAME,
            req("provider_id", Id, "the provider that owns it"),
        ],
    },
    Spec {
        name: "node.hardware_mismatch",
        audience: Operator,
        version: 1,
        summary: "A node's agent reported other hardware than registered: it takes no new allocations until it matches again.",
        fields: &[
            NODE,
            HOSTNAME,
            req("provider_id", Id, "the provider that owns it"),
            req("reason", Text, "what differs"),
        ],
    },
    Spec {
        name: "node.retired",
        audience: Operator,
        version: 1,
        summary: "A node left the fleet for good (`retireNode`, by the operator or its provider): nothing runs or is placed there.",
        fields: &[
            NODE,
            HOSTNAME,
            req("provider_id", Id, "the provider that owns it"),
        ],
    },
    Spec {
        name: "node.drained",
        audience: Operator,
        version: 1,
        summary: "A node was drained: nothing new is placed on it; what runs there stays (`node.allocations` lists it).",
        fields: &[NODE, HOSTNAME],
    },
    Spec {
        name: "gpu.health_changed",
        audience: Operator,
        version: 1,
        summary: "A GPU's health changed.",
        fields: &[
            req("gpu_uuid", Text, "the GPU"),
            HOSTNAME,
            req("before", Text, "`ok`, `degraded` or `failed`"),
            req("after", Text, "`ok`, `degraded` or `failed`"),
            req("cause", Text, "what changed it"),
            req("at", Time, "when"),
        ],
    },
    Spec {
        name: "ingest.gap_detected",
        audience: Operator,
        version: 1,
        summary: "An agent's batch sequence skipped numbers: usage may be missing.",
        fields: &[
            NODE,
            req("agent_id", Text, "the agent"),
            req("boot_id", Text, "the agent's boot"),
            req("from_seq", Integer, "the first missing sequence number"),
            req("to_seq", Integer, "the last missing sequence number"),
        ],
    },
    Spec {
        name: "ingest.quarantined",
        audience: Operator,
        version: 1,
        summary: "A journaled batch could not be aggregated and was set aside.",
        fields: &[
            req("batch_id", Id, "the batch"),
            NODE,
            req("reason", Text, "why"),
        ],
    },
];

/// Every event type, in catalog order.
pub fn all() -> &'static [Spec] {
    CATALOG
}

/// The type named `name`, if the catalog has it.
pub fn spec(name: &str) -> Option<&'static Spec> {
    CATALOG.iter().find(|s| s.name == name)
}

/// The event types a subscriber of `audience` may receive: tenants their own, the operator
/// all.
pub fn visible_to(audience: Audience) -> impl Iterator<Item = &'static Spec> {
    CATALOG
        .iter()
        .filter(move |s| audience == Operator || s.audience != Operator)
}

fn kind_schema(kind: Kind) -> Value {
    match kind {
        Text => json!({"type": "string"}),
        Id => json!({"type": "string", "format": "uuid"}),
        Time => json!({"type": "string", "format": "date-time"}),
        Integer => json!({"type": "integer"}),
        Decimal => json!({"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$"}),
        Labels => json!({"type": "object", "additionalProperties": {"type": "string"}}),
        Gpus => json!({"type": "array", "items": {
            "type": "object",
            "required": ["uuid", "index"],
            "additionalProperties": false,
            "properties": {"uuid": {"type": "string"}, "index": {"type": "integer"}}
        }}),
        SshKeys => json!({"type": "array", "items": {
            "type": "object",
            "required": ["id", "name", "fingerprint", "public_key"],
            "additionalProperties": false,
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "name": {"type": "string"},
                "fingerprint": {"type": "string", "description": "`SHA256:<base64>`, as `ssh-keygen -l` prints it"},
                "public_key": {"type": "string", "description": "`<type> <base64>`, one `authorized_keys` line"}
            }
        }}),
        Endpoints => json!({"type": "array", "items": {
            "type": "object",
            "required": ["kind", "host", "port"],
            "additionalProperties": false,
            "properties": {
                "kind": {"type": "string", "description": "e.g. `ssh`, `https`, `jupyter`"},
                "host": {"type": "string", "description": "a host name or IP address"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "username": {"type": ["string", "null"]},
                "description": {"type": ["string", "null"]}
            }
        }}),
    }
}

impl Spec {
    /// The JSON Schema (draft 2020-12) of this type's `data`.
    pub fn data_schema(&self) -> Value {
        let mut properties = Map::new();
        for field in self.fields {
            let mut schema = kind_schema(field.kind);
            if !field.required
                && let Some(t) = schema.get("type").cloned()
            {
                schema["type"] = json!([t, "null"]);
            }
            schema["description"] = json!(field.doc);
            properties.insert(field.name.to_owned(), schema);
        }
        let required: Vec<&str> = self
            .fields
            .iter()
            .filter(|f| f.required)
            .map(|f| f.name)
            .collect();
        json!({
            "type": "object",
            "description": self.summary,
            "required": required,
            "additionalProperties": false,
            "properties": properties,
        })
    }

    /// Whether `data` is what this type's schema promises: every required field present
    /// with its kind, no field the catalog does not list.
    pub fn check(&self, data: &Value) -> Result<(), String> {
        let Some(object) = data.as_object() else {
            return Err(format!("{}: data is not an object", self.name));
        };
        for key in object.keys() {
            if !self.fields.iter().any(|f| f.name == key) {
                return Err(format!("{}: `{key}` is not in the catalog", self.name));
            }
        }
        for field in self.fields {
            match object.get(field.name) {
                None | Some(Value::Null) if field.required => {
                    return Err(format!("{}: `{}` is missing", self.name, field.name));
                }
                None | Some(Value::Null) => {}
                Some(value) if !holds(field.kind, value) => {
                    return Err(format!(
                        "{}: `{}` is not {:?}: {value}",
                        self.name, field.name, field.kind
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

fn holds(kind: Kind, value: &Value) -> bool {
    match kind {
        Text => value.is_string(),
        Id => value
            .as_str()
            .is_some_and(|s| uuid::Uuid::parse_str(s).is_ok()),
        Time => value
            .as_str()
            .is_some_and(|s| chrono::DateTime::parse_from_rfc3339(s).is_ok()),
        Integer => value.is_i64() || value.is_u64(),
        Decimal => value
            .as_str()
            .is_some_and(|s| s.parse::<rust_decimal::Decimal>().is_ok()),
        Labels => value
            .as_object()
            .is_some_and(|o| o.values().all(Value::is_string)),
        Gpus => value.as_array().is_some_and(|gpus| {
            gpus.iter()
                .all(|g| g["uuid"].is_string() && g["index"].is_u64())
        }),
        SshKeys => value.as_array().is_some_and(|keys| {
            keys.iter().all(|k| {
                ["id", "name", "fingerprint", "public_key"]
                    .iter()
                    .all(|f| k[f].is_string())
            })
        }),
        Endpoints => value.as_array().is_some_and(|endpoints| {
            endpoints.iter().all(|e| {
                e["kind"].is_string()
                    && e["host"].is_string()
                    && e["port"].as_u64().is_some_and(|p| (1..=65535).contains(&p))
            })
        }),
    }
}

/// The whole catalog as one JSON document: the envelope and every type's `data` schema.
pub fn document() -> Value {
    let types: Map<String, Value> = CATALOG
        .iter()
        .map(|s| {
            (
                s.name.to_owned(),
                json!({
                    "audience": match s.audience {
                        Tenant => "tenant",
                        Operator => "operator",
                        Owner => "endpoint owner",
                    },
                    "version": s.version,
                    "summary": s.summary,
                    "data": s.data_schema(),
                }),
            )
        })
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "neocloud events",
        "description": "Every event is this envelope; `data` follows the schema of its `type`.",
        "envelope": {
            "type": "object",
            "required": ["id", "type", "version", "timestamp", "tenant_id", "data"],
            "properties": {
                "id": {"type": "string", "format": "uuid", "description": "the event's id, also the `webhook-id` of every delivery"},
                "type": {"type": "string", "enum": CATALOG.iter().map(|s| s.name).collect::<Vec<_>>()},
                "version": {"type": "integer", "description": "the type's version"},
                "timestamp": {"type": "string", "format": "date-time", "description": "when it happened"},
                "tenant_id": {"type": ["string", "null"], "format": "uuid", "description": "the tenant it is about; null for operator events"},
                "data": {"type": "object"}
            }
        },
        "types": types,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_unique_and_dotted() {
        let mut names: Vec<&str> = CATALOG.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CATALOG.len());
        assert!(names.iter().all(|n| n.split('.').count() == 2));
    }

    #[test]
    fn a_payload_is_checked_against_its_type() {
        let spec = spec("invoice.voided").expect("in the catalog");
        let good = json!({"invoice_id": uuid::Uuid::nil(), "number": "NC-1", "reason": "x"});
        assert!(spec.check(&good).is_ok());
        let missing = json!({"invoice_id": uuid::Uuid::nil(), "number": "NC-1"});
        assert!(spec.check(&missing).is_err());
        let extra =
            json!({"invoice_id": uuid::Uuid::nil(), "number": "NC-1", "reason": "x", "y": 1});
        assert!(spec.check(&extra).is_err());
        let wrong = json!({"invoice_id": "not a uuid", "number": "NC-1", "reason": "x"});
        assert!(spec.check(&wrong).is_err());
    }

    #[test]
    fn tenants_never_see_operator_types() {
        assert!(visible_to(Tenant).all(|s| s.audience != Operator));
        assert_eq!(visible_to(Operator).count(), CATALOG.len());
    }
}
