//! Rating throughput on one core, in minute buckets per second: a tenant-month of minute
//! buckets (`--allocations` allocations × `--days` days × 1,440 minutes) over four SKUs,
//! rated by a plan with per-unit, spot, graduated, volume and package rates, a commitment
//! and two credit grants — `--repeat` times.
//!
//! - *from text*: the buckets as the store reads them (decimal TEXT), parsed, folded per
//!   allocation and rated: the work of rating a period after the rows are fetched.
//! - *folded*: the same from parsed buckets (folding and rating only).
//! - baseline *per bucket*: the naive streaming design, each bucket converted to hours and
//!   priced on its own (per-unit prices only; it cannot apply tiers), in the same run.
//!
//! `cargo run --release -p neocloud-metering --example bench_rating -- --allocations 8 --days 30 --repeat 5`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use chrono::{DateTime, Utc};
use neocloud_metering::rating::period::{
    Commitment, GrantBalance, MinuteUsage, PeriodInput, PlanTerms, Rate, Segment, SkuInfo,
    fold_minutes, rate_period,
};
use neocloud_metering::rating::{PriceModel, Tier, seconds_to_hours};
use neocloud_schema::vocabulary::Metric;
use rust_decimal::Decimal;
use uuid::Uuid;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap_or_default()
}

fn plan(skus: &[Uuid]) -> PlanTerms {
    let tiers = vec![
        Tier {
            up_to: Some(Decimal::from(1000)),
            unit_price: Decimal::new(40, 2),
            flat_fee: Decimal::ZERO,
        },
        Tier {
            up_to: None,
            unit_price: Decimal::new(34, 2),
            flat_fee: Decimal::new(500, 2),
        },
    ];
    let per_unit = |p: i64| PriceModel::PerUnit {
        unit_price: Decimal::new(p, 2),
    };
    let rate = |sku: Uuid, metric, model, spot: Option<i64>| Rate {
        sku,
        metric,
        model,
        spot_unit_price: spot.map(|s| Decimal::new(s, 2)),
    };
    PlanTerms {
        label: "bench v1".into(),
        version_id: None,
        minimum_billable_seconds: 60,
        rates: vec![
            rate(skus[0], Metric::Allocated, per_unit(249), Some(100)),
            rate(skus[0], Metric::Energy, per_unit(18), None),
            rate(
                skus[1],
                Metric::Allocated,
                PriceModel::Graduated {
                    tiers: tiers.clone(),
                },
                None,
            ),
            rate(
                skus[2],
                Metric::Allocated,
                PriceModel::Volume { tiers },
                None,
            ),
            rate(
                skus[3],
                Metric::Memory,
                PriceModel::Package {
                    size: Decimal::from(100),
                    price: Decimal::new(150, 2),
                },
                None,
            ),
            rate(skus[3], Metric::Allocated, per_unit(120), None),
        ],
        commitment: Some(Commitment {
            monthly_minimum: Decimal::from(5000),
            discount_pct: Decimal::from(10),
        }),
    }
}

