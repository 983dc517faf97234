use proptest::prelude::*;
use rust_decimal::Decimal;

use super::*;

fn d(s: &str) -> Decimal {
    s.parse().expect("decimal")
}

fn tiers() -> Vec<Tier> {
    vec![
        Tier {
            up_to: Some(d("100")),
            unit_price: d("2.10"),
            flat_fee: d("0"),
        },
        Tier {
            up_to: Some(d("500")),
            unit_price: d("1.80"),
            flat_fee: d("10"),
        },
        Tier {
            up_to: None,
            unit_price: d("1.50"),
            flat_fee: d("0"),
        },
    ]
}

#[test]
fn graduated_prices_each_unit_by_its_tier_plus_touched_flat_fees() {
    let charge = PriceModel::Graduated { tiers: tiers() }
        .rate(d("150"))
        .expect("rated");
    // 100 × 2.10 + 50 × 1.80 + 10 flat fee of the second tier.
    assert_eq!(charge.amount, d("310"));
    assert_eq!(charge.parts.len(), 2);
    assert_eq!(charge.parts[1].quantity, d("50"));
}

#[test]
fn volume_prices_everything_at_the_tier_the_total_reaches() {
    let charge = PriceModel::Volume { tiers: tiers() }
        .rate(d("150"))
        .expect("rated");
    assert_eq!(charge.amount, d("150") * d("1.80") + d("10"));
    let at_boundary = PriceModel::Volume { tiers: tiers() }
        .rate(d("100"))
        .expect("rated");
    assert_eq!(at_boundary.amount, d("210"), "upTo is inclusive");
}

#[test]
fn packages_round_up() {
    let model = PriceModel::Package {
        size: d("10"),
        price: d("18.00"),
    };
    assert_eq!(model.rate(d("10")).expect("rated").amount, d("18.00"));
    assert_eq!(model.rate(d("10.0001")).expect("rated").amount, d("36.00"));
    assert_eq!(model.rate(d("0")).expect("rated").amount, d("0"));
}

#[test]
fn malformed_models_and_quantities_are_refused() {
    let bounded_last = vec![Tier {
        up_to: Some(d("5")),
        unit_price: d("1"),
        flat_fee: d("0"),
    }];
    assert_eq!(
        PriceModel::Graduated {
            tiers: bounded_last
        }
        .validate(),
        Err(RateError::BadTiers)
    );
    let decreasing = vec![
        Tier {
            up_to: Some(d("5")),
            unit_price: d("1"),
            flat_fee: d("0"),
        },
        Tier {
            up_to: Some(d("5")),
            unit_price: d("1"),
            flat_fee: d("0"),
        },
        Tier {
            up_to: None,
            unit_price: d("1"),
            flat_fee: d("0"),
        },
    ];
    assert_eq!(
        PriceModel::Volume { tiers: decreasing }.validate(),
        Err(RateError::BadTiers)
    );
    assert!(
        PriceModel::PerUnit {
            unit_price: d("-1")
        }
        .validate()
        .is_err()
    );
    assert!(
        PriceModel::PerUnit { unit_price: d("1") }
            .rate(d("-1"))
            .is_err()
    );
}

#[test]
fn one_second_is_an_exact_enough_fraction_of_an_hour() {
    assert_eq!(seconds_to_hours(d("3600")), d("1"));
    assert_eq!(seconds_to_hours(d("5400")), d("1.5"));
    assert_eq!(seconds_to_hours(d("1")).scale(), QUANTITY_DP);
}

#[test]
fn an_invoice_total_is_the_sum_of_its_rounded_lines() {
    let (lines, total) = round_lines(&[d("0.125"), d("0.135"), d("1.005")], 2);
    assert_eq!(lines, vec![d("0.12"), d("0.14"), d("1.00")]);
    assert_eq!(total, d("1.26"));
}

#[test]
fn a_short_allocation_pays_the_minimum() {
    assert_eq!(billable_seconds(12, 60), 60);
    assert_eq!(billable_seconds(600, 60), 600);
}

fn arb_tiers() -> impl Strategy<Value = Vec<Tier>> {
    proptest::collection::vec((1u32..1000, 0u32..1000, 0u32..100), 1..5).prop_map(|raw| {
        let mut up_to = 0u32;
        let mut tiers: Vec<Tier> = raw
            .iter()
            .map(|(step, price, fee)| {
                up_to += step;
                Tier {
                    up_to: Some(Decimal::from(up_to)),
                    unit_price: Decimal::new(i64::from(*price), 2),
                    flat_fee: Decimal::new(i64::from(*fee), 1),
                }
            })
            .collect();
        if let Some(last) = tiers.last_mut() {
            last.up_to = None;
        }
        tiers
    })
}

proptest! {
    #[test]
    fn the_parts_of_a_charge_sum_to_it(tiers in arb_tiers(), q in 0u64..5_000_000, graduated in any::<bool>()) {
        let quantity = Decimal::new(q as i64, 3);
        let model = if graduated { PriceModel::Graduated { tiers } } else { PriceModel::Volume { tiers } };
        let charge = model.rate(quantity).expect("rated");
        let sum: Decimal = charge.parts.iter().map(|p| p.amount).sum();
        prop_assert_eq!(sum, charge.amount);
        if graduated {
            let units: Decimal = charge.parts.iter().map(|p| p.quantity).sum();
            prop_assert_eq!(units, quantity);
        }
    }

    #[test]
    fn graduated_charges_never_fall_as_usage_grows(tiers in arb_tiers(), a in 0u64..2_000_000, b in 0u64..2_000_000) {
        let model = PriceModel::Graduated { tiers };
        let (lo, hi) = (a.min(b), a.max(b));
        let low = model.rate(Decimal::new(lo as i64, 3)).expect("rated").amount;
        let high = model.rate(Decimal::new(hi as i64, 3)).expect("rated").amount;
        prop_assert!(low <= high);
    }

    #[test]
    fn rounded_lines_are_never_off_by_more_than_half_a_cent_each(amounts in proptest::collection::vec(0i64..10_000_000, 1..20)) {
        let amounts: Vec<Decimal> = amounts.iter().map(|a| Decimal::new(*a, 4)).collect();
        let (lines, total) = round_lines(&amounts, 2);
        prop_assert_eq!(total, lines.iter().copied().sum::<Decimal>());
        for (line, exact) in lines.iter().zip(&amounts) {
            prop_assert!((*line - *exact).abs() <= Decimal::new(5, 3));
        }
    }
}
