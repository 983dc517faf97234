//! Checking a provider agreement (pure): what the provider earns — a share of what
//! tenants are invoiced for its hardware, or a fixed price per unit-hour per SKU form and
//! region — the platform's fee, who bears SLA credits, and when it is paid. A version
//! takes effect from its start, never before now, and after the version before it.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use neocloud_schema::money::{minor_unit_digits_of, parse_plain_decimal};
use neocloud_schema::slug::Slug;
use neocloud_schema::vocabulary::SkuForm;
use rust_decimal::Decimal;
use serde::Serialize;

use crate::error::{ApiError, ApiResult};

/// How the provider's earnings are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarningModel {
    RevenueShare,
    FixedRate,
}

impl EarningModel {
    pub fn as_str(self) -> &'static str {
        match self {
            EarningModel::RevenueShare => "revenue_share",
            EarningModel::FixedRate => "fixed_rate",
        }
    }

    pub fn parse(stored: &str) -> Option<EarningModel> {
        [EarningModel::RevenueShare, EarningModel::FixedRate]
            .into_iter()
            .find(|m| m.as_str() == stored)
    }
}

/// Who gives up the SLA credits tenants get for a failed GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlaBearer {
    /// The provider whose hardware failed (the default).
    Provider,
    Platform,
}

impl SlaBearer {
    pub fn as_str(self) -> &'static str {
        match self {
            SlaBearer::Provider => "provider",
            SlaBearer::Platform => "platform",
        }
    }

    pub fn parse(stored: &str) -> Option<SlaBearer> {
        [SlaBearer::Provider, SlaBearer::Platform]
            .into_iter()
            .find(|b| b.as_str() == stored)
    }
}

/// A fixed price, as asked.
#[derive(Debug, Clone)]
pub struct RateInput {
    pub form: SkuForm,
    pub region: String,
    pub price_per_unit_hour: String,
}

/// A fixed price, checked (stored as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FixedRate {
    pub form: SkuForm,
    pub region: String,
    pub price_per_unit_hour: Decimal,
}

/// An agreement as asked.
#[derive(Debug, Clone)]
pub struct TermsInput {
    pub effective_from: Option<DateTime<Utc>>,
    pub model: EarningModel,
    pub revenue_share_percent: Option<String>,
    pub fixed_rates: Vec<RateInput>,
    pub platform_fee_percent: String,
    pub sla_credits_borne_by: SlaBearer,
    pub payout_minimum: String,
    pub hold_until_paid: bool,
    /// For a fixed rate: whether credit notes take back part of what was earned (no by
    /// default); a revenue share always shares them.
    pub share_credit_notes: Option<bool>,
}

/// An agreement, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Terms {
    pub effective_from: DateTime<Utc>,
    pub model: EarningModel,
    pub revenue_share_percent: Option<Decimal>,
    pub fixed_rates: Vec<FixedRate>,
    pub platform_fee_percent: Decimal,
    pub sla_credits_borne_by: SlaBearer,
    pub payout_minimum: Decimal,
    pub hold_until_paid: bool,
    pub credit_notes_shared: bool,
}

/// The most fixed prices one agreement holds.
pub const MAX_RATES: usize = 64;

fn decimal(field: &'static str, text: &str, places: u32) -> ApiResult<Decimal> {
    let value = parse_plain_decimal(text.trim()).map_err(|e| ApiError::invalid(field, e))?;
    if value.scale() > places {
        return Err(ApiError::invalid(
            field,
            format!("at most {places} decimal places"),
        ));
    }
    Ok(value)
}

fn percent(field: &'static str, text: &str) -> ApiResult<Decimal> {
    let value = decimal(field, text, 4)?;
    if value < Decimal::ZERO || value > Decimal::ONE_HUNDRED {
        return Err(ApiError::invalid(field, "a percentage from 0 to 100"));
    }
    Ok(value)
}

