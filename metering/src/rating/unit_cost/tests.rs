use proptest::prelude::*;
use rust_decimal::Decimal;

use super::*;
use crate::rating::PriceModel;
use crate::rating::Tier;
use crate::rating::period::rate_period;
use crate::rating::period::tests::arb_model;
use crate::statements::tests::{SKU, d, input, per_unit, rate, t, usage};

fn costs_of(input: &PeriodInput) -> UnitCosts {
    let rated = rate_period(input).expect("rated");
    let mut costs = UnitCosts::default();
    costs.add_period(input, &rated.lines);
    costs
}

const HOUR: i64 = 3600;

#[test]
fn graduated_tiers_are_averaged_over_the_hours_they_priced() {
    let graduated = PriceModel::Graduated {
        tiers: vec![
            Tier {
                up_to: Some(d("100")),
                unit_price: d("2.00"),
                flat_fee: Decimal::ZERO,
            },
            Tier {
                up_to: None,
                unit_price: d("1.00"),
                flat_fee: Decimal::ZERO,
            },
        ],
    };
    let period = input(
        vec![rate(Metric::Allocated, graduated, None)],
        vec![
            usage(1, false, 100 * HOUR, 0),
            usage(2, false, 100 * HOUR, 0),
        ],
    );
    let costs = costs_of(&period);
    let at = t("2026-11-10T00:00:00Z");
    // 100 h at 2.00 and 100 h at 1.00: 300.00 over 200 h, 1.50 an hour.
    let hour = costs.cost(at, (SKU, false), Metric::Allocated, Decimal::from(HOUR));
    assert_eq!(hour, d("1.50"));
    let outside = t("2026-12-01T00:00:00Z");
    assert_eq!(
        costs.cost(
            outside,
            (SKU, false),
            Metric::Allocated,
            Decimal::from(HOUR)
        ),
        Decimal::ZERO,
        "no rated period prices a second after it"
    );
}

#[test]
fn spot_usage_has_its_own_cost_or_shares_on_demands() {
    let at = t("2026-11-10T00:00:00Z");
    let hour = Decimal::from(HOUR);
    let used = || vec![usage(1, false, HOUR, 0), usage(2, true, 3 * HOUR, 0)];
    let own = costs_of(&input(
        vec![rate(Metric::Allocated, per_unit("2.00"), Some("0.80"))],
        used(),
    ));
    assert_eq!(
        own.cost(at, (SKU, true), Metric::Allocated, hour),
        d("0.80")
    );
    assert_eq!(
        own.cost(at, (SKU, false), Metric::Allocated, hour),
        d("2.00")
    );
    let shared = costs_of(&input(
        vec![rate(Metric::Allocated, per_unit("2.00"), None)],
        used(),
    ));
    assert_eq!(
        shared.cost(at, (SKU, true), Metric::Allocated, hour),
        d("2.00")
    );
}

#[test]
fn sla_credit_costs_less_than_nothing() {
    let costs = costs_of(&input(
        vec![
            rate(Metric::Allocated, per_unit("2.00"), None),
            rate(Metric::SlaCredit, per_unit("3.00"), None),
        ],
        vec![usage(1, false, HOUR, HOUR)],
    ));
    let at = t("2026-11-10T00:00:00Z");
    let credit = costs.cost(at, (SKU, false), Metric::SlaCredit, Decimal::from(1800));
    assert_eq!(credit, d("-1.50"));
}

#[test]
fn a_span_is_cut_where_segments_meet() {
    let mut period = input(vec![rate(Metric::Allocated, per_unit("1"), None)], vec![]);
    let mut second = period.segments[0].clone();
    period.segments[0].to = t("2026-11-15T12:00:00Z");
    second.from = t("2026-11-15T12:00:00Z");
    period.segments.push(second);
    let costs = costs_of(&period);
    let (lo, hi) = (t("2026-11-15T00:00:00Z"), t("2026-12-02T00:00:00Z"));
    assert_eq!(
        costs.cut(lo, hi),
        vec![
            (lo, t("2026-11-15T12:00:00Z")),
            (t("2026-11-15T12:00:00Z"), t("2026-12-01T00:00:00Z")),
            (t("2026-12-01T00:00:00Z"), hi),
        ]
    );
}

proptest! {
    /// Every allocation's own usage priced at the unit costs adds up to what the lines
    /// charged, whatever the price model and however the hours fall (to rounding of the
    /// division: 28 significant digits).
    #[test]
    fn usage_at_unit_cost_adds_up_to_the_lines(
        model in arb_model(),
        hours in proptest::collection::vec((0i64..500, any::<bool>()), 1..6),
    ) {
        let used: Vec<_> = hours
            .iter()
            .enumerate()
            .map(|(i, &(h, spot))| usage(u128::try_from(i).unwrap(), spot, h * HOUR + 7, 0))
            .collect();
        let period = input(vec![rate(Metric::Allocated, model, None)], used.clone());
        let rated = rate_period(&period).expect("rated");
        let mut costs = UnitCosts::default();
        costs.add_period(&period, &rated.lines);
        let at = t("2026-11-10T00:00:00Z");
        let priced: Decimal = used
            .iter()
            .map(|u| costs.cost(at, (SKU, u.spot), Metric::Allocated, u.allocated_seconds))
            .sum();
        let charged: Decimal = charged_by_segment(&period, &rated.lines).values().sum();
        prop_assert!((priced - charged).abs() < d("0.000000001"), "{priced} != {charged}");
    }
}
