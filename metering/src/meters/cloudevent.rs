//! Usage events as CloudEvents 1.0 in JSON (the structured mode, one event or a batch):
//! each is checked here on its own, so one bad event is answered with the field it breaks
//! and the rest of its batch goes on.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Map, Value};

use neocloud_schema::ingest::InvalidBatch;

/// Most events in one batch.
pub const MAX_BATCH: usize = 1000;
/// Most bytes of one event's `data`, as JSON.
pub const MAX_DATA_BYTES: usize = 8 * 1024;
/// How far ahead of the server's clock an event's `time` may be.
pub const FUTURE_TOLERANCE_SECONDS: i64 = 300;
/// How old an event's `time` may be: usage older than the late window re-rates nothing.
pub const OLDEST_DAYS: i64 = crate::invoicing::LATE_WINDOW_DAYS;
/// Most extension attributes an event may carry (they are checked, not stored).
const MAX_EXTENSIONS: usize = 20;

/// A usage event that passed every check of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudEvent {
    pub id: String,
    pub source: String,
    pub event_type: String,
    pub subject: Option<String>,
    /// When the usage happened (the server's receipt time when the sender gave none).
    pub time: DateTime<Utc>,
    pub data: Map<String, Value>,
}

/// Why one event was refused: the attribute it breaks and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: String,
    pub message: String,
}

impl Refusal {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Refusal {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A request body's events, and whether it was one event (an object) rather than a batch.
#[derive(Debug)]
pub struct Body {
    pub events: Vec<Value>,
    pub single: bool,
}

/// The events of a request body: one event (an object) or a batch (an array). What is
/// wrong with the body as a whole refuses it whole.
pub fn parse_body(body: &[u8]) -> Result<Body, InvalidBatch> {
    let invalid = |field: &str, message: String| InvalidBatch {
        field: field.to_owned(),
        message,
    };
    let value: Value =
        serde_json::from_slice(body).map_err(|e| invalid("body", format!("not JSON: {e}")))?;
    let (events, single) = match value {
        Value::Array(events) => (events, false),
        Value::Object(_) => (vec![value], true),
        _ => {
            return Err(invalid(
                "body",
                "a CloudEvent (an object) or a batch of them (an array)".to_owned(),
            ));
        }
    };
    if events.is_empty() {
        return Err(invalid("body", "the batch is empty".to_owned()));
    }
    if events.len() > MAX_BATCH {
        return Err(invalid(
            "body",
            format!(
                "at most {MAX_BATCH} events in one batch, got {}",
                events.len()
            ),
        ));
    }
    Ok(Body { events, single })
}

/// Printable text of 1 to `max` bytes, else the refusal for `field`.
fn text(event: &Map<String, Value>, field: &str, max: usize) -> Result<Option<String>, Refusal> {
    match event.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() || s.len() > max => Err(Refusal::new(
            field,
            format!("1 to {max} bytes, got {}", s.len()),
        )),
        Some(Value::String(s)) if s.chars().any(char::is_control) => {
            Err(Refusal::new(field, "control characters are not allowed"))
        }
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Refusal::new(field, "must be a string")),
    }
}

fn required(event: &Map<String, Value>, field: &str, max: usize) -> Result<String, Refusal> {
    text(event, field, max)?.ok_or_else(|| Refusal::new(field, "required"))
}

fn time(event: &Map<String, Value>, now: DateTime<Utc>) -> Result<DateTime<Utc>, Refusal> {
    let Some(raw) = text(event, "time", 64)? else {
        return Ok(now);
    };
    let time = DateTime::parse_from_rfc3339(&raw)
        .map_err(|e| Refusal::new("time", format!("not an RFC 3339 timestamp: {e}")))?
        .with_timezone(&Utc);
    if time > now + TimeDelta::seconds(FUTURE_TOLERANCE_SECONDS) {
        return Err(Refusal::new(
            "time",
            format!("more than {FUTURE_TOLERANCE_SECONDS} s after the server's clock"),
        ));
    }
    if time < now - TimeDelta::days(OLDEST_DAYS) {
        return Err(Refusal::new(
            "time",
            format!("more than {OLDEST_DAYS} days ago: beyond the late-usage window"),
        ));
    }
    Ok(time)
}

fn data(event: &Map<String, Value>) -> Result<Map<String, Value>, Refusal> {
    if event.contains_key("data_base64") {
        return Err(Refusal::new(
            "data_base64",
            "usage data must be JSON (`data`)",
        ));
    }
    if let Some(kind) = text(event, "datacontenttype", 128)? {
        let essence = kind.split(';').next().unwrap_or("").trim();
        if essence != "application/json" && !essence.ends_with("+json") {
            return Err(Refusal::new("datacontenttype", "must be application/json"));
        }
    }
    match event.get("data") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(data)) => {
            let size = serde_json::to_vec(data).map_or(usize::MAX, |v| v.len());
            if size > MAX_DATA_BYTES {
                return Err(Refusal::new(
                    "data",
                    format!("at most {MAX_DATA_BYTES} bytes of JSON, got {size}"),
                ));
            }
            Ok(data.clone())
        }
        Some(_) => Err(Refusal::new("data", "must be a JSON object")),
    }
}

/// Attributes this receiver reads; any other must be a well-formed extension.
const KNOWN: &[&str] = &[
    "specversion",
    "id",
    "source",
    "type",
    "subject",
    "time",
    "datacontenttype",
    "dataschema",
    "data",
    "data_base64",
];

