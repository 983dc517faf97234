//! Exchange rates (docs/providers.md, "Currencies"): the operator's rate per currency
//! pair, each from an instant until the pair's next. A provider paid in another currency
//! than an invoice's earns from it at the rate in force at the invoice's period end.
//! Rates are only ever added; a statement line keeps the rate it used.

pub mod reference;
pub mod store;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

/// One rate: units of `to` per unit of `from`, from `effective_from` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rate {
    pub from: String,
    pub to: String,
    pub rate: Decimal,
    pub effective_from: DateTime<Utc>,
}

/// Every rate, to look up what was in force when.
#[derive(Debug, Clone, Default)]
pub struct Rates(Vec<Rate>);

impl Rates {
    pub fn new(mut rates: Vec<Rate>) -> Self {
        rates.sort_by_key(|r| r.effective_from);
        Rates(rates)
    }

    /// Units of `to` per unit of `from` at `at`: 1 for the same currency, else the pair's
    /// rate with the latest start at or before `at`; `None` when there is none.
    pub fn at(&self, from: &str, to: &str, at: DateTime<Utc>) -> Option<Decimal> {
        if from == to {
            return Some(Decimal::ONE);
        }
        self.0
            .iter()
            .rev()
            .find(|r| r.from == from && r.to == to && r.effective_from <= at)
            .map(|r| r.rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn day(d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, d, 0, 0, 0).unwrap()
    }

    #[test]
    fn the_rate_in_force_is_the_pairs_latest_started() {
        let rate = |r: Decimal, d: u32| Rate {
            from: "USD".into(),
            to: "EUR".into(),
            rate: r,
            effective_from: day(d),
        };
        let rates = Rates::new(vec![
            rate(Decimal::new(95, 2), 20),
            rate(Decimal::new(92, 2), 1),
        ]);
        assert_eq!(rates.at("USD", "EUR", day(1)), Some(Decimal::new(92, 2)));
        assert_eq!(rates.at("USD", "EUR", day(19)), Some(Decimal::new(92, 2)));
        assert_eq!(rates.at("USD", "EUR", day(25)), Some(Decimal::new(95, 2)));
        assert_eq!(
            rates.at("USD", "EUR", day(1) - chrono::TimeDelta::seconds(1)),
            None
        );
        assert_eq!(
            rates.at("EUR", "USD", day(25)),
            None,
            "a pair has a direction"
        );
        assert_eq!(rates.at("GBP", "GBP", day(1)), Some(Decimal::ONE));
    }
}