/// Checks `input` for a provider paid in `currency`, against the provider's latest
/// version (`last_start`) and `now`; the first refused field is named.
pub fn check(
    input: TermsInput,
    currency: &str,
    last_start: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> ApiResult<Terms> {
    let effective_from = input.effective_from.unwrap_or(now);
    if effective_from < now - chrono::TimeDelta::seconds(1) {
        return Err(ApiError::invalid(
            "effectiveFrom",
            "an agreement takes effect from now or later, never retroactively",
        ));
    }
    if let Some(last) = last_start.filter(|last| effective_from <= *last) {
        return Err(ApiError::invalid(
            "effectiveFrom",
            format!(
                "must be after the latest version's start, {}",
                last.to_rfc3339()
            ),
        ));
    }
    let (revenue_share_percent, fixed_rates) = earnings(&input)?;
    let platform_fee_percent = percent("platformFeePercent", &input.platform_fee_percent)?;
    if platform_fee_percent == Decimal::ONE_HUNDRED {
        return Err(ApiError::invalid(
            "platformFeePercent",
            "below 100: the provider must earn something",
        ));
    }
    let payout_minimum = decimal(
        "payoutMinimum",
        &input.payout_minimum,
        minor_unit_digits_of(currency),
    )?;
    if payout_minimum < Decimal::ZERO {
        return Err(ApiError::invalid("payoutMinimum", "must not be negative"));
    }
    let credit_notes_shared = credit_notes_shared(&input)?;
    Ok(Terms {
        effective_from,
        model: input.model,
        revenue_share_percent,
        fixed_rates,
        platform_fee_percent,
        sla_credits_borne_by: input.sla_credits_borne_by,
        payout_minimum,
        hold_until_paid: input.hold_until_paid,
        credit_notes_shared,
    })
}

/// Whether credit notes take back part of the earnings: always for a revenue share (it
/// is a share of what tenants pay, after credit notes too), as agreed for a fixed rate.
fn credit_notes_shared(input: &TermsInput) -> ApiResult<bool> {
    match (input.model, input.share_credit_notes) {
        (EarningModel::RevenueShare, Some(false)) => Err(ApiError::invalid(
            "shareCreditNotes",
            "a revenue share always shares credit notes: it is a share of what tenants pay",
        )),
        (EarningModel::RevenueShare, _) => Ok(true),
        (EarningModel::FixedRate, shared) => Ok(shared.unwrap_or(false)),
    }
}

/// The share (revenue share) or the prices (fixed rate), and never both.
fn earnings(input: &TermsInput) -> ApiResult<(Option<Decimal>, Vec<FixedRate>)> {
    match (input.model, &input.revenue_share_percent) {
        (EarningModel::RevenueShare, Some(share)) => {
            if !input.fixed_rates.is_empty() {
                return Err(ApiError::invalid(
                    "fixedRates",
                    "a revenue share takes no fixed rates",
                ));
            }
            let share = percent("revenueSharePercent", share)?;
            if share.is_zero() {
                return Err(ApiError::invalid(
                    "revenueSharePercent",
                    "above 0: the provider must earn something",
                ));
            }
            Ok((Some(share), Vec::new()))
        }
        (EarningModel::RevenueShare, None) => Err(ApiError::invalid(
            "revenueSharePercent",
            "a revenue share needs its percentage",
        )),
        (EarningModel::FixedRate, Some(_)) => Err(ApiError::invalid(
            "revenueSharePercent",
            "a fixed rate takes no revenue share",
        )),
        (EarningModel::FixedRate, None) => Ok((None, fixed_rates(&input.fixed_rates)?)),
    }
}

fn fixed_rates(rates: &[RateInput]) -> ApiResult<Vec<FixedRate>> {
    if rates.is_empty() || rates.len() > MAX_RATES {
        return Err(ApiError::invalid(
            "fixedRates",
            format!("1 to {MAX_RATES} prices"),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(rates.len());
    for rate in rates {
        if !matches!(
            rate.form,
            SkuForm::WholeGpu | SkuForm::Mig | SkuForm::Fractional | SkuForm::WholeNode
        ) {
            return Err(ApiError::invalid(
                "fixedRates.form",
                "a hardware form: WHOLE_GPU, MIG, FRACTIONAL or WHOLE_NODE",
            ));
        }
        let region = Slug::parse(&rate.region)
            .map(Slug::into_string)
            .map_err(|rule| ApiError::invalid("fixedRates.region", rule))?;
        let price = decimal("fixedRates.pricePerUnitHour", &rate.price_per_unit_hour, 6)?;
        if price <= Decimal::ZERO || price > Decimal::from(1_000_000) {
            return Err(ApiError::invalid(
                "fixedRates.pricePerUnitHour",
                "above 0 and at most 1,000,000",
            ));
        }
        if !seen.insert((rate.form.as_str(), region.clone())) {
            return Err(ApiError::invalid(
                "fixedRates",
                format!("{} in {region} is priced twice", rate.form),
            ));
        }
        out.push(FixedRate {
            form: rate.form,
            region,
            price_per_unit_hour: price,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-12-06T12:00:00Z".parse().unwrap()
    }

    fn share(p: &str) -> TermsInput {
        TermsInput {
            effective_from: None,
            model: EarningModel::RevenueShare,
            revenue_share_percent: Some(p.into()),
            fixed_rates: Vec::new(),
            platform_fee_percent: "5".into(),
            sla_credits_borne_by: SlaBearer::Provider,
            payout_minimum: "100.00".into(),
            hold_until_paid: true,
            share_credit_notes: None,
        }
    }

    fn field(r: ApiResult<Terms>) -> String {
        match r {
            Err(ApiError::InvalidInput { field, .. }) => field,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_revenue_share_is_a_percentage_and_nothing_else() {
        let ok = check(share("70"), "EUR", None, now()).unwrap();
        assert_eq!(ok.revenue_share_percent, Some(Decimal::from(70)));
        assert_eq!(ok.effective_from, now());
        assert_eq!(
            field(check(share("0"), "EUR", None, now())),
            "revenueSharePercent"
        );
        assert_eq!(
            field(check(share("100.5"), "EUR", None, now())),
            "revenueSharePercent"
        );
        let mut both = share("70");
        both.fixed_rates.push(RateInput {
            form: SkuForm::WholeGpu,
            region: "eu-west".into(),
            price_per_unit_hour: "1.5".into(),
        });
        assert_eq!(field(check(both, "EUR", None, now())), "fixedRates");
        let mut fee = share("70");
        fee.platform_fee_percent = "100".into();
        assert_eq!(field(check(fee, "EUR", None, now())), "platformFeePercent");
        let mut minimum = share("70");
        minimum.payout_minimum = "1.5".into();
        assert_eq!(field(check(minimum, "JPY", None, now())), "payoutMinimum");
        assert!(
            ok.credit_notes_shared,
            "a share of what tenants pay, after notes too"
        );
        let mut kept = share("70");
        kept.share_credit_notes = Some(false);
        assert_eq!(field(check(kept, "EUR", None, now())), "shareCreditNotes");
    }

    #[test]
    fn versions_start_from_now_and_in_order() {
        let mut past = share("70");
        past.effective_from = Some(now() - chrono::TimeDelta::hours(1));
        assert_eq!(field(check(past, "EUR", None, now())), "effectiveFrom");
        let later = now() + chrono::TimeDelta::days(30);
        let mut next = share("70");
        next.effective_from = Some(later);
        assert_eq!(
            field(check(next.clone(), "EUR", Some(later), now())),
            "effectiveFrom"
        );
        assert!(check(next, "EUR", Some(now()), now()).is_ok());
    }

    #[test]
    fn fixed_rates_are_hardware_prices_once_per_form_and_region() {
        let rate = |form, region: &str, price: &str| RateInput {
            form,
            region: region.into(),
            price_per_unit_hour: price.into(),
        };
        let fixed = |rates| TermsInput {
            model: EarningModel::FixedRate,
            revenue_share_percent: None,
            fixed_rates: rates,
            ..share("1")
        };
        let ok = check(
            fixed(vec![
                rate(SkuForm::WholeGpu, "eu-west", "1.85"),
                rate(SkuForm::Mig, "eu-west", "0.31"),
            ]),
            "EUR",
            None,
            now(),
        )
        .unwrap();
        assert_eq!(ok.fixed_rates.len(), 2);
        assert!(
            !ok.credit_notes_shared,
            "a fixed rate keeps what hours earned unless agreed"
        );
        let shared = TermsInput {
            share_credit_notes: Some(true),
            ..fixed(vec![rate(SkuForm::WholeGpu, "eu-west", "1.85")])
        };
        assert!(
            check(shared, "EUR", None, now())
                .unwrap()
                .credit_notes_shared
        );
        let twice = vec![
            rate(SkuForm::WholeGpu, "eu-west", "1"),
            rate(SkuForm::WholeGpu, "eu-west", "2"),
        ];
        assert_eq!(field(check(fixed(twice), "EUR", None, now())), "fixedRates");
        let metered = vec![rate(SkuForm::Metered, "eu-west", "1")];
        assert_eq!(
            field(check(fixed(metered), "EUR", None, now())),
            "fixedRates.form"
        );
        let free = vec![rate(SkuForm::WholeGpu, "eu-west", "0")];
        assert_eq!(
            field(check(fixed(free), "EUR", None, now())),
            "fixedRates.pricePerUnitHour"
        );
        assert_eq!(
            field(check(fixed(Vec::new()), "EUR", None, now())),
            "fixedRates"
        );
    }
}
