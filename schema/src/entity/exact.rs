//! `Exact`: a decimal column (money, prices, quantities) as the entities hold it. Stored as
//! `NUMERIC` on PostgreSQL (the database checks and compares it as a number) and as the
//! decimal's text on SQLite (which has no exact decimal type: its `NUMERIC` affinity would
//! turn `0.10` into a float). Either way a stored value that is not an exact decimal fails
//! to read (`DbErr::TryIntoErr`) — it never becomes zero, so a corrupt amount cannot be
//! charged.

use std::fmt;
use std::ops::Deref;
use std::str::FromStr;
use std::sync::Arc;

use rust_decimal::Decimal;
use sea_orm::sea_query::{ArrayType, ColumnType, Nullable, ValueType, ValueTypeErr};
use sea_orm::{
    ActiveValue, ColIdx, DbErr, IntoActiveValue, QueryResult, TryGetError, TryGetable, Value,
};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// Written as a decimal parameter: PostgreSQL binds it as `NUMERIC`, SQLite as its text.
impl From<Exact> for Value {
    fn from(e: Exact) -> Self {
        Value::Decimal(Some(e.0))
    }
}

impl TryGetable for Exact {
    fn try_get_by<I: ColIdx>(res: &QueryResult, idx: I) -> Result<Self, TryGetError> {
        if res.try_as_pg_row().is_some() {
            return Decimal::try_get_by(res, idx).map(Exact);
        }
        // SQLite: the text, read exactly (sea-orm's own SQLite decimal goes through f64).
        let text = String::try_get_by(res, idx)?;
        text.parse().map_err(|e: NotExact| {
            TryGetError::DbErr(DbErr::TryIntoErr {
                from: "text",
                into: "Exact",
                source: Arc::new(e),
            })
        })
    }
}

impl ValueType for Exact {
    fn try_from(v: Value) -> Result<Self, ValueTypeErr> {
        match v {
            Value::Decimal(Some(d)) => Ok(Exact(d)),
            Value::String(Some(text)) => text.parse().map_err(|_| ValueTypeErr),
            _ => Err(ValueTypeErr),
        }
    }

    fn type_name() -> String {
        "Exact".to_owned()
    }

    fn array_type() -> ArrayType {
        ArrayType::Decimal
    }

    fn column_type() -> ColumnType {
        ColumnType::Decimal(None)
    }
}

impl Nullable for Exact {
    fn null() -> Value {
        Value::Decimal(None)
    }
}

impl IntoActiveValue<Exact> for Exact {
    fn into_active_value(self) -> ActiveValue<Exact> {
        ActiveValue::Set(self)
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
