//! Money: an exact decimal amount in an ISO 4217 currency. Never a float.
//!
//! Rounding rule (docs/architecture.md, billing): a charge is kept exact; an invoice line is rounded
//! half-even (banker's rounding) to the currency's minor unit; an invoice total is the
//! sum of its rounded lines.

use std::fmt;
use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};

/// An ISO 4217 currency this platform bills in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Currency([u8; 3]);

/// (code, minor-unit digits) of the supported currencies.
const CURRENCIES: &[(&str, u32)] = &[
    ("USD", 2),
    ("EUR", 2),
    ("GBP", 2),
    ("CHF", 2),
    ("CAD", 2),
    ("AUD", 2),
    ("SGD", 2),
    ("SEK", 2),
    ("NOK", 2),
    ("DKK", 2),
    ("INR", 2),
    ("AED", 2),
    ("SAR", 2),
    ("JPY", 0),
    ("KRW", 0),
];

impl Currency {
    pub const USD: Currency = Currency(*b"USD");
    pub const EUR: Currency = Currency(*b"EUR");

    pub fn code(&self) -> &str {
        // Constructed only from entries of CURRENCIES, which are ASCII.
        std::str::from_utf8(&self.0).unwrap_or("???")
    }

    /// Digits after the decimal point of the currency's minor unit (2 for cents, 0 for yen).
    pub fn minor_unit_digits(&self) -> u32 {
        CURRENCIES
            .iter()
            .find(|(code, _)| *code == self.code())
            .map_or(2, |(_, digits)| *digits)
    }
}

/// Minor-unit digits of a stored currency code. Codes are checked when they are written, so
/// an unknown one only comes from a broken row: it is read with cents, the common case.
pub fn minor_unit_digits_of(code: &str) -> u32 {
    code.parse::<Currency>()
        .map_or(2, |c| c.minor_unit_digits())
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a supported ISO 4217 currency code (e.g. USD, EUR, GBP, JPY)")]
pub struct UnknownCurrency(pub String);

impl FromStr for Currency {
    type Err = UnknownCurrency;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CURRENCIES
            .iter()
            .find(|(code, _)| *code == s)
            .map(|(code, _)| {
                let b = code.as_bytes();
                Currency([b[0], b[1], b[2]])
            })
            .ok_or_else(|| UnknownCurrency(s.to_owned()))
    }
}

impl TryFrom<String> for Currency {
    type Error = UnknownCurrency;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<Currency> for String {
    fn from(value: Currency) -> Self {
        value.code().to_owned()
    }
}

/// An exact amount of one currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Money {
    /// Serialized as a decimal string, so no JSON reader turns it into a float.
    #[serde(with = "rust_decimal::serde::str")]
    pub amount: Decimal,
    pub currency: Currency,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("cannot combine {left} and {right}")]
    CurrencyMismatch { left: Currency, right: Currency },
    #[error("amount overflows")]
    Overflow,
}

/// Parses a plain decimal string as money and quantities are written on the wire
/// (`"2.10"`, `"-0.5"`): digits with an optional sign and fraction, no exponent, no
/// separators — so `"1e3"` or `"1,000"` are rejected rather than guessed at.
pub fn parse_plain_decimal(s: &str) -> Result<Decimal, String> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    let plain = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !plain(whole) || !plain(fraction) {
        return Err(format!("`{s}` is not a plain decimal number like 2.10"));
    }
    s.parse::<Decimal>()
        .map_err(|e| format!("`{s}` is out of range: {e}"))
}

impl Money {
    pub fn new(amount: Decimal, currency: Currency) -> Self {
        Self { amount, currency }
    }

    pub fn zero(currency: Currency) -> Self {
        Self::new(Decimal::ZERO, currency)
    }

    /// Rounded half-even to the currency's minor unit: the rule for invoice lines.
    pub fn round_to_minor_unit(self) -> Money {
        Money {
            amount: self.amount.round_dp_with_strategy(
                self.currency.minor_unit_digits(),
                RoundingStrategy::MidpointNearestEven,
            ),
            currency: self.currency,
        }
    }

    pub fn checked_add(self, other: Money) -> Result<Money, MoneyError> {
        if self.currency != other.currency {
            return Err(MoneyError::CurrencyMismatch {
                left: self.currency,
                right: other.currency,
            });
        }
        let amount = self
            .amount
            .checked_add(other.amount)
            .ok_or(MoneyError::Overflow)?;
        Ok(Money::new(amount, self.currency))
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount, self.currency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn usd(s: &str) -> Money {
        Money::new(s.parse().expect("decimal"), Currency::USD)
    }

    #[test]
    fn invoice_lines_round_half_to_even() {
        assert_eq!(usd("0.125").round_to_minor_unit(), usd("0.12"));
        assert_eq!(usd("0.135").round_to_minor_unit(), usd("0.14"));
        assert_eq!(usd("0.1251").round_to_minor_unit(), usd("0.13"));
        let yen = Money::new(
            "12.5".parse().expect("decimal"),
            "JPY".parse().expect("jpy"),
        );
        assert_eq!(yen.round_to_minor_unit().amount, Decimal::from(12));
    }

    #[test]
    fn different_currencies_never_add() {
        let eur = Money::new(Decimal::ONE, Currency::EUR);
        assert!(matches!(
            usd("1").checked_add(eur),
            Err(MoneyError::CurrencyMismatch { .. })
        ));
    }

    #[test]
    fn money_serializes_its_amount_as_a_string() {
        let json = serde_json::to_string(&usd("2.10")).expect("serializes");
        assert_eq!(json, r#"{"amount":"2.10","currency":"USD"}"#);
        assert!(serde_json::from_str::<Currency>("\"XXX\"").is_err());
    }

    #[test]
    fn only_plain_decimals_parse() {
        assert_eq!(parse_plain_decimal("2.10"), Ok(Decimal::new(210, 2)));
        assert_eq!(parse_plain_decimal("-0.5"), Ok(Decimal::new(-5, 1)));
        for bad in ["", "1e3", "1,000", ".5", "5.", "+1", "NaN", "1.2.3", " 1"] {
            assert!(parse_plain_decimal(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn rounding_moves_an_amount_by_at_most_half_a_minor_unit(units in -1_000_000_000i64..1_000_000_000, scale in 0u32..8) {
            let m = Money::new(Decimal::new(units, scale), Currency::USD);
            let r = m.round_to_minor_unit();
            prop_assert!((r.amount - m.amount).abs() <= Decimal::new(5, 3));
            prop_assert!(r.amount.scale() <= 2);
        }
    }
}
