use chrono::Utc;
use neocloud_schema::entity::meter;
use neocloud_schema::ids::{MeterId, SkuId};
use neocloud_schema::vocabulary::MeterAggregation;
use rust_decimal::Decimal;
use serde_json::{Map, Value, json};

use super::*;

fn meter(aggregation: MeterAggregation, value: Option<&str>, group_by: &[&str]) -> Meter {
    Meter::from_row(meter::Model {
        id: MeterId::new(),
        key: "tokens-in".into(),
        version: 1,
        event_type: "tokens".into(),
        value_path: value.map(str::to_owned),
        aggregation,
        group_by: json!(group_by),
        filter: None,
        max_value: Decimal::from(1_000_000).into(),
        sku_id: SkuId::new(),
        description: String::new(),
        created_at: Utc::now(),
    })
    .expect("its paths parse")
}

fn data(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn a_sum_meter_reads_its_path_and_groups() {
    let m = meter(
        MeterAggregation::Sum,
        Some("tokens.input"),
        &["model", "key"],
    );
    let r = m
        .reading(&data(
            json!({"tokens": {"input": 1200.5}, "model": "llama", "key": 7}),
        ))
        .unwrap();
    assert_eq!(r.value, Decimal::new(12005, 1));
    assert_eq!(r.group_key, r#"["llama","7"]"#);
    let missing_group = m.reading(&data(json!({"tokens": {"input": "3"}}))).unwrap();
    assert_eq!(
        (missing_group.value, missing_group.group_key.as_str()),
        (Decimal::from(3), r#"["",""]"#)
    );
}

#[test]
fn a_value_no_meter_can_take_is_refused_by_its_field() {
    let m = meter(MeterAggregation::Sum, Some("tokens.input"), &["model"]);
    for bad in [
        json!({}),
        json!({"tokens": {"input": -1}}),
        json!({"tokens": {"input": 1_000_001}}),
        json!({"tokens": {"input": "1e3"}}),
        json!({"tokens": {"input": [1]}}),
        json!({"tokens": {"input": 0.0000000000001}}),
    ] {
        assert_eq!(
            m.reading(&data(bad.clone()))
                .expect_err(&bad.to_string())
                .field,
            "data.tokens.input"
        );
    }
    let long = "m".repeat(129);
    let refused = m
        .reading(&data(json!({"tokens": {"input": 1}, "model": long})))
        .unwrap_err();
    assert_eq!(refused.field, "data.model");
    assert!(
        m.reading(&data(json!({"tokens": {"input": 1}, "model": {"a": 1}})))
            .is_err()
    );
    assert_eq!(
        m.reading(&data(json!({"tokens": {"input": 1e3}})))
            .unwrap()
            .value,
        Decimal::from(1000)
    );
}

#[test]
fn count_and_unique_count_read_what_they_count() {
    let count = meter(MeterAggregation::Count, None, &[]);
    assert_eq!(count.reading(&Map::new()).unwrap().value, Decimal::ONE);
    let unique = meter(MeterAggregation::UniqueCount, Some("user"), &[]);
    let r = unique.reading(&data(json!({"user": 42}))).unwrap();
    assert_eq!(
        (r.value, r.distinct.as_deref()),
        (Decimal::ZERO, Some("42"))
    );
    assert_eq!(unique.reading(&Map::new()).unwrap_err().field, "data.user");
}

#[test]
fn paths_are_dotted_names() {
    assert!(Path::parse("tokens.input").is_ok());
    assert!(Path::parse("a_b-c.d1").is_ok());
    for bad in [
        "",
        ".",
        "a..b",
        "a.b.",
        "$.a",
        "a[0]",
        "a b",
        "a.b.c.d.e.f.g.h.i",
    ] {
        assert!(Path::parse(bad).is_err(), "{bad}");
    }
}

fn new_meter(aggregation: MeterAggregation, value: Option<&str>) -> NewMeter {
    NewMeter {
        key: "egress".into(),
        event_type: "net.egress".into(),
        value_path: value.map(str::to_owned),
        aggregation,
        group_by: vec![],
        filter: vec![],
        max_value: None,
        sku: SkuId::new(),
        description: None,
    }
}

fn refused_field(new: &NewMeter) -> String {
    match check(new) {
        Err(MeteringError::Invalid(i)) => i.field,
        other => panic!("expected a refusal, got {:?}", other.map(|c| c.key)),
    }
}

#[test]
fn a_definition_is_checked_field_by_field() {
    assert!(check(&new_meter(MeterAggregation::Sum, Some("gb"))).is_ok());
    assert_eq!(
        check(&new_meter(MeterAggregation::Sum, Some("gb")))
            .unwrap()
            .max_value,
        DEFAULT_MAX_VALUE
    );
    assert_eq!(
        refused_field(&new_meter(MeterAggregation::Sum, None)),
        "valuePath"
    );
    assert_eq!(
        refused_field(&new_meter(MeterAggregation::Count, Some("gb"))),
        "valuePath"
    );
    let mut m = new_meter(MeterAggregation::Count, None);
    m.key = "not a slug".into();
    assert_eq!(refused_field(&m), "key");
    let mut m = new_meter(MeterAggregation::Count, None);
    m.group_by = vec!["a".into(); 5];
    assert_eq!(refused_field(&m), "groupBy");
    for bad in ["0", "-1", "1e3", "1000000000000001"] {
        let mut m = new_meter(MeterAggregation::Count, None);
        m.max_value = Some(bad.into());
        assert_eq!(refused_field(&m), "maxValue", "{bad}");
    }
    let mut m = new_meter(MeterAggregation::Count, None);
    m.event_type = " ".into();
    assert_eq!(refused_field(&m), "eventType");
    for values in [vec![], vec!["x".to_owned(); 17], vec!["x".repeat(129)]] {
        let mut m = new_meter(MeterAggregation::Count, None);
        m.filter = vec![Condition {
            path: "model".into(),
            values,
        }];
        assert_eq!(refused_field(&m), "filter");
    }
}

#[test]
fn a_filter_selects_the_events_whose_values_it_names() {
    let mut row = meter(MeterAggregation::Sum, Some("tokens"), &["api_key"]).row;
    row.filter = Some(json!([{"path": "model", "values": ["llama-70b"]},
                             {"path": "status", "values": ["ok", "incomplete"]}]));
    let m = Meter::from_row(row).expect("parses");
    let read = |v: Value| m.read(&data(v));
    let counted = read(json!({"model": "llama-70b", "status": "ok", "tokens": 7}));
    assert_eq!(
        counted.expect("counted").expect("selected").value,
        Decimal::from(7)
    );
    assert!(
        read(json!({"model": "llama-70b", "status": "incomplete", "tokens": 1}))
            .expect("ok")
            .is_some()
    );
    for other in [
        json!({"model": "mistral", "status": "ok", "tokens": 7}),
        json!({"model": "llama-70b", "status": "error", "tokens": 7}),
        json!({"model": ["llama-70b"], "status": "ok", "tokens": 7}),
        json!({"status": "ok", "tokens": 7}),
        // Not selected, so not refused for its missing value either.
        json!({"model": "mistral", "status": "ok"}),
    ] {
        assert_eq!(read(other.clone()), Ok(None), "{other}");
    }
    assert!(read(json!({"model": "llama-70b", "status": "ok", "tokens": -1})).is_err());
}

#[test]
fn the_bounds_are_the_powers_of_ten_they_say() {
    assert_eq!(DEFAULT_MAX_VALUE, Decimal::from(1_000_000_000_000_i64));
    assert_eq!(MAX_MAX_VALUE, Decimal::from(1_000_000_000_000_000_i64));
}

#[test]
fn a_stored_meter_whose_path_no_longer_parses_counts_nothing() {
    let mut row = meter(MeterAggregation::Sum, Some("gb"), &[]).row;
    row.value_path = Some("not a path".into());
    assert!(
        Meter::from_row(row.clone()).is_none(),
        "it must not count events as a sum"
    );
    row.value_path = Some("gb".into());
    row.group_by = json!(["a b"]);
    assert!(Meter::from_row(row).is_none());
}
