//! What a plan version would have charged: a finalized invoice's stored rating input,
//! every segment rated by the proposed terms instead of the ones in force. The usage,
//! the tax treatment, the credit grants as they stood and the late usage of earlier
//! periods stay as the invoice froze them, so the two totals differ by the plan alone.

use neocloud_schema::entity::invoice;
use rust_decimal::Decimal;

use super::PlanVersion;
use crate::rating::RateError;
use crate::rating::period::{
    ALLOCATED_UNIT_RULE, Commitment, PeriodInput, PlanTerms, Rate, RatedInvoice, rate_period,
};

impl PlanVersion {
    /// The version's terms as rating takes them, labelled `plan (proposed)`.
    pub fn terms(&self) -> PlanTerms {
        PlanTerms {
            label: format!("{} (proposed)", self.plan),
            version_id: None,
            minimum_billable_seconds: self.minimum_billable_seconds,
            rates: self
                .rates
                .iter()
                .map(|r| Rate {
                    sku: r.sku,
                    metric: r.metric,
                    model: r.model.clone(),
                    spot_unit_price: r.spot_unit_price,
                })
                .collect(),
            commitment: self
                .commitment
                .map(|(monthly_minimum, discount_pct)| Commitment {
                    monthly_minimum,
                    discount_pct,
                }),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    #[error("the invoice is in {invoice}, the plan in {plan}")]
    Currency { invoice: String, plan: String },
    /// The invoice cannot be rated again (why).
    #[error("{0}")]
    NotRerated(String),
    #[error(transparent)]
    Rate(#[from] RateError),
}

/// `invoice` rated again with `version` in force over its whole period.
pub fn rerate(
    invoice: &invoice::Model,
    version: &PlanVersion,
) -> Result<RatedInvoice, PreviewError> {
    if invoice.currency != version.currency.code() {
        return Err(PreviewError::Currency {
            invoice: invoice.currency.clone(),
            plan: version.currency.to_string(),
        });
    }
    let mut input = stored_input(invoice)?;
    let terms = version.terms();
    for segment in &mut input.segments {
        segment.plan = terms.clone();
    }
    Ok(rate_period(&input)?)
}

/// The rating input a finalized invoice froze, if it was rated by today's rule for
/// ALLOCATED units (older ones billed GPU shares and would compare unlike with like).
fn stored_input(invoice: &invoice::Model) -> Result<PeriodInput, PreviewError> {
    let rating = invoice
        .rating
        .as_ref()
        .filter(|r| r.get("allocated_unit").and_then(|u| u.as_str()) == Some(ALLOCATED_UNIT_RULE))
        .ok_or_else(|| {
            PreviewError::NotRerated("the invoice was rated before units were per SKU".into())
        })?;
    let input = rating
        .get("input")
        .cloned()
        .ok_or_else(|| PreviewError::NotRerated("the invoice keeps no rating input".into()))?;
    serde_json::from_value(input)
        .map_err(|e| PreviewError::NotRerated(format!("the invoice's rating input: {e}")))
}

/// The subtotal's change from the invoice as finalized to the proposal.
pub fn difference(invoice: &invoice::Model, proposed: &RatedInvoice) -> Decimal {
    proposed.subtotal - invoice.subtotal.get()
}
