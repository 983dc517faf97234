//! Credit notes through the API, on both databases: operators issue them (tenants read
//! their own only); against an owed invoice a note reduces the amount due, line by line
//! and then in full, with the tax credited cumulatively, until the invoice is settled;
//! a refused note changes nothing and takes no number; an invoice paid by credits gets
//! its note back as balance; drafts and void invoices cannot be credited; every export
//! of a note carries its amounts.

mod support;

use chrono::TimeDelta;
use neocloud_schema::clock::Clock;
use serde_json::{Value, json};
use support::billing::{Customer, add_rate, customer, egress, egress_sku, grant, seller};
use support::{Backend, TestApp, error_code};

const ISSUE: &str = "mutation($i: IssueCreditNoteInput!) { issueCreditNote(input: $i) { id number invoiceId subtotal tax total applied toBalance refunded taxes { category percent net tax } lines { invoiceLine amount taxPercent } } }";
const DUE: &str = "query($id: ID!) { invoice(id: $id) { status amountDue creditedTotal creditNotes { number total } } }";

async fn issue(app: &TestApp, key: &str, input: Value) -> Value {
    app.gql(Some(key), ISSUE, json!({"i": input})).await
}

fn note_amounts(r: &Value) -> [&str; 5] {
    let note = &r["data"]["issueCreditNote"];
    ["subtotal", "tax", "total", "applied", "toBalance"].map(|k| note[k].as_str().unwrap_or("?"))
}

/// A DE customer billed 150 GB at 0.10 and 19 %: 15.00 + 2.85 = 17.85, on one line.
async fn billed(app: &TestApp, name: &str) -> (Customer, Value) {
    let who = customer(app, name, Some(("DE", Some("DE811363057")))).await;
    app.advance(TimeDelta::minutes(20));
    egress(
        app,
        &who,
        "e1",
        "150",
        app.clock.now() - TimeDelta::minutes(10),
    )
    .await;
    let invoice = app
        .close_period(
            &who.id,
            "id number status subtotal tax total lines { kind amount }",
        )
        .await;
    (who, invoice)
}

async fn an_owed_invoice_is_credited_down_to_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    let (who, invoice) = billed(&app, "acme").await;
    let (_, other_key) = app.create_tenant("globex").await;
    assert_eq!(
        (&invoice["subtotal"], &invoice["tax"], &invoice["total"]),
        (&json!("15.00"), &json!("2.85"), &json!("17.85")),
        "{invoice}"
    );
    let id = invoice["id"].clone();
    let lines = |amount: &str| {
        json!({"invoiceId": id, "form": "LINES", "lines": [{"line": 1, "amount": amount}],
               "reason": "an hour of degraded network"})
    };

    // Only operators issue; a tenant cannot, for itself or another.
    let r = issue(&app, &who.admin, lines("4.00")).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = issue(&app, &other_key, lines("4.00")).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    // 4.00 of line 1: 0.76 of tax, all of it off the amount due.
    let r = issue(&app, &app.operator_key, lines("4.00")).await;
    assert_eq!(
        note_amounts(&r),
        ["4.00", "0.76", "4.76", "4.76", "0.00"],
        "{r}"
    );
    let year = app.clock.now().format("%Y").to_string();
    let first = &r["data"]["issueCreditNote"];
    assert_eq!(first["number"], format!("NC-CN-{year}-000001"));
    let r = app.gql(Some(&who.admin), DUE, json!({"id": id})).await;
    let due = &r["data"]["invoice"];
    assert_eq!(
        (&due["status"], &due["amountDue"], &due["creditedTotal"]),
        (&json!("OPEN"), &json!("13.09"), &json!("4.76")),
        "{r}"
    );

    // Refused, each naming why, and none takes a number.
    let refused = [
        json!({"invoiceId": id, "form": "AMOUNT", "amount": "11.01", "reason": "too much"}),
        json!({"invoiceId": id, "form": "AMOUNT", "amount": "1.001", "reason": "sub-cent"}),
        json!({"invoiceId": id, "form": "AMOUNT", "amount": "1.00", "reason": " "}),
        json!({"invoiceId": id, "form": "LINES", "lines": [{"line": 9}], "reason": "no such line"}),
        json!({"invoiceId": id, "form": "FULL", "amount": "1.00", "reason": "both"}),
    ];
    for input in refused {
        let r = issue(&app, &app.operator_key, input.clone()).await;
        assert!(error_code(&r).is_some(), "{input}: {r}");
    }
    // The rest: 11.00 net; the tax on all 15.00 is 2.85, of which 0.76 went: 2.09.
    let r = issue(
        &app,
        &app.operator_key,
        json!({"invoiceId": id, "form": "FULL", "reason": "service withdrawn"}),
    )
    .await;
    assert_eq!(
        note_amounts(&r),
        ["11.00", "2.09", "13.09", "13.09", "0.00"],
        "{r}"
    );
    assert_eq!(
        r["data"]["issueCreditNote"]["number"],
        format!("NC-CN-{year}-000002")
    );
    let r = app.gql(Some(&who.admin), DUE, json!({"id": id})).await;
    let due = &r["data"]["invoice"];
    assert_eq!(
        (&due["status"], &due["amountDue"], &due["creditedTotal"]),
        (&json!("PAID"), &json!("0.00"), &json!("17.85")),
        "settled by its credit notes: {r}"
    );
    let r = issue(
        &app,
        &app.operator_key,
        json!({"invoiceId": id, "form": "FULL", "reason": "again"}),
    )
    .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");

    // The tenant reads its notes; another tenant sees none of them.
    let r = app
        .gql(
            Some(&who.admin),
            "{ creditNotes { number total } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["creditNotes"].as_array().map(Vec::len),
        Some(2),
        "{r}"
    );
    let r = app
        .gql(Some(&other_key), "{ creditNotes { number } }", json!({}))
        .await;
    assert_eq!(r["data"]["creditNotes"], json!([]), "{r}");
    let r = app
        .gql(
            Some(&other_key),
            "query($id: ID!) { creditNote(id: $id) { number } }",
            json!({"id": first["id"]}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let events = app.events_of(&who.admin, "credit_note.issued").await;
    assert_eq!(events.len(), 2, "{events:?}");
    let paid = app.events_of(&who.admin, "invoice.paid").await;
    assert_eq!(paid.len(), 1, "settled by credit notes: {paid:?}");

    exports_carry_the_note(&app, &who, &other_key, &first["id"]).await;
}

async fn exports_carry_the_note(app: &TestApp, who: &Customer, other_key: &str, id: &Value) {
    let id = id.as_str().expect("id");
    let export = |key: &str, format: &'static str| {
        let request = app
            .client
            .get(format!(
                "{}/v1/credit-notes/{id}/export?format={format}",
                app.url
            ))
            .bearer_auth(key);
        async move {
            let res = request.send().await.expect("export");
            (
                res.status().as_u16(),
                res.bytes().await.expect("body").to_vec(),
            )
        }
    };
    let (status, _) = export(other_key, "json").await;
    assert_eq!(status, 404, "another tenant's note is not found");
    let (status, body) = export(&who.admin, "json").await;
    assert_eq!(status, 200);
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        (&body["total"], &body["settlement"]["applied_to_invoice"]),
        (&json!("4.76"), &json!("4.76")),
        "{body}"
    );
    let (_, csv) = export(&who.admin, "csv").await;
    let csv = String::from_utf8(csv).expect("utf-8");
    assert!(
        csv.lines().any(|l| l.contains(",TAX,,0.76,standard,19")),
        "{csv}"
    );
    assert!(csv.lines().any(|l| l.contains(",TOTAL,,4.76")), "{csv}");
    let (_, focus) = export(&who.admin, "focus").await;
    let focus = String::from_utf8(focus).expect("utf-8");
    assert!(
        focus.lines().any(|l| l.contains(",Credit,Correction,")),
        "{focus}"
    );
    assert!(focus.lines().any(|l| l.contains("-0.76")), "{focus}");
    let (_, pdf) = export(&who.admin, "pdf").await;
    let pdf = String::from_utf8_lossy(&pdf).into_owned();
    for shown in [
        "(Credit note)",
        "(Credits invoice)",
        "(VAT 19% of 4.00)",
        "(4.76)",
    ] {
        assert!(pdf.contains(shown), "the PDF shows {shown}");
    }
}

