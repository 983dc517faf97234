//! The FOCUS export: an invoice's lines in the FinOps Open Cost and Usage Specification
//! 1.2 column layout, one row per line (docs/invoicing.md, "FOCUS export", says how each
//! column is derived). An empty cell is null.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use neocloud_metering::invoicing::whole_second_up;
use neocloud_metering::rating::period::{Line, SkuInfo};
use neocloud_metering::tax::TaxSummary;
use neocloud_schema::entity::invoice;
use neocloud_schema::vocabulary::{LineKind, Metric, ServiceCategory};
use rust_decimal::Decimal;
use serde_json::Value;
use uuid::Uuid;

use super::InvoiceView;

/// The columns, FOCUS first, then this provider's own (`x_`).
pub const COLUMNS: [&str; 39] = [
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ListUnitPrice",
    "ContractedCost",
    "ContractedUnitPrice",
    "ConsumedQuantity",
    "ConsumedUnit",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "InvoiceId",
    "InvoiceIssuerName",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceSubcategory",
    "ServiceName",
    "SkuId",
    "SkuMeter",
    "SkuPriceId",
    "x_LineKind",
    "x_Tier",
];

/// Cells that hold free text (a spreadsheet must not run them as formulas).
pub const TEXT_COLUMNS: [usize; 4] = [1, 9, 29, 33];

/// The invoice as FOCUS rows: a cell per column of `COLUMNS`, per line, then one `Tax`
/// row per tax rate (so `BilledCost` sums to the invoice's total).
pub fn rows(view: &InvoiceView, operator: &str, tenant: &str) -> Vec<Vec<String>> {
    let skus = skus_of(&view.rating);
    let lines = view
        .lines
        .iter()
        .map(|line| Charge::of(view, &skus, line).cells(operator, tenant));
    let taxes = view
        .taxes
        .iter()
        .map(|t| tax_cells(view, t, operator, tenant));
    lines.chain(taxes).collect()
}

/// A rate's tax as a `Tax` charge over the billing period.
fn tax_cells(view: &InvoiceView, tax: &TaxSummary, operator: &str, tenant: &str) -> Vec<String> {
    let invoice = &view.invoice;
    let description = format!(
        "{} tax {}% of {}",
        tax.jurisdiction,
        tax.percent.normalize(),
        tax.taxable
    );
    let number = invoice.number.clone();
    let charge = PeriodCharge {
        document: &number.unwrap_or_else(|| invoice.id.to_string()),
        category: "Tax",
        class: "",
        description: &description,
        amount: &tax.tax.to_string(),
        kind: &format!("tax_{}", tax.category.as_str()),
    };
    charge.cells(invoice, operator, tenant)
}

/// A correction on a credit note (`document`) of `invoice`'s period: a negative `Credit`
/// or `Tax` charge.
pub fn correction(
    invoice: &invoice::Model,
    document: &str,
    category: &str,
    description: &str,
    amount: &str,
    operator: &str,
    tenant: &str,
) -> Vec<String> {
    let charge = PeriodCharge {
        document,
        category,
        class: "Correction",
        description,
        amount,
        kind: "credit_note",
    };
    charge.cells(invoice, operator, tenant)
}

/// A charge over a whole billing period that no rated line carries.
struct PeriodCharge<'a> {
    /// The invoice or credit note it appears on.
    document: &'a str,
    category: &'a str,
    class: &'a str,
    description: &'a str,
    amount: &'a str,
    kind: &'a str,
}

