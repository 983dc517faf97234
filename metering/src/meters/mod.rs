//! Meters: operator-defined measures of usage events. A meter reads the events of one
//! type, takes a value from each (a dotted path into `data`, or just counts them), groups
//! them by up to four other paths, and aggregates a period's values per group (`sum`,
//! `count`, `max`, `unique_count`, `latest`); the sum over the groups is billed as its
//! metered SKU, priced by the tenant's plan like any SKU. Meters are versioned: a new
//! definition under a key is its next version, and events are counted by the version
//! current when they arrive.
//!
//! - `cloudevent`: the CloudEvents 1.0 checks of one event;
//! - `record`: recording events exactly once with what they count (several requests'
//!   batches in one transaction);
//! - `quantity`: what the meters counted over a span, for rating and usage queries;
//! - `store`: the SQL of `meters`, `usage_event_keys`, `usage_event_batches`,
//!   `meter_minutes`, `meter_uniques`, `meter_groups`.

pub mod cloudevent;
pub mod quantity;
pub mod record;
pub mod store;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{meter, sku};
use neocloud_schema::ids::{MeterId, SkuId};
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::slug::Slug;
use neocloud_schema::vocabulary::{MeterAggregation, SkuForm};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, EntityTrait};
use serde_json::{Map, Value};

use crate::MeteringError;
use cloudevent::Refusal;

/// Most group-by paths of a meter, and most conditions of its filter.
pub const MAX_GROUP_BY: usize = 4;
/// Most values one filter condition accepts.
pub const MAX_FILTER_VALUES: usize = 16;
/// Most distinct groups one meter version may count for one tenant; an event that would
/// open one more is refused.
pub const MAX_GROUPS: u64 = 1000;
/// The largest value one event may carry when the meter sets no bound of its own.
pub const DEFAULT_MAX_VALUE: Decimal = Decimal::from_parts(3_567_587_328, 232, 0, false, 0);
/// The largest bound a meter may set on one event's value (10¹⁵).
const MAX_MAX_VALUE: Decimal = Decimal::from_parts(2_764_472_320, 232_830, 0, false, 0);
/// Most decimal places of an event's value.
const MAX_SCALE: u32 = 12;
/// Most bytes of a group's or a distinct value's text.
const MAX_GROUP_VALUE_BYTES: usize = 128;

/// A dotted path into an event's `data`: 1 to 8 names of letters, digits, `_` or `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path(Vec<String>);

impl Path {
    pub fn parse(text: &str) -> Result<Path, String> {
        let parts: Vec<String> = text.trim().split('.').map(str::to_owned).collect();
        let good = |p: &String| {
            (1..=64).contains(&p.len())
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        if parts.len() > 8 || !parts.iter().all(good) {
            return Err(format!(
                "`{text}` is not a path like `tokens.input`: 1 to 8 names of letters, digits, '_' or '-', joined by '.'"
            ));
        }
        Ok(Path(parts))
    }

    fn get<'a>(&self, data: &'a Map<String, Value>) -> Option<&'a Value> {
        let (first, rest) = self.0.split_first()?;
        rest.iter()
            .try_fold(data.get(first)?, |value, name| value.as_object()?.get(name))
            .filter(|v| !v.is_null())
    }

    /// The refusal's field: where in the event the path points.
    fn field(&self) -> String {
        format!("data.{}", self.0.join("."))
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// A meter version with its paths parsed.
#[derive(Debug, Clone)]
pub struct Meter {
    pub row: meter::Model,
    value: Option<Path>,
    group_by: Vec<Path>,
    filter: Vec<(Path, Vec<String>)>,
}

/// One condition of a meter's filter: the value at `path` is one of `values`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Condition {
    pub path: String,
    pub values: Vec<String>,
}

/// What one event counts for one meter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub meter: MeterId,
    /// The group's values as a JSON array of strings.
    pub group_key: String,
    /// The value (1 for a count, 0 for `unique_count`).
    pub value: Decimal,
    /// The value a `unique_count` meter counts distinct.
    pub distinct: Option<String>,
}

impl Meter {
    /// A stored meter, its paths parsed. They were checked when it was created; `None`
    /// when a stored path no longer parses (such a meter counts nothing, rather than
    /// counting events where it should sum values).
    pub fn from_row(row: meter::Model) -> Option<Meter> {
        let value = row
            .value_path
            .as_deref()
            .map(Path::parse)
            .transpose()
            .ok()?;
        let group_by = serde_json::from_value::<Vec<String>>(row.group_by.clone())
            .ok()?
            .iter()
            .map(|p| Path::parse(p))
            .collect::<Result<_, _>>()
            .ok()?;
        let filter = match &row.filter {
            None => Vec::new(),
            Some(json) => serde_json::from_value::<Vec<Condition>>(json.clone())
                .ok()?
                .into_iter()
                .map(|c| Path::parse(&c.path).map(|p| (p, c.values)))
                .collect::<Result<_, _>>()
                .ok()?,
        };
        Some(Meter {
            row,
            value,
            group_by,
            filter,
        })
    }