fn main() {
    let allocations = arg("--allocations", 8);
    let days = arg("--days", 30);
    let repeat = arg("--repeat", 5).max(1);
    let skus: Vec<Uuid> = (1..=4).map(Uuid::from_u128).collect();
    let minutes_per_allocation = days * 1440;
    let mut text_rows: Vec<(Uuid, Uuid, bool, String, String, String)> = Vec::new();
    let mut buckets: Vec<MinuteUsage> = Vec::new();
    for a in 0..allocations {
        let allocation = Uuid::from_u128(1000 + a as u128);
        let sku = skus[a % skus.len()];
        let spot = a % 5 == 4;
        for m in 0..minutes_per_allocation {
            let active = Decimal::new(30_000 + ((m * 7919 + a) % 30_000) as i64, 3);
            let memory = Decimal::new(480_000 + (m % 1000) as i64, 3);
            let energy = Decimal::new(5_833 + (m % 17) as i64, 6);
            text_rows.push((
                allocation,
                sku,
                spot,
                active.to_string(),
                memory.to_string(),
                energy.to_string(),
            ));
            buckets.push(MinuteUsage {
                allocation,
                sku,
                spot,
                units: Decimal::ONE,
                allocated_seconds: Decimal::from(60),
                sla_credit_seconds: Decimal::ZERO,
                active_seconds: active,
                memory_gib_seconds: memory,
                energy_kwh: energy,
            });
        }
    }
    let n = buckets.len();
    let skus_info: BTreeMap<Uuid, SkuInfo> = skus
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                *s,
                SkuInfo {
                    name: format!("sku-{i}"),
                    list_price_per_hour: Decimal::new(250, 2),
                    unit: "GPU".to_owned(),
                    region: "eu-west".to_owned(),
                    category: None,
                    storage_class: None,
                },
            )
        })
        .collect();
    let terms = plan(&skus);
    let input = |usage| PeriodInput {
        currency: "USD".into(),
        minor_digits: 2,
        skus: skus_info.clone(),
        segments: vec![Segment {
            from: t("2026-11-01T00:00:00Z"),
            to: t("2026-12-01T00:00:00Z"),
            plan: terms.clone(),
            usage,
            metered: Vec::new(),
        }],
        month_fraction: Decimal::ONE,
        late: Vec::new(),
        tax: None,
        grants: vec![
            GrantBalance {
                grant: Uuid::from_u128(9),
                description: "prepaid".into(),
                available: Decimal::from(250),
                expires_at: None,
                accrued_cap: None,
            },
            GrantBalance {
                grant: Uuid::from_u128(10),
                description: "promotional".into(),
                available: Decimal::from(25),
                expires_at: Some(t("2026-11-20T00:00:00Z")),
                accrued_cap: Some(Decimal::from(10_000)),
            },
        ],
    };

    let mut best = [f64::MAX; 3];
    let mut total = Decimal::ZERO;
    for _ in 0..repeat {
        let start = Instant::now();
        let parsed: Vec<MinuteUsage> = text_rows
            .iter()
            .map(|(allocation, sku, spot, a, m, e)| MinuteUsage {
                allocation: *allocation,
                sku: *sku,
                spot: *spot,
                units: Decimal::ONE,
                allocated_seconds: Decimal::from(60),
                sla_credit_seconds: Decimal::ZERO,
                active_seconds: a.parse().unwrap_or_default(),
                memory_gib_seconds: m.parse().unwrap_or_default(),
                energy_kwh: e.parse().unwrap_or_default(),
            })
            .collect();
        let rated = rate_period(&input(fold_minutes(&parsed))).map(|r| r.total);
        best[0] = best[0].min(start.elapsed().as_secs_f64());
        total = black_box(rated.unwrap_or_default());

        let start = Instant::now();
        let rated = rate_period(&input(fold_minutes(&buckets))).map(|r| r.total);
        best[1] = best[1].min(start.elapsed().as_secs_f64());
        black_box(rated.ok());

        let start = Instant::now();
        let prices: BTreeMap<Uuid, Decimal> =
            skus.iter().map(|s| (*s, Decimal::new(249, 2))).collect();
        let mut sum = Decimal::ZERO;
        for b in &buckets {
            let price = prices.get(&b.sku).copied().unwrap_or_default();
            sum += seconds_to_hours(b.allocated_seconds) * price
                + seconds_to_hours(b.active_seconds) * price;
        }
        best[2] = best[2].min(start.elapsed().as_secs_f64());
        black_box(sum);
    }
    println!(
        "{n} minute buckets ({allocations} allocations x {days} days), best of {repeat}, one core; invoice total {total}"
    );
    println!("| path | seconds | minute buckets/s |");
    println!("|---|---|---|");
    for (name, secs) in [
        ("from text: parse, fold, rate", best[0]),
        ("folded: fold, rate", best[1]),
        ("baseline: price each bucket on its own", best[2]),
    ] {
        println!("| {name} | {secs:.4} | {:.0} |", n as f64 / secs);
    }
}
