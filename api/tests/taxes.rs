//! Taxes through the API, on both databases: the operator's rate table (operators only,
//! bounded, never overlapping, audited); golden invoices per tax case computed by hand
//! (domestic, reverse charge, export, an EU consumer abroad, credits paying the gross);
//! an invoice with two rates (late usage keeps the rate of the period it belongs to); a
//! close refused for a missing rate that changes nothing; and generated invoices checked
//! against a model written from docs/invoicing.md ("Taxes") that shares no code with the
//! server; and the PDF's text carries every field Art. 226 of the VAT directive requires.

mod support;

use chrono::TimeDelta;
use neocloud_schema::clock::Clock;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use support::billing::{
    ADD_RATE, Customer, Profile, add_rate, customer, egress, egress_sku, grant, seller,
};
use support::{Backend, TestApp, error_code};

const END_RATE: &str =
    "mutation($id: ID!, $u: DateTime!) { endTaxRate(id: $id, validUntil: $u) { id validUntil } }";
const INVOICE: &str = "id number subtotal tax credits total taxes { category jurisdiction percent taxable tax note } lines { kind amount taxCategory taxPercent taxAmount adjustsInvoiceId }";

async fn close(app: &TestApp, who: &Customer) -> Value {
    app.close_period(&who.id, INVOICE).await
}

fn amounts(invoice: &Value) -> [&str; 4] {
    ["subtotal", "tax", "credits", "total"].map(|k| invoice[k].as_str().unwrap_or("?"))
}