    /// Whether the meter counts an event with `data`: its value at each filter path is
    /// one of the condition's values (a value that is no scalar matches none).
    pub fn selects(&self, data: &Map<String, Value>) -> bool {
        self.filter.iter().all(|(path, values)| {
            path.get(data)
                .and_then(|v| scalar_text(path, v).ok())
                .is_some_and(|text| values.contains(&text))
        })
    }

    /// What `data` counts for this meter (none when its filter does not select the
    /// event), or why the event cannot be counted.
    pub fn read(&self, data: &Map<String, Value>) -> Result<Option<Reading>, Refusal> {
        if !self.selects(data) {
            return Ok(None);
        }
        self.reading(data).map(Some)
    }

    fn reading(&self, data: &Map<String, Value>) -> Result<Reading, Refusal> {
        let group: Vec<String> = self
            .group_by
            .iter()
            .map(|path| group_value(path, data))
            .collect::<Result<_, _>>()?;
        let group_key = serde_json::to_string(&group).unwrap_or_default();
        let (value, distinct) = match (self.row.aggregation, &self.value) {
            (MeterAggregation::Count, _) | (_, None) => (Decimal::ONE, None),
            (MeterAggregation::UniqueCount, Some(path)) => {
                (Decimal::ZERO, Some(distinct_value(path, data)?))
            }
            (_, Some(path)) => (self.number(path, data)?, None),
        };
        Ok(Reading {
            meter: self.row.id,
            group_key,
            value,
            distinct,
        })
    }

    fn number(&self, path: &Path, data: &Map<String, Value>) -> Result<Decimal, Refusal> {
        let refuse = |why: String| Refusal::new(path.field(), why);
        let value = match path.get(data) {
            None => {
                return Err(refuse(format!(
                    "meter `{}` needs a number here",
                    self.row.key
                )));
            }
            Some(Value::Number(n)) => decimal_of(&n.to_string()),
            Some(Value::String(s)) => parse_plain_decimal(s).ok(),
            Some(_) => None,
        }
        .ok_or_else(|| refuse("must be a number".to_owned()))?;
        let max = self.row.max_value.get();
        if value.is_sign_negative() || value > max {
            return Err(refuse(format!(
                "must be between 0 and {max}, the most meter `{}` takes from one event",
                self.row.key
            )));
        }
        if value.scale() > MAX_SCALE {
            return Err(refuse(format!("at most {MAX_SCALE} decimal places")));
        }
        Ok(value.normalize())
    }
}

/// A JSON number's text as an exact decimal (`1e3` included).
fn decimal_of(text: &str) -> Option<Decimal> {
    Decimal::from_str_exact(text)
        .ok()
        .or_else(|| Decimal::from_scientific(text).ok())
}

/// A scalar's text, for a group or a distinct value.
fn scalar_text(path: &Path, value: &Value) -> Result<String, Refusal> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => {
            return Err(Refusal::new(
                path.field(),
                "must be a string, number or boolean",
            ));
        }
    };
    if text.len() > MAX_GROUP_VALUE_BYTES || text.chars().any(char::is_control) {
        return Err(Refusal::new(
            path.field(),
            format!("at most {MAX_GROUP_VALUE_BYTES} bytes, no control characters"),
        ));
    }
    Ok(text)
}

fn group_value(path: &Path, data: &Map<String, Value>) -> Result<String, Refusal> {
    path.get(data)
        .map_or(Ok(String::new()), |value| scalar_text(path, value))
}

fn distinct_value(path: &Path, data: &Map<String, Value>) -> Result<String, Refusal> {
    let value = path
        .get(data)
        .ok_or_else(|| Refusal::new(path.field(), "a unique-count meter needs a value here"))?;
    scalar_text(path, value)
}

/// A meter version as an operator describes it.
#[derive(Debug, Clone)]
pub struct NewMeter {
    pub key: String,
    pub event_type: String,
    pub value_path: Option<String>,
    pub aggregation: MeterAggregation,
    pub group_by: Vec<String>,
    /// Conditions on the event's data, all of which must hold for the meter to count it.
    pub filter: Vec<Condition>,
    pub max_value: Option<String>,
    pub sku: SkuId,
    pub description: Option<String>,
}

/// The checked columns of a new meter version (all but id, version and creation time).
struct Checked {
    key: Slug,
    value_path: Option<Path>,
    group_by: Vec<Path>,
    filter: Vec<Condition>,
    max_value: Decimal,
    description: String,
}

