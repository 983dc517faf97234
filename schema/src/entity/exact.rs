//! `Exact`: a decimal column (money, prices, quantities) as the entities hold it. Stored as
//! the decimal's text on every database; a row whose text is not a decimal fails to read
//! (`DbErr::TryIntoErr`) — it never becomes zero, so a corrupt amount cannot be charged.

use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use rust_decimal::Decimal;
use sea_orm::DeriveValueType;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, DeriveValueType)]
#[sea_orm(value_type = "String")]
pub struct Exact(pub Decimal);

impl Exact {
    pub fn get(self) -> Decimal {
        self.0
    }
}

impl Deref for Exact {
    type Target = Decimal;

    fn deref(&self) -> &Decimal {
        &self.0
    }
}

impl From<Decimal> for Exact {
    fn from(d: Decimal) -> Self {
        Exact(d)
    }
}

impl From<Exact> for Decimal {
    fn from(e: Exact) -> Self {
        e.0
    }
}

/// Not a decimal: the stored text, for the error.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not an exact decimal")]
pub struct NotExact(String);

impl FromStr for Exact {
    type Err = NotExact;

    fn from_str(text: &str) -> Result<Self, NotExact> {
        // Exactly the decimal's digits: scientific notation or a float is not a stored value.
        Decimal::from_str_exact(text.trim())
            .map(Exact)
            .map_err(|_| NotExact(text.to_owned()))
    }
}

impl fmt::Display for Exact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// As JSON: the decimal's text, as every amount in an audit entry or an export.
impl serde::Serialize for Exact {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_garbage_is_refused() {
        let d: Exact = "12.3400".parse().expect("decimal");
        assert_eq!(d.to_string(), "12.3400");
        assert_eq!(*d, Decimal::new(123400, 4));
        for bad in ["", "lots", "1e3", "1.2.3", "NaN"] {
            assert!(bad.parse::<Exact>().is_err(), "{bad:?}");
        }
    }
}