/// An invoice settled by promotional credit gets its note back as prepaid balance, and
/// drafts and void invoices cannot be credited.
async fn a_paid_invoice_is_credited_to_the_balance(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    let who = customer(&app, "acme", Some(("DE", None))).await;
    grant(&app, &who.id, "PROMOTIONAL", "100.00").await;
    app.advance(TimeDelta::minutes(20));
    egress(
        &app,
        &who,
        "e1",
        "100",
        app.clock.now() - TimeDelta::minutes(10),
    )
    .await;
    let invoice = app.close_period(&who.id, "id status total credits").await;
    assert_eq!(
        (&invoice["status"], &invoice["total"], &invoice["credits"]),
        (&json!("PAID"), &json!("0.00"), &json!("11.90")),
        "{invoice}"
    );
    let r = issue(
        &app,
        &app.operator_key,
        json!({"invoiceId": invoice["id"], "form": "AMOUNT", "amount": "5.00", "reason": "goodwill"}),
    )
    .await;
    assert_eq!(
        note_amounts(&r),
        ["5.00", "0.95", "5.95", "0.00", "5.95"],
        "{r}"
    );
    let r = app
        .gql(
            Some(&who.admin),
            "{ creditGrants { kind amount reason } }",
            json!({}),
        )
        .await;
    let grants = r["data"]["creditGrants"].as_array().expect("grants");
    assert!(
        grants.iter().any(|g| g["kind"] == "PREPAID"
            && g["amount"] == "5.95"
            && g["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("credit note"))),
        "{r}"
    );

    // Credited, it is corrected and no longer voided.
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($id: ID!) { voidInvoice(id: $id, reason: \"x\") { status } }",
            json!({"id": invoice["id"]}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");

    let r = app
        .gql(Some(&who.admin), "{ upcomingInvoice { id } }", json!({}))
        .await;
    let draft = r["data"]["upcomingInvoice"]["id"].clone();
    let r = issue(
        &app,
        &app.operator_key,
        json!({"invoiceId": draft, "form": "FULL", "reason": "draft"}),
    )
    .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
}

on_both_databases!(
    an_owed_invoice_is_credited_down_to_nothing,
    a_paid_invoice_is_credited_to_the_balance,
);
