//! Legal identities on invoices, through the API on both databases: a tenant admin sets its
//! billing profile (checked field by field; a refused one changes nothing; audited), its
//! other users read it, another tenant can do neither; finalizing freezes seller (from the
//! operator's settings) and buyer onto the invoice, so a later change of profile leaves
//! the issued invoice, its JSON export and its PDF as they were.

mod support;

use chrono::Duration;
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const SET: &str = "mutation($t: ID, $i: BillingProfileInput!) { setBillingProfile(tenantId: $t, input: $i) { legalName country vatId vatIdStatus addressLines } }";
const GET: &str =
    "query($t: ID) { billingProfile(tenantId: $t) { legalName vatId vatIdStatus poNumber } }";

fn profile(name: &str, vat: &str) -> Value {
    json!({"legalName": name, "addressLines": ["Invalidenstraße 1"], "postalCode": "10115",
           "city": "Berlin", "country": "DE", "vatId": vat, "poNumber": "PO-7",
           "billingEmail": "ap@acme.example"})
}

fn seller(s: &mut neocloud_api::settings::Settings) {
    s.billing.operator_name = "Nordic GPU Cloud AB".into();
    s.billing.seller_address = vec!["Kungsgatan 1".into(), "111 43 Stockholm".into()];
    s.billing.seller_country = "SE".into();
    s.billing.seller_vat_id = "SE556058115801".into();
    s.billing.seller_registration = "Bolagsverket 556058-1158".into();
    s.billing.seller_email = "billing@nordic-gpu.example".into();
    s.billing.seller_bank = "IBAN SE45 5000 0000 0583 9825 7466".into();
}

async fn a_tenant_keeps_its_own_profile_checked(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (acme, key) = app.create_tenant("acme").await;
    let (_, other_key) = app.create_tenant("globex").await;
    let r = app.gql(Some(&key), GET, json!({})).await;
    assert!(r["data"]["billingProfile"].is_null(), "{r}");

    let r = app
        .gql(
            Some(&key),
            SET,
            json!({"i": profile("Acme Research GmbH", "DE 136 695 976")}),
        )
        .await;
    let saved = &r["data"]["setBillingProfile"];
    assert_eq!(saved["vatId"], "DE136695976", "{r}");
    assert_eq!(saved["vatIdStatus"], "check_digits_valid");

    // A refused profile names its field and changes nothing.
    for (vat, why) in [
        ("DE136695978", "check digits"),
        ("FR61954506077", "another country's"),
    ] {
        let r = app
            .gql(Some(&key), SET, json!({"i": profile("Changed", vat)}))
            .await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{why}: {r}");
        assert!(r.to_string().contains("vatId"), "{r}");
    }
    let r = app.gql(Some(&key), GET, json!({})).await;
    assert_eq!(
        r["data"]["billingProfile"]["legalName"],
        "Acme Research GmbH"
    );

    // Another tenant reads and writes only its own.
    let r = app.gql(Some(&other_key), GET, json!({"t": acme})).await;
    assert!(error_code(&r).is_some(), "{r}");
    let r = app
        .gql(
            Some(&other_key),
            SET,
            json!({"t": acme, "i": profile("Hijack", "DE136695976")}),
        )
        .await;
    assert!(error_code(&r).is_some(), "{r}");
    let r = app.gql(Some(&other_key), GET, json!({})).await;
    assert!(r["data"]["billingProfile"].is_null(), "{r}");

    // Operators read any tenant's; the change was audited.
    let r = app
        .gql(Some(&app.operator_key), GET, json!({"t": acme}))
        .await;
    assert_eq!(r["data"]["billingProfile"]["poNumber"], "PO-7", "{r}");
    let r = app
        .gql(
            Some(&key),
            "{ auditLog(filter: {action: \"tenant.billing_profile\"}) { edges { node { after } } } }",
            json!({}),
        )
        .await;
    let edges = r["data"]["auditLog"]["edges"].as_array().expect("edges");
    assert_eq!(edges.len(), 1, "{r}");
}

async fn an_issued_invoice_keeps_the_parties_it_was_issued_to(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    let (tenant, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&key),
            SET,
            json!({"i": profile("Acme Research GmbH", "DE136695976")}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    app.run_gpu_at_ten_a_second("acme", &key).await;
    app.advance(Duration::seconds(30));
    let invoice = app.close_period(&tenant, "id").await;
    let id = invoice["id"].as_str().expect("id").to_owned();
    let r = app
        .gql(
            Some(&key),
            SET,
            json!({"i": profile("Acme Renamed GmbH", "DE811363057")}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");

    let export = |format: &'static str| {
        let (app, key, id) = (&app, key.clone(), id.clone());
        async move {
            app.client
                .get(format!(
                    "{}/v1/invoices/{id}/export?format={format}",
                    app.url
                ))
                .bearer_auth(key)
                .send()
                .await
                .expect("export")
                .bytes()
                .await
                .expect("body")
        }
    };
    let body: Value = serde_json::from_slice(&export("json").await).expect("JSON");
    let parties = &body["parties"];
    assert_eq!(
        parties["buyer"]["legal_name"], "Acme Research GmbH",
        "{body}"
    );
    assert_eq!(parties["buyer"]["vat_id"], "DE136695976");
    assert_eq!(parties["seller"]["legal_name"], "Nordic GPU Cloud AB");
    assert_eq!(parties["seller"]["vat_id"], "SE556058115801");

    let pdf = export("pdf").await;
    let text = String::from_utf8_lossy(&pdf);
    for shown in [
        "(Acme Research GmbH)",
        "(VAT ID: DE136695976 \\(not verified\\))",
        "(PO: PO-7)",
        "(Nordic GPU Cloud AB)",
        "(VAT ID: SE556058115801)",
        "(Registration: Bolagsverket 556058-1158)",
        "(Bank: IBAN SE45 5000 0000 0583 9825 7466)",
    ] {
        assert!(text.contains(shown), "the PDF shows {shown}");
    }
    assert!(!text.contains("Acme Renamed"));
}

on_both_databases!(
    a_tenant_keeps_its_own_profile_checked,
    an_issued_invoice_keeps_the_parties_it_was_issued_to,
);
