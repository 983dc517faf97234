//! Billing fixtures: a seller with a German VAT identity, tax rates, a metered SKU priced
//! 0.10 per GB (`net.egress` events), and customers with a billing profile and a reporter
//! key, so invoices have amounts computed by hand.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::TestApp;

pub const ADD_RATE: &str = "mutation($i: AddTaxRateInput!) { addTaxRate(input: $i) { id jurisdiction percent validFrom validUntil } }";
const SET_PROFILE: &str = "mutation($t: ID, $i: BillingProfileInput!) { setBillingProfile(tenantId: $t, input: $i) { vatId } }";

pub fn seller(s: &mut neocloud_api::settings::Settings) {
    s.billing.operator_name = "Rhein GPU GmbH".into();
    s.billing.seller_address = vec!["Rheinallee 1".into(), "55116 Mainz".into()];
    s.billing.seller_country = "DE".into();
    s.billing.seller_vat_id = "DE136695976".into();
}

pub async fn add_rate(app: &TestApp, jurisdiction: &str, percent: &str, from: &str) -> Value {
    let r = app
        .gql(
            Some(&app.operator_key),
            ADD_RATE,
            json!({"i": {"jurisdiction": jurisdiction, "percent": percent, "validFrom": from}}),
        )
        .await;
    assert!(r["errors"].is_null(), "addTaxRate failed: {r}");
    r["data"]["addTaxRate"].clone()
}

/// Grants `tenant` credits of `kind` (`PREPAID` or `PROMOTIONAL`) worth `amount`.
pub async fn grant(app: &TestApp, tenant: &str, kind: &str, amount: &str) {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!, $k: CreditKind!, $a: String!) { grantCredits(input: {tenantId: $t, kind: $k, amount: $a}) { id } }",
            json!({"t": tenant, "k": kind, "a": amount}),
        )
        .await;
    assert!(r["errors"].is_null(), "grantCredits failed: {r}");
}

/// The metered SKU `egress-gb` at 0.10 per GB, counted from `net.egress` events.
pub async fn egress_sku(app: &TestApp) {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createSku(input: {name: \"egress-gb\", form: METERED, unit: \"GB\", serviceCategory: NETWORKING, region: \"eu-west\", listPricePerHour: \"0.10\", currency: \"USD\"}) { sku { id } } }",
            json!({}),
        )
        .await;
    let sku = r["data"]["createSku"]["sku"]["id"].clone();
    assert!(sku.is_string(), "createSku failed: {r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($s: ID!) { createMeter(input: {key: \"egress\", eventType: \"net.egress\", valuePath: \"gb\", aggregation: SUM, skuId: $s}) { meter { key } } }",
            json!({"s": sku}),
        )
        .await;
    assert!(r["errors"].is_null(), "createMeter failed: {r}");
}

/// A billing profile: country and VAT id.
pub type Profile = (&'static str, Option<&'static str>);

/// A tenant with a reporter key, and a billing profile when given one.
pub async fn customer(app: &TestApp, name: &str, profile: Option<Profile>) -> Customer {
    let (id, admin) = app.create_tenant(name).await;
    if let Some((country, vat)) = profile {
        let input = json!({"legalName": format!("{name} Ltd"), "addressLines": ["Main Street 1"],
                           "postalCode": "1000", "city": "Capital", "country": country, "vatId": vat});
        let r = app
            .gql(Some(&admin), SET_PROFILE, json!({"i": input}))
            .await;
        assert!(r["errors"].is_null(), "setBillingProfile failed: {r}");
    }
    let r = app
        .gql(
            Some(&admin),
            "mutation { createApiKey(role: USAGE_REPORTER) { apiKey } }",
            json!({}),
        )
        .await;
    let reporter = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .unwrap_or_else(|| panic!("createApiKey failed: {r}"))
        .to_owned();
    Customer {
        id,
        admin,
        reporter,
    }
}

pub struct Customer {
    pub id: String,
    pub admin: String,
    pub reporter: String,
}

/// Reports `gb` of egress at `at` for the customer.
pub async fn egress(app: &TestApp, who: &Customer, event: &str, gb: &str, at: DateTime<Utc>) {
    let body = json!([{"specversion": "1.0", "id": event, "source": "router-1", "type": "net.egress",
                       "time": at.to_rfc3339(), "data": {"gb": gb}}]);
    let res = app
        .client
        .post(format!("{}/v1/events", app.url))
        .bearer_auth(&who.reporter)
        .header("content-type", "application/cloudevents-batch+json")
        .body(body.to_string())
        .send()
        .await
        .expect("request");
    let answer: Value = res.json().await.expect("JSON");
    assert_eq!(answer["accepted"], 1, "{answer}");
}