fn extensions(event: &Map<String, Value>) -> Result<(), Refusal> {
    let mut count = 0;
    for (name, value) in event {
        if KNOWN.contains(&name.as_str()) {
            continue;
        }
        count += 1;
        let well_named = (1..=20).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if !well_named {
            return Err(Refusal::new(
                name.chars().take(64).collect::<String>(),
                "an extension attribute is named by 1 to 20 lowercase letters or digits",
            ));
        }
        let scalar = match value {
            Value::String(s) => s.len() <= 256,
            Value::Number(_) | Value::Bool(_) | Value::Null => true,
            _ => false,
        };
        if !scalar {
            return Err(Refusal::new(
                name,
                "an extension attribute is a scalar of at most 256 bytes",
            ));
        }
    }
    if count > MAX_EXTENSIONS {
        return Err(Refusal::new(
            "",
            format!("at most {MAX_EXTENSIONS} extension attributes"),
        ));
    }
    Ok(())
}

/// Checks one event of a batch against CloudEvents 1.0 and this receiver's limits.
pub fn validate(value: &Value, now: DateTime<Utc>) -> Result<CloudEvent, Refusal> {
    let Value::Object(event) = value else {
        return Err(Refusal::new("", "an event is a JSON object"));
    };
    match event.get("specversion") {
        Some(Value::String(v)) if v == "1.0" => {}
        Some(_) => return Err(Refusal::new("specversion", "must be \"1.0\"")),
        None => return Err(Refusal::new("specversion", "required")),
    }
    let id = required(event, "id", 256)?;
    let source = required(event, "source", 512)?;
    let event_type = required(event, "type", 256)?;
    let subject = text(event, "subject", 256)?;
    text(event, "dataschema", 512)?;
    extensions(event)?;
    Ok(CloudEvent {
        time: time(event, now)?,
        data: data(event)?,
        id,
        source,
        event_type,
        subject,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        "2026-12-03T12:00:00Z".parse().unwrap()
    }

    fn event() -> Value {
        json!({"specversion": "1.0", "id": "e1", "source": "gw", "type": "tokens",
               "time": "2026-12-03T11:59:00Z", "data": {"tokens": {"input": 12}}})
    }

    fn refused(mut change: impl FnMut(&mut Map<String, Value>)) -> String {
        let mut e = event();
        change(e.as_object_mut().unwrap());
        validate(&e, now()).expect_err("refused").field
    }

    #[test]
    fn a_well_formed_event_passes_and_a_missing_time_is_the_receipt_time() {
        let e = validate(&event(), now()).unwrap();
        assert_eq!((e.id.as_str(), e.event_type.as_str()), ("e1", "tokens"));
        let mut untimed = event();
        untimed.as_object_mut().unwrap().remove("time");
        assert_eq!(validate(&untimed, now()).unwrap().time, now());
    }

    #[test]
    fn each_broken_attribute_is_named() {
        assert_eq!(
            refused(|e| {
                e.insert("specversion".into(), json!("0.3"));
            }),
            "specversion"
        );
        assert_eq!(
            refused(|e| {
                e.remove("id");
            }),
            "id"
        );
        assert_eq!(
            refused(|e| {
                e.insert("source".into(), json!(""));
            }),
            "source"
        );
        assert_eq!(
            refused(|e| {
                e.insert("type".into(), json!(7));
            }),
            "type"
        );
        assert_eq!(
            refused(|e| {
                e.insert("subject".into(), json!("a\u{0}b"));
            }),
            "subject"
        );
        assert_eq!(
            refused(|e| {
                e.insert("time".into(), json!("yesterday"));
            }),
            "time"
        );
        assert_eq!(
            refused(|e| {
                e.insert("time".into(), json!("2026-12-03T12:05:01Z"));
            }),
            "time"
        );
        assert_eq!(
            refused(|e| {
                e.insert("time".into(), json!("2026-10-28T11:59:59Z"));
            }),
            "time"
        );
        assert_eq!(
            refused(|e| {
                e.insert("data".into(), json!([1]));
            }),
            "data"
        );
        assert_eq!(
            refused(|e| {
                e.insert("data".into(), json!({"x": "y".repeat(9000)}));
            }),
            "data"
        );
        assert_eq!(
            refused(|e| {
                e.insert("data_base64".into(), json!("AA=="));
            }),
            "data_base64"
        );
        assert_eq!(
            refused(|e| {
                e.insert("datacontenttype".into(), json!("text/plain"));
            }),
            "datacontenttype"
        );
        assert_eq!(
            refused(|e| {
                e.insert("Bad-Name".into(), json!(1));
            }),
            "Bad-Name"
        );
        assert_eq!(
            refused(|e| {
                e.insert("region".into(), json!({"no": 1}));
            }),
            "region"
        );
    }

    #[test]
    fn the_time_bounds_are_inclusive() {
        let mut e = event();
        e["time"] = json!("2026-12-03T12:05:00Z");
        assert!(validate(&e, now()).is_ok());
        e["time"] = json!("2026-10-29T12:00:00Z");
        assert!(validate(&e, now()).is_ok());
    }

    #[test]
    fn a_body_is_one_event_or_a_bounded_batch() {
        assert_eq!(parse_body(br#"{"id":"x"}"#).unwrap().events.len(), 1);
        assert_eq!(parse_body(b"[{},{}]").unwrap().events.len(), 2);
        assert!(parse_body(b"[]").is_err());
        assert!(parse_body(b"7").is_err());
        assert!(parse_body(b"{").is_err());
        let many = format!("[{}]", vec!["{}"; MAX_BATCH + 1].join(","));
        assert!(parse_body(many.as_bytes()).is_err());
    }
}
