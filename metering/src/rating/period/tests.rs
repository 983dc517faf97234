use chrono::{DateTime, Utc};
use proptest::prelude::*;
use rust_decimal::Decimal;
use uuid::Uuid;

use super::*;
use crate::rating::Tier;

fn t(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

fn sku(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn skus() -> BTreeMap<Uuid, SkuInfo> {
    (1..=3)
        .map(|n| {
            (
                sku(n),
                SkuInfo {
                    name: format!("sku-{n}"),
                    list_price_per_hour: Decimal::new(250, 2),
                    unit: "GPU".to_owned(),
                    region: "eu-west".to_owned(),
                    category: None,
                    storage_class: None,
                },
            )
        })
        .collect()
}

/// Generated price models: per-unit, graduated or volume tiers, packages (shared with
/// the statements' tests).
pub(crate) fn arb_model() -> impl Strategy<Value = PriceModel> {
    let price = (0i64..100_000).prop_map(|c| Decimal::new(c, 4));
    prop_oneof![
        price
            .clone()
            .prop_map(|unit_price| PriceModel::PerUnit { unit_price }),
        (
            1i64..500,
            price.clone(),
            price.clone(),
            0i64..1000,
            any::<bool>()
        )
            .prop_map(|(bound, p1, p2, fee, graduated)| {
                let tiers = vec![
                    Tier {
                        up_to: Some(Decimal::new(bound, 1)),
                        unit_price: p1,
                        flat_fee: Decimal::ZERO,
                    },
                    Tier {
                        up_to: None,
                        unit_price: p2,
                        flat_fee: Decimal::new(fee, 2),
                    },
                ];
                if graduated {
                    PriceModel::Graduated { tiers }
                } else {
                    PriceModel::Volume { tiers }
                }
            }),
        (1i64..100, price).prop_map(|(size, price)| PriceModel::Package {
            size: Decimal::from(size),
            price,
        }),
    ]
}

fn arb_minutes() -> impl Strategy<Value = Vec<MinuteUsage>> {
    proptest::collection::vec(
        (
            1u128..=4,
            0i64..=60_000,
            0i64..=6_000_000,
            0i64..=500,
            0i64..=60,
        ),
        0..300,
    )
    .prop_map(|rows| {
        rows.into_iter()
            .map(|(alloc, active, memory, energy, failed)| MinuteUsage {
                allocation: Uuid::from_u128(100 + alloc),
                sku: sku(1 + alloc % 3),
                spot: alloc == 4,
                units: Decimal::ONE,
                allocated_seconds: Decimal::from(60 - failed),
                sla_credit_seconds: Decimal::from(failed),
                active_seconds: Decimal::new(active, 3),
                memory_gib_seconds: Decimal::new(memory, 3),
                energy_kwh: Decimal::new(energy, 6),
            })
            .collect()
    })
}

fn plan(models: Vec<PriceModel>, commitment: Option<Commitment>) -> PlanTerms {
    let metrics = [
        Metric::Allocated,
        Metric::Active,
        Metric::Memory,
        Metric::Energy,
    ];
    PlanTerms {
        label: "p v1".into(),
        version_id: None,
        minimum_billable_seconds: 60,
        rates: models
            .into_iter()
            .enumerate()
            .map(|(i, model)| Rate {
                sku: sku(1 + (i as u128 % 3)),
                metric: metrics[i % metrics.len()],
                spot_unit_price: (i == 0).then(|| Decimal::new(90, 2)),
                model,
            })
            .collect(),
        commitment,
    }
}

fn input(plan: PlanTerms, usage: Vec<AllocationUsage>, grants: Vec<GrantBalance>) -> PeriodInput {
    PeriodInput {
        currency: "USD".into(),
        minor_digits: 2,
        skus: skus(),
        segments: vec![Segment {
            from: t("2026-11-01T00:00:00Z"),
            to: t("2026-12-01T00:00:00Z"),
            plan,
            usage,
            metered: Vec::new(),
        }],
        month_fraction: Decimal::ONE,
        late: Vec::new(),
        tax: None,
        grants,
    }
}

fn arb_grants() -> impl Strategy<Value = Vec<GrantBalance>> {
    proptest::collection::vec((1i64..100_000, proptest::option::of(0i64..100_000)), 0..4).prop_map(
        |gs| {
            gs.into_iter()
                .enumerate()
                .map(|(i, (available, cap))| GrantBalance {
                    grant: Uuid::from_u128(900 + i as u128),
                    description: format!("grant {i}"),
                    available: Decimal::new(available, 2),
                    expires_at: cap.map(|_| t("2026-11-15T00:00:00Z")),
                    accrued_cap: cap.map(|c| Decimal::new(c, 2)),
                })
                .collect()
        },
    )
}

fn arb_commitment() -> impl Strategy<Value = Option<Commitment>> {
    proptest::option::of(
        (0i64..100_000, 0i64..50).prop_map(|(minimum, pct)| Commitment {
            monthly_minimum: Decimal::new(minimum, 2),
            discount_pct: Decimal::from(pct),
        }),
    )
}

proptest! {
    #[test]
    fn every_line_is_quantity_times_price_and_the_total_their_sum(
        models in proptest::collection::vec(arb_model(), 1..8),
        minutes in arb_minutes(),
        commitment in arb_commitment(),
        grants in arb_grants(),
    ) {
        let rated = rate_period(&input(plan(models, commitment), fold_minutes(&minutes), grants.clone()))
            .expect("rates");
        let mut sum = Decimal::ZERO;
        for line in &rated.lines {
            prop_assert_eq!(line.amount_exact, line.quantity * line.unit_price, "{:?}", line);
            prop_assert_eq!(line.amount, round(line.amount_exact, 2));
            prop_assert_eq!(line.amount.scale(), 2);
            sum += line.amount;
        }
        prop_assert_eq!(rated.total, sum);
        // Credits never pay more than is owed, nor more than a grant holds.
        prop_assert!(rated.credits <= rated.subtotal.max(Decimal::ZERO));
        for (grant, used) in &rated.credit_uses {
            let g = grants.iter().find(|g| g.grant == *grant).expect("grant");
            prop_assert!(*used <= g.available && *used > Decimal::ZERO);
        }
        prop_assert!(rated.total >= Decimal::ZERO || rated.subtotal < Decimal::ZERO);
    }

    #[test]
    fn rating_minute_by_minute_equals_rating_the_period_at_once(
        models in proptest::collection::vec(arb_model(), 1..8),
        minutes in arb_minutes(),
        seed in any::<u64>(),
    ) {
        // Volume pricing may lower the whole charge when the total reaches a cheaper tier.
        let monotone = !models.iter().any(|m| matches!(m, PriceModel::Volume { .. }));
        let terms = plan(models, None);
        let whole = rate_period(&input(terms.clone(), fold_minutes(&minutes), Vec::new())).expect("rates");
        // The same buckets in another order give the same invoice.
        let mut shuffled = minutes.clone();
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let reordered = rate_period(&input(terms.clone(), fold_minutes(&shuffled), Vec::new())).expect("rates");
        prop_assert_eq!(&whole.lines, &reordered.lines);
        // Period to date after each minute: charges never go down (prices are not
        // negative; volume tiers aside) and end exactly at the whole period's.
        let mut previous = Decimal::MIN;
        for k in (0..=minutes.len()).step_by(minutes.len().max(1).div_ceil(20)) {
            let so_far = rate_period(&input(terms.clone(), fold_minutes(&minutes[..k]), Vec::new())).expect("rates");
            let exact: Decimal = so_far.lines.iter().filter(|l| l.kind != LineKind::SlaCredit).map(|l| l.amount_exact).sum();
            prop_assert!(!monotone || exact >= previous, "period-to-date charge went down");
            previous = exact;
        }
        let last = rate_period(&input(terms, fold_minutes(&minutes[..]), Vec::new())).expect("rates");
        prop_assert_eq!(last.total, whole.total);
    }
}

#[test]
fn a_minimum_is_topped_up_once_when_the_allocation_ends() {
    let terms = plan(
        vec![PriceModel::PerUnit {
            unit_price: Decimal::from(3600),
        }],
        None,
    );
    let usage = |life: Option<i64>| AllocationUsage {
        allocation: Uuid::from_u128(7),
        sku: sku(1),
        units: Decimal::from(2),
        allocated_seconds: Decimal::from(20),
        lifetime_seconds_if_ended: life,
        ..AllocationUsage::default()
    };
    let running = rate_period(&input(terms.clone(), vec![usage(None)], Vec::new())).expect("rates");
    assert_eq!(running.total, Decimal::new(2000, 2));
    // Ended after 10 s on 2 GPUs with a 60 s minimum: (60 - 10) × 2 more GPU-seconds.
    let ended = rate_period(&input(terms, vec![usage(Some(10))], Vec::new())).expect("rates");
    assert_eq!(ended.total, Decimal::new(12000, 2));
}

fn treatment(percent: Decimal) -> crate::tax::Treatment {
    crate::tax::Treatment {
        category: crate::tax::TaxCategory::Standard,
        jurisdiction: "DE".into(),
        percent,
        note: None,
    }
}

proptest! {
    #[test]
    fn a_taxed_period_charges_the_rate_on_its_charges_and_credits_pay_the_gross(
        models in proptest::collection::vec(arb_model(), 1..6),
        minutes in arb_minutes(),
        commitment in arb_commitment(),
        grants in arb_grants(),
        basis_points in 0i64..3000,
    ) {
        let percent = Decimal::new(basis_points, 2);
        let mut period = input(plan(models, commitment), fold_minutes(&minutes), grants);
        period.tax = Some(treatment(percent));
        let rated = rate_period(&period).expect("rates");
        let charges: Decimal = rated.lines.iter()
            .filter(|l| l.kind != LineKind::Credit)
            .map(|l| l.amount)
            .sum();
        for line in &rated.lines {
            let tax = line.tax.as_ref().map(|t| t.percent);
            let expected = (line.kind != LineKind::Credit).then_some(percent);
            prop_assert_eq!(tax, expected);
        }
        // 1/100 of a cent's precision, then half away from zero, by hand.
        let exact = charges * percent / Decimal::ONE_HUNDRED;
        let cents = (exact * Decimal::ONE_HUNDRED).abs();
        let floor = cents.trunc();
        let up = cents - floor >= Decimal::new(5, 1);
        let magnitude = (floor + if up { Decimal::ONE } else { Decimal::ZERO }) / Decimal::ONE_HUNDRED;
        let tax = if exact < Decimal::ZERO { -magnitude } else { magnitude };
        prop_assert_eq!(rated.tax, tax);
        // One rate, so one summary, when anything was charged.
        let charged = rated.lines.iter().any(|l| l.kind != LineKind::Credit);
        prop_assert_eq!(rated.taxes.len(), usize::from(charged));
        prop_assert_eq!(rated.subtotal, charges);
        let paid: Decimal = rated.lines.iter().filter(|l| l.kind == LineKind::Credit).map(|l| -l.amount).sum();
        prop_assert_eq!(rated.credits, paid);
        prop_assert_eq!(rated.total, charges + tax - paid);
        prop_assert!(rated.credits <= (charges + tax).max(Decimal::ZERO));
    }
}