impl PeriodCharge<'_> {
    fn cells(&self, invoice: &invoice::Model, operator: &str, tenant: &str) -> Vec<String> {
        let mut cells = vec![String::new(); COLUMNS.len()];
        let mut set = |name: &str, value: &str| {
            if let Some(i) = COLUMNS.iter().position(|c| *c == name) {
                value.clone_into(&mut cells[i]);
            }
        };
        let start = time(invoice.period_start);
        let end = time(whole_second_up(invoice.period_end));
        set("BillingAccountId", &invoice.tenant_id.to_string());
        set("BillingAccountName", tenant);
        set("BillingCurrency", &invoice.currency);
        for (name, value) in [
            ("BillingPeriodStart", &start),
            ("ChargePeriodStart", &start),
            ("BillingPeriodEnd", &end),
            ("ChargePeriodEnd", &end),
        ] {
            set(name, value);
        }
        set("ChargeCategory", self.category);
        set("ChargeClass", self.class);
        set("ChargeDescription", self.description);
        set("ChargeFrequency", "Usage-Based");
        for cost in ["BilledCost", "EffectiveCost", "ListCost", "ContractedCost"] {
            set(cost, self.amount);
        }
        set("InvoiceId", self.document);
        for name in ["InvoiceIssuerName", "ProviderName", "PublisherName"] {
            set(name, operator);
        }
        set("ServiceCategory", "Other");
        set("ServiceSubcategory", "Other (Other)");
        set(
            "ServiceName",
            if self.category == "Tax" {
                "Tax"
            } else {
                "Credit note"
            },
        );
        set("x_LineKind", self.kind);
        cells
    }
}

/// The SKUs as the invoice was rated with them (list price, unit, region).
fn skus_of(rating: &Value) -> BTreeMap<Uuid, SkuInfo> {
    rating
        .get("input")
        .and_then(|input| input.get("skus"))
        .and_then(|skus| serde_json::from_value(skus.clone()).ok())
        .unwrap_or_default()
}

/// One line with what FOCUS needs to know about it.
struct Charge<'a> {
    view: &'a InvoiceView,
    line: &'a Line,
    sku: Option<&'a SkuInfo>,
    /// The trace of the charge itself: for an adjustment, the line it corrects.
    source: &'a Value,
    category: &'static str,
}

impl<'a> Charge<'a> {
    fn of(view: &'a InvoiceView, skus: &'a BTreeMap<Uuid, SkuInfo>, line: &'a Line) -> Self {
        let source = match line.kind {
            LineKind::Adjustment => line.trace.get("original").unwrap_or(&line.trace),
            _ => &line.trace,
        };
        Charge {
            view,
            line,
            sku: line.sku.and_then(|s| skus.get(&s)),
            source,
            category: category(line),
        }
    }

    fn cells(&self, operator: &str, tenant: &str) -> Vec<String> {
        let (line, invoice) = (self.line, &self.view.invoice);
        let (charge_start, charge_end) = self.charge_period();
        let list_price = self.list_unit_price();
        let contracted_price = self.is_priced_usage().then_some(line.unit_price);
        let consumed = self.consumed();
        let (resource_id, resource_name, resource_type) = self.resource();
        let region = self.sku.map(|s| s.region.clone()).unwrap_or_default();
        let service = self.service();
        vec![
            invoice.tenant_id.to_string(),
            tenant.to_owned(),
            invoice.currency.clone(),
            time(invoice.period_start),
            time(whole_second_up(invoice.period_end)),
            time(charge_start),
            time(whole_second_up(charge_end)),
            self.category.to_owned(),
            if self.is_correction() {
                "Correction"
            } else {
                ""
            }
            .to_owned(),
            line.description.clone(),
            frequency(line.kind).to_owned(),
            line.amount.to_string(),
            line.amount.to_string(),
            cost(list_price, line).to_string(),
            opt(list_price),
            cost(contracted_price, line).to_string(),
            opt(contracted_price),
            opt(consumed.as_ref().map(|c| c.0)),
            consumed.map(|c| c.1).unwrap_or_default(),
            self.pricing_category().to_owned(),
            line.quantity.to_string(),
            line.unit.clone(),
            invoice
                .number
                .clone()
                .unwrap_or_else(|| invoice.id.to_string()),
            operator.to_owned(),
            operator.to_owned(),
            operator.to_owned(),
            region.clone(),
            region,
            resource_id,
            resource_name,
            resource_type.to_owned(),
            service.0,
            service.1,
            service.2,
            opt(line.sku),
            opt(line.metric),
            self.sku_price_id(),
            line.kind.to_string(),
            opt(line.tier.map(|t| t + 1)),
        ]
    }

