use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use rust_decimal::Decimal;
use uuid::Uuid;

use super::*;
use crate::rating::PriceModel;
use crate::rating::period::tests::arb_model;
use crate::rating::period::{AllocationUsage, PlanTerms, Rate, Segment, SkuInfo, rate_period};
use neocloud_schema::vocabulary::LineKind;

pub(crate) fn d(s: &str) -> Decimal {
    s.parse().expect("decimal")
}

pub(crate) fn t(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

pub(crate) const SKU: Uuid = Uuid::from_u128(1);

pub(crate) fn alloc(n: u128) -> Uuid {
    Uuid::from_u128(100 + n)
}

pub(crate) fn usage(n: u128, spot: bool, seconds: i64, failed: i64) -> AllocationUsage {
    AllocationUsage {
        allocation: alloc(n),
        sku: SKU,
        spot,
        units: Decimal::ONE,
        allocated_seconds: Decimal::from(seconds),
        sla_credit_seconds: Decimal::from(failed),
        ..AllocationUsage::default()
    }
}

pub(crate) fn input(rates: Vec<Rate>, usage: Vec<AllocationUsage>) -> PeriodInput {
    let skus = BTreeMap::from([(
        SKU,
        SkuInfo {
            name: "h100".into(),
            list_price_per_hour: d("2.50"),
            unit: "GPU".into(),
            region: "eu-west".into(),
            category: None,
            storage_class: None,
        },
    )]);
    PeriodInput {
        currency: "USD".into(),
        minor_digits: 2,
        skus,
        segments: vec![Segment {
            from: t("2026-11-01T00:00:00Z"),
            to: t("2026-12-01T00:00:00Z"),
            plan: PlanTerms {
                label: "p v1".into(),
                version_id: None,
                minimum_billable_seconds: 0,
                rates,
                commitment: None,
            },
            usage,
            metered: Vec::new(),
        }],
        month_fraction: Decimal::ONE,
        late: Vec::new(),
        grants: Vec::new(),
        tax: None,
    }
}

pub(crate) fn rate(metric: Metric, model: PriceModel, spot: Option<&str>) -> Rate {
    Rate {
        sku: SKU,
        metric,
        model,
        spot_unit_price: spot.map(d),
    }
}

pub(crate) fn per_unit(price: &str) -> PriceModel {
    PriceModel::PerUnit {
        unit_price: d(price),
    }
}

fn shares(input: &PeriodInput) -> BTreeMap<Uuid, Served> {
    let rated = rate_period(input).expect("rated");
    attribute(input, &rated.lines)
        .into_iter()
        .map(|s| (s.allocation, s))
        .collect()
}

#[test]
fn each_allocation_gets_what_its_own_hours_were_priced_at() {
    let rates = vec![
        rate(Metric::Allocated, per_unit("2.00"), Some("1.00")),
        rate(Metric::SlaCredit, per_unit("3.00"), None),
    ];
    let served = shares(&input(
        rates,
        vec![
            usage(1, false, 3600, 0),
            usage(2, false, 3 * 3600, 1800),
            usage(3, true, 7200, 0),
        ],
    ));
    assert_eq!(served[&alloc(1)].revenue, d("2.00"));
    assert_eq!(served[&alloc(2)].revenue, d("6.00"));
    assert_eq!(served[&alloc(2)].sla_credit, d("1.50"));
    assert_eq!(
        served[&alloc(3)].revenue,
        d("2.00"),
        "spot at its own price"
    );
    assert_eq!(served[&alloc(3)].unit_seconds, d("7200"));
}

#[test]
fn spot_usage_priced_with_on_demand_shares_its_lines() {
    let served = shares(&input(
        vec![rate(Metric::Allocated, per_unit("2.00"), None)],
        vec![usage(1, false, 3600, 0), usage(2, true, 3600, 0)],
    ));
    assert_eq!(served[&alloc(1)].revenue, d("2.00"));
    assert_eq!(served[&alloc(2)].revenue, d("2.00"));
}

fn terms(pricing: Pricing, bears: bool) -> EarningTerms {
    EarningTerms {
        version: 1,
        currency: "USD".into(),
        pricing,
        fee_percent: d("10"),
        provider_bears_sla: bears,
        hold_until_paid: false,
        payout_minimum: Decimal::ZERO,
        credit_notes_shared: false,
    }
}

fn place(currency: &str) -> Place<'_> {
    Place {
        form: SkuForm::WholeGpu,
        region: "eu-west",
        invoice_currency: currency,
        exchange_rate: None,
    }
}