fn check(new: &NewMeter) -> Result<Checked, MeteringError> {
    let key = Slug::parse(&new.key).map_err(|rule| MeteringError::invalid("key", rule))?;
    let ty = new.event_type.trim();
    if ty.is_empty() || ty.len() > 256 || ty.chars().any(char::is_control) {
        return Err(MeteringError::invalid(
            "eventType",
            "1 to 256 printable bytes",
        ));
    }
    let value_path = match (&new.value_path, new.aggregation) {
        (Some(_), MeterAggregation::Count) => {
            return Err(MeteringError::invalid(
                "valuePath",
                "a COUNT meter takes no value",
            ));
        }
        (None, MeterAggregation::Count) => None,
        (None, _) => {
            return Err(MeteringError::invalid(
                "valuePath",
                "this aggregation needs a value path",
            ));
        }
        (Some(p), _) => Some(Path::parse(p).map_err(|e| MeteringError::invalid("valuePath", e))?),
    };
    if new.group_by.len() > MAX_GROUP_BY {
        return Err(MeteringError::invalid(
            "groupBy",
            format!("at most {MAX_GROUP_BY} paths"),
        ));
    }
    let group_by = new
        .group_by
        .iter()
        .map(|p| Path::parse(p).map_err(|e| MeteringError::invalid("groupBy", e)))
        .collect::<Result<Vec<_>, _>>()?;
    let filter = check_filter(&new.filter)?;
    let max_value = match &new.max_value {
        None => DEFAULT_MAX_VALUE,
        Some(text) => parse_plain_decimal(text)
            .ok()
            .filter(|m| m.is_sign_positive() && !m.is_zero() && *m <= MAX_MAX_VALUE)
            .ok_or_else(|| {
                MeteringError::invalid(
                    "maxValue",
                    format!("a decimal above 0, at most {MAX_MAX_VALUE}"),
                )
            })?,
    };
    let description = new.description.as_deref().unwrap_or("").trim().to_owned();
    if description.len() > 500 || description.chars().any(char::is_control) {
        return Err(MeteringError::invalid(
            "description",
            "at most 500 printable bytes",
        ));
    }
    Ok(Checked {
        key,
        value_path,
        group_by,
        filter,
        max_value,
        description,
    })
}

/// A filter's conditions, checked: at most `MAX_GROUP_BY`, each a path with 1 to
/// `MAX_FILTER_VALUES` values of at most `MAX_GROUP_VALUE_BYTES` bytes.
fn check_filter(filter: &[Condition]) -> Result<Vec<Condition>, MeteringError> {
    if filter.len() > MAX_GROUP_BY {
        return Err(MeteringError::invalid(
            "filter",
            format!("at most {MAX_GROUP_BY} conditions"),
        ));
    }
    filter
        .iter()
        .map(|c| {
            let path = Path::parse(&c.path).map_err(|e| MeteringError::invalid("filter", e))?;
            let good = |v: &String| {
                v.len() <= MAX_GROUP_VALUE_BYTES && !v.chars().any(char::is_control)
            };
            if c.values.is_empty() || c.values.len() > MAX_FILTER_VALUES || !c.values.iter().all(good) {
                return Err(MeteringError::invalid(
                    "filter",
                    format!("each condition has 1 to {MAX_FILTER_VALUES} values of at most {MAX_GROUP_VALUE_BYTES} bytes"),
                ));
            }
            Ok(Condition {
                path: path.to_string(),
                values: c.values.clone(),
            })
        })
        .collect()
}

/// `createMeter`: the next version of the meter under `key` (the first when there is
/// none), rating as `sku`, which must be a metered SKU.
pub async fn create<C: ConnectionTrait>(
    conn: &C,
    new: &NewMeter,
    now: DateTime<Utc>,
) -> Result<meter::Model, MeteringError> {
    let checked = check(new)?;
    let sku = sku::Entity::find_by_id(new.sku).one(conn).await?;
    match sku {
        Some(s) if s.form == SkuForm::Metered => {}
        Some(_) => {
            return Err(MeteringError::invalid(
                "skuId",
                "a meter rates as a METERED SKU",
            ));
        }
        None => return Err(MeteringError::invalid("skuId", "no such SKU")),
    }
    let version = store::latest_version(conn, checked.key.as_str())
        .await?
        .unwrap_or(0)
        + 1;
    let row = meter::Model {
        id: MeterId::new(),
        key: checked.key.into_string(),
        version,
        event_type: new.event_type.trim().to_owned(),
        value_path: checked.value_path.map(|p| p.to_string()),
        aggregation: new.aggregation,
        group_by: Value::from(
            checked
                .group_by
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
        ),
        filter: Some(serde_json::to_value(&checked.filter).unwrap_or_default()),
        max_value: checked.max_value.into(),
        sku_id: new.sku,
        description: checked.description,
        created_at: now,
    };
    store::insert_meter(conn, row.clone()).await?;
    Ok(row)
}

#[cfg(test)]
mod tests;