    /// ServiceCategory, ServiceSubcategory and ServiceName: GPU compute; for a volume SKU
    /// `Storage`, `Block Storage` or `Object Storage`, and the SKU's name; for a metered
    /// SKU its service category (`Other` when it names none), `Other (<category>)`, and
    /// the SKU's name.
    fn service(&self) -> (String, String, String) {
        let class = self.sku.and_then(|s| s.storage_class);
        match (self.line.metric, self.sku, class) {
            (_, Some(sku), Some(class)) => (
                ServiceCategory::Storage.focus_name().to_owned(),
                class.focus_subcategory().to_owned(),
                sku.name.clone(),
            ),
            (Some(Metric::Metered), Some(sku), None) => {
                let category = sku.category.unwrap_or(ServiceCategory::Other).focus_name();
                (
                    category.to_owned(),
                    format!("Other ({category})"),
                    sku.name.clone(),
                )
            }
            _ => (
                "Compute".to_owned(),
                "Virtual Machines".to_owned(),
                "GPU compute".to_owned(),
            ),
        }
    }

    fn is_correction(&self) -> bool {
        self.line.kind == LineKind::Adjustment
    }

    /// A usage charge priced per unit (what FOCUS requires unit prices for).
    fn is_priced_usage(&self) -> bool {
        self.category == "Usage"
    }

    /// The charge's own period: the span its allocations were held, else its plan
    /// segment (an adjustment: the corrected line's), else the billing period.
    fn charge_period(&self) -> (DateTime<Utc>, DateTime<Utc>) {
        let span = |key: &str| {
            let pair = self.source.get(key)?.as_array()?;
            let at = |i: usize| pair.get(i)?.as_str()?.parse::<DateTime<Utc>>().ok();
            Some((at(0)?, at(1)?))
        };
        let invoice = &self.view.invoice;
        span("held")
            .or_else(|| span("segment"))
            .unwrap_or((invoice.period_start, invoice.period_end))
    }

    /// The catalog's on-demand price of one pricing unit: the SKU's list price per
    /// unit-hour for held time, per unit for a metered SKU (× the package size for a
    /// package); metrics and fees the
    /// catalog does not price are listed at the plan's price. Null for credits and
    /// adjustments.
    fn list_unit_price(&self) -> Option<Decimal> {
        if !self.is_priced_usage() {
            return None;
        }
        let held_time = matches!(self.line.metric, Some(Metric::Allocated | Metric::Metered));
        match self.sku {
            Some(sku) if held_time && self.line.kind != LineKind::FlatFee => {
                let size = decimal_at(self.source, "package_size").unwrap_or(Decimal::ONE);
                Some(sku.list_price_per_hour * size)
            }
            _ => Some(self.line.unit_price),
        }
    }

    /// (quantity, unit) consumed, for usage: what was used, whatever it was priced by.
    fn consumed(&self) -> Option<(Decimal, String)> {
        if !self.is_priced_usage() {
            return None;
        }
        let whole_quantity =
            self.line.kind == LineKind::FlatFee || self.source.get("package_size").is_some();
        let quantity = if whole_quantity {
            decimal_at(self.source, "period_quantity")?
        } else {
            self.line.quantity
        };
        let unit = self
            .source
            .get("unit")
            .and_then(Value::as_str)
            .map_or_else(|| self.line.unit.clone(), str::to_owned);
        Some((quantity, unit))
    }