async fn rates_are_the_operators_and_never_overlap(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, tenant_key) = app.create_tenant("acme").await;
    let input = json!({"jurisdiction": "DE", "percent": "19", "validFrom": "2021-01-01T00:00:00Z"});
    let r = app
        .gql(Some(&tenant_key), ADD_RATE, json!({"i": input}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(Some(&tenant_key), "{ taxRates { id } }", json!({}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    let refused = [
        ("jurisdiction", json!("Germany"), "jurisdiction"),
        ("percent", json!("100"), "percent"),
        ("percent", json!("-1"), "percent"),
        ("percent", json!("19.12345"), "percent"),
        ("percent", json!("1e1"), "percent"),
        ("validUntil", json!("2020-01-01T00:00:00Z"), "validUntil"),
    ];
    for (field, value, named) in refused {
        let mut bad = input.clone();
        bad[field] = value.clone();
        let r = app
            .gql(Some(&app.operator_key), ADD_RATE, json!({"i": bad}))
            .await;
        assert_eq!(
            error_code(&r),
            Some("INVALID_INPUT"),
            "{field}={value}: {r}"
        );
        assert!(r.to_string().contains(named), "{r}");
    }
    let first = add_rate(&app, "de", "16", "2020-07-01T00:00:00Z").await;
    assert_eq!(first["jurisdiction"], "DE");
    // Open-ended: the next rate overlaps it until it is ended.
    let r = app
        .gql(Some(&app.operator_key), ADD_RATE, json!({"i": input}))
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    assert!(r.to_string().contains("overlaps"), "{r}");
    // Ended in the past: refused (what was in force stays so).
    let r = app
        .gql(
            Some(&app.operator_key),
            END_RATE,
            json!({"id": first["id"], "u": "2021-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    let until = (app.clock.now() + TimeDelta::days(1)).to_rfc3339();
    let r = app
        .gql(
            Some(&app.operator_key),
            END_RATE,
            json!({"id": first["id"], "u": until}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    add_rate(&app, "DE", "19", &until).await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ taxRates(jurisdiction: \"DE\") { percent validUntil } }",
            json!({}),
        )
        .await;
    let percents: Vec<&str> = r["data"]["taxRates"]
        .as_array()
        .expect("rates")
        .iter()
        .filter_map(|r| r["percent"].as_str())
        .collect();
    assert_eq!(percents, ["16", "19"], "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {objectType: \"tax_rate\"}) { edges { node { action } } } }",
            json!({}),
        )
        .await;
    let actions: Vec<&str> = r["data"]["auditLog"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .filter_map(|e| e["node"]["action"].as_str())
        .collect();
    assert_eq!(actions.len(), 3, "two added, one ended: {r}");
}

/// Hand-computed invoices at 0.10 per GB, DE seller, DE 19 % and FR 20 %.
async fn golden_invoices_per_tax_case(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    add_rate(&app, "FR", "20", "2020-01-01T00:00:00Z").await;
    let domestic = customer(&app, "domestic", Some(("DE", Some("DE811363057")))).await;
    let credited = customer(&app, "credited", Some(("DE", Some("DE811363057")))).await;
    let reverse = customer(&app, "reverse", Some(("FR", Some("FR40303265045")))).await;
    let export = customer(&app, "export", Some(("US", Some("12-3456789")))).await;
    let consumer = customer(&app, "consumer", Some(("FR", None))).await;
    let anonymous = customer(&app, "anonymous", None).await;
    grant(&app, &credited.id, "PROMOTIONAL", "1.00").await;
    app.advance(TimeDelta::minutes(20));
    let at = app.clock.now() - TimeDelta::minutes(10);
    for (who, gb) in [
        (&domestic, "15"),
        (&credited, "15"),
        (&reverse, "100"),
        (&export, "100"),
        (&consumer, "33.35"),
        (&anonymous, "10"),
    ] {
        egress(&app, who, "e1", gb, at).await;
    }

    // 1.50 × 19 % = 0.285: half away from zero, 0.29 (half-even would give 0.28).
    let invoice = close(&app, &domestic).await;
    assert_eq!(
        amounts(&invoice),
        ["1.50", "0.29", "0.00", "1.79"],
        "{invoice}"
    );
    assert_eq!(
        invoice["taxes"],
        json!([{"category": "STANDARD", "jurisdiction": "DE", "percent": "19",
                "taxable": "1.50", "tax": "0.29", "note": null}])
    );
    let line = &invoice["lines"][0];
    assert_eq!(
        (
            &line["taxCategory"],
            &line["taxPercent"],
            &line["taxAmount"]
        ),
        (&json!("STANDARD"), &json!("19"), &json!("0.29"))
    );
    // Credits pay the gross: 1.79 − 1.00.
    let invoice = close(&app, &credited).await;
    assert_eq!(
        amounts(&invoice),
        ["1.50", "0.29", "1.00", "0.79"],
        "{invoice}"
    );
    let credit = invoice["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .find(|l| l["kind"] == "CREDIT")
        .cloned()
        .unwrap_or_default();
    assert_eq!(credit["taxCategory"], Value::Null, "credits are not taxed");
    // On the PDF the credit is no charge line (the table adds up to the subtotal): it
    // comes off after tax, and the notes name it.
    let text = pdf_text(&pdf_of(&app, &credited, &invoice).await);
    let runs: Vec<&str> = text.lines().map(str::trim).collect();
    assert_eq!(runs.iter().filter(|r| **r == "-1.00").count(), 1, "{text}");
    assert!(text.contains("Credits applied after tax: "), "{text}");

    let invoice = close(&app, &reverse).await;
    assert_eq!(
        amounts(&invoice),
        ["10.00", "0.00", "0.00", "10.00"],
        "{invoice}"
    );
    assert_eq!(invoice["taxes"][0]["category"], "REVERSE_CHARGE");
    assert!(
        invoice["taxes"][0]["note"]
            .as_str()
            .is_some_and(|n| n.contains("Article 196")),
        "{invoice}"
    );
    let invoice = close(&app, &export).await;
    assert_eq!(
        amounts(&invoice),
        ["10.00", "0.00", "0.00", "10.00"],
        "{invoice}"
    );
    assert_eq!(invoice["taxes"][0]["category"], "EXPORT");
    // 33.35 GB × 0.10 = 3.335 → 3.34 (half-even); FR 20 %: 0.668 → 0.67.
    let invoice = close(&app, &consumer).await;
    assert_eq!(
        amounts(&invoice),
        ["3.34", "0.67", "0.00", "4.01"],
        "{invoice}"
    );
    assert_eq!(
        (
            &invoice["taxes"][0]["jurisdiction"],
            &invoice["taxes"][0]["percent"]
        ),
        (&json!("FR"), &json!("20"))
    );
    // No billing profile: taxed as a domestic consumer.
    let invoice = close(&app, &anonymous).await;
    assert_eq!(
        amounts(&invoice),
        ["1.00", "0.19", "0.00", "1.19"],
        "{invoice}"
    );

    exports_show_the_tax(&app, &reverse, &invoice_id(&app, &reverse).await).await;
}

async fn invoice_id(app: &TestApp, who: &Customer) -> String {
    let r = app
        .gql(
            Some(&who.admin),
            "{ invoices { edges { node { id number } } } }",
            json!({}),
        )
        .await;
    r["data"]["invoices"]["edges"]
        .as_array()
        .expect("invoices")
        .iter()
        .find(|e| e["node"]["number"].is_string())
        .and_then(|e| e["node"]["id"].as_str())
        .expect("a finalized invoice")
        .to_owned()
}

/// The reverse-charge invoice's CSV, JSON, FOCUS and PDF all carry its tax.
async fn exports_show_the_tax(app: &TestApp, who: &Customer, id: &str) {
    let export = |format: &'static str| {
        let request = app
            .client
            .get(format!(
                "{}/v1/invoices/{id}/export?format={format}",
                app.url
            ))
            .bearer_auth(&who.admin);
        async move {
            let body = request.send().await.expect("export").bytes().await;
            body.expect("body").to_vec()
        }
    };
    let csv = String::from_utf8(export("csv").await).expect("utf-8");
    let tax_row = csv
        .lines()
        .find(|l| l.contains(",TAX,"))
        .unwrap_or_else(|| panic!("{csv}"));
    assert!(tax_row.contains("reverse_charge,0,"), "{tax_row}");
    assert!(csv.lines().any(|l| l.contains(",TOTAL,")), "{csv}");
    let body: Value = serde_json::from_slice(&export("json").await).expect("JSON");
    assert_eq!(body["taxes"][0]["category"], "reverse_charge", "{body}");
    assert_eq!(body["tax"], "0.00");
    let focus = String::from_utf8(export("focus").await).expect("utf-8");
    assert!(focus.lines().any(|l| l.contains(",Tax,")), "{focus}");
    let pdf = String::from_utf8_lossy(&export("pdf").await).into_owned();
    for shown in ["(Reverse charge 0% of 10.00)", "Article 196"] {
        assert!(pdf.contains(shown), "the PDF shows {shown}");
    }
}

/// Late usage of a period closed at 16 % keeps 16 % on the next invoice, taxed at 19 %.
async fn late_usage_keeps_the_rate_of_its_period(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    let old = add_rate(&app, "DE", "16", "2020-07-01T00:00:00Z").await;
    let who = customer(&app, "acme", Some(("DE", Some("DE811363057")))).await;
    app.advance(TimeDelta::minutes(20));
    let first_period = app.clock.now() - TimeDelta::minutes(10);
    egress(&app, &who, "e1", "100", first_period).await;
    let first = close(&app, &who).await;
    assert_eq!(
        amounts(&first),
        ["10.00", "1.60", "0.00", "11.60"],
        "{first}"
    );

    let change = app.clock.now() + TimeDelta::minutes(1);
    let r = app
        .gql(
            Some(&app.operator_key),
            END_RATE,
            json!({"id": old["id"], "u": change.to_rfc3339()}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    add_rate(&app, "DE", "19", &change.to_rfc3339()).await;
    app.advance(TimeDelta::minutes(2));
    egress(&app, &who, "e2", "50", first_period).await;
    egress(
        &app,
        &who,
        "e3",
        "12.5",
        app.clock.now() - TimeDelta::seconds(30),
    )
    .await;
    let second = close(&app, &who).await;
    // 5.00 late at 16 % = 0.80; 1.25 (12.5 GB) at 19 % = 0.2375 → 0.24.
    assert_eq!(
        amounts(&second),
        ["6.25", "1.04", "0.00", "7.29"],
        "{second}"
    );
    let summary: Vec<(&str, &str, &str)> = second["taxes"]
        .as_array()
        .expect("taxes")
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or("?");
            (s("percent"), s("taxable"), s("tax"))
        })
        .collect();
    // In the order of the lines: the period's own first, then the late usage.
    assert_eq!(summary, [("19", "1.25", "0.24"), ("16", "5.00", "0.80")]);
    let late = second["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .find(|l| l["adjustsInvoiceId"] == first["id"])
        .cloned()
        .unwrap_or_else(|| panic!("{second}"));
    assert_eq!(late["taxPercent"], "16");
}

/// A close that needs a rate the table lacks is refused and takes no number; once the
/// rate is added it goes through with the next number.
async fn a_missing_rate_refuses_the_close_and_changes_nothing(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    let who = customer(&app, "wien", Some(("AT", None))).await;
    app.advance(TimeDelta::minutes(20));
    egress(
        &app,
        &who,
        "e1",
        "10",
        app.clock.now() - TimeDelta::minutes(10),
    )
    .await;
    let upcoming = app
        .gql(
            Some(&who.admin),
            "{ upcomingInvoice { tax total taxes { percent } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        upcoming["data"]["upcomingInvoice"]["tax"], "0.00",
        "the draft is shown untaxed while no rate applies: {upcoming}"
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { id } }",
            json!({"t": who.id}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
    assert!(r.to_string().contains("AT"), "{r}");
    let r = app
        .gql(
            Some(&who.admin),
            "{ invoices { edges { node { status } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["invoices"]["edges"],
        json!([{"node": {"status": "DRAFT"}}]),
        "{r}"
    );
    add_rate(&app, "AT", "20", "2020-01-01T00:00:00Z").await;
    let upcoming = app
        .gql(Some(&who.admin), "{ upcomingInvoice { tax } }", json!({}))
        .await;
    assert_eq!(upcoming["data"]["upcomingInvoice"]["tax"], "0.20");
    let invoice = close(&app, &who).await;
    assert_eq!(
        amounts(&invoice),
        ["1.00", "0.20", "0.00", "1.20"],
        "{invoice}"
    );
    let year = app.clock.now().format("%Y").to_string();
    assert_eq!(
        invoice["number"],
        format!("NC-{year}-000001"),
        "no number was lost"
    );
}

// ---- The model: docs/invoicing.md, "Taxes", written again. ----

const EU: [&str; 27] = [
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IT",
    "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK",
];

/// (category, jurisdiction whose rate applies, or none for a zero-rated supply).
fn model_rule(seller: &str, buyer: Option<(&str, bool)>) -> (&'static str, Option<String>) {
    let (country, business) = buyer.unwrap_or((seller, false));
    let eu = |c: &str| EU.contains(&c);
    if country == seller {
        ("STANDARD", Some(seller.to_owned()))
    } else if eu(seller) && eu(country) && business {
        ("REVERSE_CHARGE", None)
    } else if eu(seller) && eu(country) {
        ("STANDARD", Some(country.to_owned()))
    } else {
        ("EXPORT", None)
    }
}

/// Tax in cents of `cents` at `basis_points` (1/100 of a percent), half away from zero.
fn model_tax(cents: i64, basis_points: i64) -> i64 {
    let exact = i128::from(cents) * i128::from(basis_points); // in 1/10000 of a cent
    let magnitude = (exact.abs() + 5_000) / 10_000;
    i64::try_from(exact.signum() * magnitude).expect("fits")
}

fn cents_text(cents: i64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

fn percent_text(basis_points: i64) -> String {
    let text = format!("{}.{:02}", basis_points / 100, basis_points % 100);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

async fn generated_invoices_agree_with_the_model(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x7A8);
    let mut rates = std::collections::BTreeMap::new();
    for country in ["DE", "FR", "AT", "NL"] {
        let basis_points: i64 = rng.random_range(500..=2700);
        rates.insert(country, basis_points);
        add_rate(
            &app,
            country,
            &percent_text(basis_points),
            "2020-01-01T00:00:00Z",
        )
        .await;
    }
    let buyers: [(Option<Profile>, bool); 8] = [
        (None, false),
        (Some(("DE", Some("DE811363057"))), true),
        (Some(("DE", None)), false),
        (Some(("FR", Some("FR40303265045"))), true),
        (Some(("NL", None)), false),
        (Some(("AT", Some("ATU13585627"))), true),
        (Some(("US", None)), false),
        (Some(("CH", Some("CHE-123.456.788"))), true),
    ];
    let mut customers = Vec::new();
    for (i, (profile, _)) in buyers.iter().enumerate() {
        customers.push(customer(&app, &format!("c{i}"), *profile).await);
    }
    app.advance(TimeDelta::minutes(20));
    let at = app.clock.now() - TimeDelta::minutes(10);
    for (i, who) in customers.iter().enumerate() {
        // Tenths of a GB at 0.10 per GB: the line is that many cents, exactly.
        let tenths: i64 = rng.random_range(1..2_000_000);
        egress(
            &app,
            who,
            "e1",
            &format!("{}.{}", tenths / 10, tenths % 10),
            at,
        )
        .await;
        let invoice = close(&app, who).await;
        let (profile, business) = buyers[i];
        let (category, jurisdiction) = model_rule("DE", profile.map(|(c, _)| (c, business)));
        let basis_points = jurisdiction.as_deref().map_or(0, |j| rates[j]);
        let tax = model_tax(tenths, basis_points);
        assert_eq!(
            amounts(&invoice),
            [
                cents_text(tenths).as_str(),
                &cents_text(tax),
                "0.00",
                &cents_text(tenths + tax)
            ],
            "customer {i}: {invoice}"
        );
        let summary = &invoice["taxes"][0];
        assert_eq!(summary["category"], category, "customer {i}: {invoice}");
        assert_eq!(
            summary["percent"],
            percent_text(basis_points),
            "customer {i}"
        );
        assert_eq!(
            summary["jurisdiction"],
            jurisdiction.unwrap_or_else(|| "DE".into())
        );
    }
}

/// The PDF of `invoice`, as its tenant downloads it.
async fn pdf_of(app: &TestApp, who: &Customer, invoice: &Value) -> Vec<u8> {
    let id = invoice["id"].as_str().expect("id");
    app.client
        .get(format!("{}/v1/invoices/{id}/export?format=pdf", app.url))
        .bearer_auth(&who.admin)
        .send()
        .await
        .expect("pdf")
        .bytes()
        .await
        .expect("body")
        .to_vec()
}

/// The text of a PDF as its text runs, one per line, read here from the literal strings
/// of its (uncompressed) content streams: escapes undone, octal bytes as Latin-1.
fn pdf_text(pdf: &[u8]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < pdf.len() {
        if pdf[i] != b'(' {
            i += 1;
            continue;
        }
        i += 1;
        while i < pdf.len() && pdf[i] != b')' {
            if pdf[i] == b'\\' && i + 1 < pdf.len() {
                let next = pdf[i + 1];
                if next.is_ascii_digit() && i + 3 < pdf.len() {
                    let octal = std::str::from_utf8(&pdf[i + 1..i + 4]).unwrap_or("077");
                    out.push(char::from(u8::from_str_radix(octal, 8).unwrap_or(b'?')));
                    i += 4;
                } else {
                    out.push(char::from(next));
                    i += 2;
                }
            } else {
                out.push(char::from(pdf[i]));
                i += 1;
            }
        }
        out.push('\n');
        i += 1;
    }
    out
}

/// EU VAT directive Art. 226: every field an invoice must carry, found in the text of a
/// reverse-charged invoice's PDF and a domestic one's.
async fn the_pdf_carries_every_field_article_226_requires(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    let reverse = customer(&app, "reverse", Some(("FR", Some("FR40303265045")))).await;
    let domestic = customer(&app, "domestic", Some(("DE", Some("DE811363057")))).await;
    app.advance(TimeDelta::minutes(20));
    let at = app.clock.now() - TimeDelta::minutes(10);
    egress(&app, &reverse, "e1", "100", at).await;
    egress(&app, &domestic, "e1", "15", at).await;
    let first = close(&app, &reverse).await;
    let text = pdf_text(&pdf_of(&app, &reverse, &first).await);
    let year = app.clock.now().format("%Y").to_string();
    let today = app.clock.now().format("%Y-%m-%d").to_string();
    let required = [
        // (1) date of issue, (2) a sequential number
        ("date of issue", format!("{today} ")),
        ("sequential number", format!("Invoice no. NC-{year}-000001")),
        // (3) the supplier's VAT id, (4) the customer's for a reverse charge
        ("supplier VAT id", "VAT ID: DE136695976".to_owned()),
        ("customer VAT id", "VAT ID: FR40303265045".to_owned()),
        // (5) full names and addresses of both
        ("supplier name", "Rhein GPU GmbH".to_owned()),
        ("supplier address", "Rheinallee 1".to_owned()),
        ("supplier town", "55116 Mainz".to_owned()),
        ("customer name", "reverse Ltd".to_owned()),
        ("customer address", "Main Street 1".to_owned()),
        ("customer town", "1000 Capital".to_owned()),
        // (6) quantity and nature of the services, (7) the date they were supplied
        ("nature of the services", "egress-gb".to_owned()),
        ("quantity", "\n100\n".to_owned()),
        ("date of supply", "Billing period".to_owned()),
        // (8) taxable amount per rate and unit price before tax, (9) rate, (10) VAT due
        ("unit price before tax", "\n0.10\n".to_owned()),
        (
            "taxable amount, rate",
            "Reverse charge 0% of 10.00".to_owned(),
        ),
        ("VAT amount", "\n0.00\n".to_owned()),
        // (11a) the reverse charge mention
        (
            "reverse charge",
            "Reverse charge: VAT to be accounted for by the recipient".to_owned(),
        ),
    ];
    for (field, shown) in &required {
        assert!(
            text.contains(shown.as_str()),
            "Art. 226 {field}: `{shown}` not in\n{text}"
        );
    }
    let second = close(&app, &domestic).await;
    let text = pdf_text(&pdf_of(&app, &domestic, &second).await);
    for shown in [
        "VAT DE 19% of 1.50",
        "\n0.29\n",
        "VAT ID: DE811363057",
        "\n1.79\n",
    ] {
        assert!(text.contains(shown), "`{shown}` not in\n{text}");
    }
}

on_both_databases!(
    the_pdf_carries_every_field_article_226_requires,
    rates_are_the_operators_and_never_overlap,
    golden_invoices_per_tax_case,
    late_usage_keeps_the_rate_of_its_period,
    a_missing_rate_refuses_the_close_and_changes_nothing,
    generated_invoices_agree_with_the_model,
);