#[test]
fn earnings_follow_the_agreement() {
    let served = Served {
        allocation: alloc(1),
        sku: SKU,
        unit_seconds: d("5400"),
        revenue: d("10.005"),
        sla_credit: d("1.25"),
    };
    let shared = earn(
        &terms(Pricing::RevenueShare(d("70")), true),
        &served,
        place("USD"),
    )
    .expect("earned");
    // 70 % of 10.005 = 7.0035 → 7.00; 10 % fee = 0.70; the SLA credit charged back.
    assert_eq!(
        (shared.gross, shared.fee, shared.sla_chargeback, shared.net),
        (d("7.00"), d("0.70"), d("1.25"), d("5.05"))
    );
    let fixed = Pricing::FixedRate(vec![FixedRate {
        form: SkuForm::WholeGpu,
        region: "eu-west".into(),
        price_per_unit_hour: d("1.10"),
    }]);
    let at_rate = earn(&terms(fixed.clone(), false), &served, place("EUR")).expect("earned");
    // 1.5 unit-hours × 1.10, in the provider's currency whatever the invoice's; the fee
    // 0.165 rounds half-even to 0.16.
    assert_eq!(
        (at_rate.gross, at_rate.fee, at_rate.net),
        (d("1.65"), d("0.16"), d("1.49"))
    );
    assert_eq!(at_rate.sla_chargeback, d("0.00"));
    assert!(
        earn(&terms(fixed, true), &served, place("EUR")).is_none(),
        "a chargeback in another currency waits"
    );
    assert!(
        earn(
            &terms(Pricing::RevenueShare(d("70")), true),
            &served,
            place("EUR")
        )
        .is_none(),
        "a revenue share in another currency needs a rate"
    );
    // An invoice in euros, a provider paid in dollars at 0.92 a euro: 70 % of 10.005 × 0.92
    // = 6.44322 → 6.44; the chargeback
    // 1.25 × 0.92 = 1.15; the fee 0.644 → 0.64.
    let converted = earn(
        &terms(Pricing::RevenueShare(d("70")), true),
        &served,
        Place {
            exchange_rate: Some(d("0.92")),
            ..place("EUR")
        },
    )
    .expect("earned");
    assert_eq!(
        (
            converted.gross,
            converted.fee,
            converted.sla_chargeback,
            converted.net
        ),
        (d("6.44"), d("0.64"), d("1.15"), d("4.65"))
    );
    assert_eq!(converted.exchange_rate, Some(d("0.92")));
    assert_eq!(
        shared.exchange_rate, None,
        "nothing converted in one currency"
    );
    let unpriced = Place {
        region: "us-east",
        ..place("USD")
    };
    let none = earn(
        &terms(Pricing::FixedRate(Vec::new()), false),
        &served,
        unpriced,
    )
    .expect("earned");
    assert_eq!(none.gross, d("0.00"));
    assert!(none.note.is_some());
}

proptest! {
    /// Whatever the price model, the shares add up to the lines they split: nothing
    /// invoiced for an allocation's use is lost or counted twice.
    #[test]
    fn shares_add_up_to_the_lines(
        model in arb_model(),
        spot_price in proptest::option::of(1i64..10_000),
        rows in proptest::collection::vec((any::<bool>(), 0i64..200_000, 0i64..20_000), 1..8),
    ) {
        let rates = vec![
            Rate { spot_unit_price: spot_price.map(|p| Decimal::new(p, 4)), ..rate(Metric::Allocated, model, None) },
            rate(Metric::SlaCredit, per_unit("0.50"), None),
        ];
        let usage: Vec<AllocationUsage> = rows
            .iter()
            .zip(1..)
            .map(|(&(spot, seconds, failed), n)| usage(n, spot, seconds, failed))
            .collect();
        let input = input(rates, usage);
        let rated = rate_period(&input).expect("rated");
        let served = attribute(&input, &rated.lines);
        let billed: Decimal = rated.lines.iter()
            .filter(|l| matches!(l.kind, LineKind::Usage | LineKind::FlatFee))
            .map(|l| l.amount).sum();
        let credited: Decimal = rated.lines.iter()
            .filter(|l| l.kind == LineKind::SlaCredit).map(|l| -l.amount).sum();
        let revenue: Decimal = served.iter().map(|s| s.revenue).sum();
        let credits: Decimal = served.iter().map(|s| s.sla_credit).sum();
        prop_assert_eq!(revenue.round_dp(12), billed.round_dp(12));
        prop_assert_eq!(credits.round_dp(12), credited.round_dp(12));
    }
}

#[test]
fn a_fixed_rate_shares_credit_notes_only_where_agreed() {
    let fixed = Pricing::FixedRate(vec![FixedRate {
        form: SkuForm::WholeGpu,
        region: "eu-west".into(),
        price_per_unit_hour: d("1.10"),
    }]);
    // The allocation earned 16.50 on 30.00 of revenue; a note gives 7.00 of it back.
    let claim = Claim {
        exchange_rate: None,
        revenue: d("30.00"),
        gross: d("16.50"),
    };
    let credited = |revenue: &str| Served {
        allocation: alloc(1),
        sku: SKU,
        unit_seconds: Decimal::ZERO,
        revenue: d(revenue),
        sla_credit: Decimal::ZERO,
    };
    let kept = take_back(
        &terms(fixed.clone(), false),
        &credited("7.00"),
        place("USD"),
        &claim,
    )
    .expect("priced");
    assert_eq!(
        (kept.gross, kept.net),
        (d("0.00"), d("0.00")),
        "the hours keep it"
    );
    let shared = EarningTerms {
        credit_notes_shared: true,
        ..terms(fixed, false)
    };
    // 16.50 × 7/30 = 3.85; the fee 0.385 rounds half-even to 0.38.
    let part = take_back(&shared, &credited("7.00"), place("USD"), &claim).expect("priced");
    assert_eq!(
        (part.gross, part.fee, part.net),
        (d("3.85"), d("0.38"), d("3.47"))
    );
    // A full note gives back exactly what was earned, never more.
    let all = take_back(&shared, &credited("30.00"), place("USD"), &claim).expect("priced");
    assert_eq!(all.gross, claim.gross);
    let more = take_back(&shared, &credited("31.00"), place("USD"), &claim).expect("priced");
    assert_eq!(more.gross, claim.gross);
    // A revenue share ignores the flag: 70 % of what was given back.
    let share = take_back(
        &terms(Pricing::RevenueShare(d("70")), false),
        &credited("7.00"),
        place("USD"),
        &claim,
    )
    .expect("priced");
    assert_eq!(share.gross, d("4.90"));
}