    fn pricing_category(&self) -> &'static str {
        match (self.is_priced_usage(), self.is_correction()) {
            (true, false) if self.source.get("priced_as") == Some(&Value::from("spot")) => {
                "Dynamic"
            }
            (true, false) => "Standard",
            _ => "",
        }
    }

    /// (ResourceId, ResourceName, ResourceType): the allocation when the line is for one,
    /// else the SKU it charges; none for invoice-wide lines.
    fn resource(&self) -> (String, String, &'static str) {
        if let Some(allocation) = self.source.get("allocation").and_then(Value::as_str) {
            // A volume's line names the volume where an allocation's names the allocation.
            let volume = self.sku.is_some_and(|s| s.storage_class.is_some());
            let kind = if volume { "Volume" } else { "Allocation" };
            return (allocation.to_owned(), String::new(), kind);
        }
        match self.line.sku {
            Some(sku) => (
                sku.to_string(),
                self.line.sku_name.clone().unwrap_or_default(),
                "SKU",
            ),
            None => (String::new(), String::new(), ""),
        }
    }

    /// The price the line was charged at: `{plan version or "list"}:{sku}:{METRIC}`, with
    /// `:spot`, `:tier{n}` and `:fee` where they apply.
    fn sku_price_id(&self) -> String {
        let (Some(sku), Some(metric)) = (self.line.sku, self.line.metric) else {
            return String::new();
        };
        let book = self
            .source
            .get("plan_version")
            .and_then(Value::as_str)
            .unwrap_or("list");
        let mut id = format!("{book}:{sku}:{metric}");
        if self.source.get("priced_as") == Some(&Value::from("spot")) {
            id.push_str(":spot");
        }
        if let Some(tier) = self.line.tier {
            id.push_str(&format!(":tier{}", tier + 1));
        }
        // A flat fee, or the correction of one (its unit says so).
        if self.line.kind == LineKind::FlatFee || self.line.unit == "fee" {
            id.push_str(":fee");
        }
        id
    }
}

/// FOCUS ChargeCategory: usage, and corrections of usage, are Usage; SLA credits and
/// credits are Credit, and so is the commitment discount (a reduction the provider
/// grants); the commitment's true-up (owed whatever is used) is an Adjustment.
fn category(line: &Line) -> &'static str {
    match line.kind {
        LineKind::Usage | LineKind::FlatFee => "Usage",
        LineKind::Adjustment if line.metric == Some(Metric::SlaCredit) => "Credit",
        LineKind::Adjustment => "Usage",
        LineKind::Credit | LineKind::SlaCredit | LineKind::CommitmentDiscount => "Credit",
        LineKind::CommitmentTrueUp => "Adjustment",
    }
}

fn frequency(kind: LineKind) -> &'static str {
    match kind {
        LineKind::Usage | LineKind::FlatFee | LineKind::Adjustment => "Usage-Based",
        LineKind::CommitmentDiscount | LineKind::CommitmentTrueUp => "Recurring",
        LineKind::Credit | LineKind::SlaCredit => "One-Time",
    }
}

/// A cost column: `unit price × PricingQuantity` where there is a unit price, else what
/// was billed.
fn cost(unit_price: Option<Decimal>, line: &Line) -> Decimal {
    unit_price.map_or(line.amount, |p| (p * line.quantity).normalize())
}

fn decimal_at(trace: &Value, key: &str) -> Option<Decimal> {
    trace.get(key)?.as_str()?.parse().ok()
}

/// FOCUS date/time: UTC, whole seconds, `Z`.
fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_whole_utc_seconds_with_z() {
        let t: DateTime<Utc> = "2026-11-29T17:00:01.250Z".parse().expect("time");
        assert_eq!(time(t), "2026-11-29T17:00:01Z");
        assert_eq!(time(whole_second_up(t)), "2026-11-29T17:00:02Z");
    }

    #[test]
    fn corrections_keep_the_category_of_what_they_correct() {
        let line = |kind, metric| Line {
            kind,
            description: String::new(),
            sku: None,
            sku_name: None,
            metric,
            tier: None,
            quantity: Decimal::ONE,
            unit: String::new(),
            unit_price: Decimal::ONE,
            amount_exact: Decimal::ONE,
            amount: Decimal::ONE,
            adjusts_invoice: None,
            trace: Value::Null,
            tax: None,
        };
        assert_eq!(
            category(&line(LineKind::Adjustment, Some(Metric::Active))),
            "Usage"
        );
        assert_eq!(
            category(&line(LineKind::Adjustment, Some(Metric::SlaCredit))),
            "Credit"
        );
        assert_eq!(
            category(&line(LineKind::CommitmentTrueUp, None)),
            "Adjustment"
        );
    }
}
