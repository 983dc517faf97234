//! `SEND_INVOICE` collection against recorded Stripe payloads (`fixtures/stripe/`): the
//! emulator creates invoices only for subscriptions, so a local server answers as Stripe
//! did and records every request. A finalized invoice becomes one Stripe-hosted invoice —
//! a draft carrying our ids, one item per non-zero line and per tax rate (summing to our
//! total, tax included), finalized
//! and sent, every step under a key derived from our ids — its payment page is shown on
//! the invoice, and the recorded `invoice.paid` event marks it `PAID`.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use neocloud_metering::payments::webhook;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const SECRET: &str = "whsec_hosted_test";

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/stripe/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One request neocloud made: method and path, form fields, idempotency key.
#[derive(Debug, Clone)]
struct Seen {
    route: String,
    form: Vec<(String, String)>,
    key: Option<String>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

async fn recorded(req: HttpRequest, body: web::Bytes, log: web::Data<Log>) -> HttpResponse {
    let path = req.path().to_owned();
    let query = if req.method() == "GET" {
        req.query_string().to_owned()
    } else {
        String::from_utf8_lossy(&body).into_owned()
    };
    let form = reqwest::Url::parse(&format!("http://stripe/?{query}"))
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default();
    log.lock().expect("log").push(Seen {
        route: format!("{} {path}", req.method()),
        form,
        key: req
            .headers()
            .get("Idempotency-Key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
    let body = match (req.method().as_str(), path.as_str()) {
        ("POST", "/v1/customers") => fixture("customer.json"),
        ("POST", "/v1/invoices") => fixture("invoice_draft.json"),
        ("POST", "/v1/invoiceitems") => fixture("invoiceitem.json"),
        ("POST", p) if p.ends_with("/finalize") => fixture("invoice_finalized.json"),
        ("POST", p) if p.ends_with("/send") => fixture("invoice_sent.json"),
        ("POST", p) if p.ends_with("/void") => fixture("invoice_voided.json"),
        ("GET", "/v1/events") => {
            r#"{"object": "list", "data": [], "has_more": false, "url": "/v1/events"}"#.into()
        }
        _ => {
            return HttpResponse::NotFound().json(json!({"error": {
                "type": "invalid_request_error", "message": format!("Unrecognized request URL ({path})")}}));
        }
    };
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}

/// A local server answering with the recorded payloads; returns its URL and request log.
fn recorded_stripe() -> (String, Log) {
    let log: Log = Arc::default();
    let data = web::Data::new(log.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(recorded))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let url = format!("http://{}", server.addrs()[0]);
    tokio::spawn(server.run());
    (url, log)
}

/// Runs a GPU for the tenant, closes its period and waits until the outbox sent the
/// hosted invoice; returns our invoice and its `paymentUrl`.
async fn closed_and_sent(app: &TestApp, tenant: &str, key: &str) -> (Value, Value) {
    app.run_gpu_at_ten_a_second("acme", key).await;
    app.advance(chrono::TimeDelta::milliseconds(2100));
    let invoice = app
        .close_period(
            tenant,
            "id number total paymentState lines { id: description amount }",
        )
        .await;
    assert_eq!(invoice["paymentState"], "PENDING", "{invoice}");
    let mut url = Value::Null;
    for _ in 0..100 {
        let r = app
            .gql(
                Some(key),
                "query($id: ID!) { invoice(id: $id) { paymentUrl } }",
                json!({"id": invoice["id"]}),
            )
            .await;
        url = r["data"]["invoice"]["paymentUrl"].clone();
        if url.is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (invoice, url)
}

const MODE: &str = "mutation($t: ID!, $d: Int) { setCollectionMode(tenantId: $t, mode: SEND_INVOICE, daysUntilDue: $d) { collectionMode daysUntilDue } }";

fn recorded_app(
    backend: Backend,
    adjust: fn(&mut neocloud_api::settings::Settings),
) -> impl std::future::Future<Output = Option<(TestApp, Log)>> {
    let (stripe, log) = recorded_stripe();
    async move {
        let app = TestApp::spawn_with(backend, move |s| {
            s.stripe_secret_key = Some("sk_test_recorded".to_owned().into());
            s.stripe_webhook_secret = Some(SECRET.to_owned().into());
            s.stripe_api_base = Some(stripe);
            adjust(s);
        })
        .await?;
        Some((app, log))
    }
}

async fn a_send_invoice_tenant_gets_one_hosted_invoice_and_pays_it(backend: Backend) {
    // A German seller charging 19 %: the hosted invoice must ask for the tax too.
    let Some((app, log)) = recorded_app(backend, support::billing::seller).await else {
        return;
    };
    support::billing::add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    let (tenant, key) = app.create_tenant("acme").await;
    // Payment terms are checked; a refused change changes nothing.
    for days in [0, 366] {
        let r = app
            .gql(
                Some(&app.operator_key),
                MODE,
                json!({"t": tenant, "d": days}),
            )
            .await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    }
    let r = app
        .gql(
            Some(&key),
            "{ paymentAccount { collectionMode } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["paymentAccount"], Value::Null, "{r}");
    let r = app
        .gql(Some(&key), MODE, json!({"t": tenant, "d": 14}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(Some(&app.operator_key), MODE, json!({"t": tenant, "d": 14}))
        .await;
    assert_eq!(
        r["data"]["setCollectionMode"],
        json!({"collectionMode": "SEND_INVOICE", "daysUntilDue": 14}),
        "{r}"
    );

    let (invoice, url) = closed_and_sent(&app, &tenant, &key).await;
    let id = invoice["id"].as_str().expect("id").to_owned();
    let recorded_url: Value = serde_json::from_str(&fixture("invoice_sent.json")).expect("json");
    assert_eq!(url, recorded_url["hosted_invoice_url"]);

    let seen: Vec<Seen> = log
        .lock()
        .expect("log")
        .iter()
        .filter(|s| !s.route.starts_with("GET /v1/events"))
        .cloned()
        .collect();
    let routes: Vec<&str> = seen.iter().map(|s| s.route.as_str()).collect();
    let stripe_invoice = "in_1Q4MzbLkdIwHu7ixbLk2Ysf7";
    let items = seen
        .iter()
        .filter(|s| s.route == "POST /v1/invoiceitems")
        .collect::<Vec<_>>();
    let mut expected = vec!["POST /v1/customers", "POST /v1/invoices"];
    expected.extend(items.iter().map(|_| "POST /v1/invoiceitems"));
    let finalize = format!("POST /v1/invoices/{stripe_invoice}/finalize");
    let send = format!("POST /v1/invoices/{stripe_invoice}/send");
    expected.extend([finalize.as_str(), send.as_str()]);
    assert_eq!(routes, expected);

    assert_eq!(seen[0].key, Some(format!("neocloud-customer-{tenant}")));
    assert_eq!(seen[0].field("metadata[tenant_id]"), Some(tenant.as_str()));
    let draft = &seen[1];
    let hosted_key = format!("neocloud-hosted-{id}");
    assert_eq!(draft.key, Some(format!("{hosted_key}-invoice")));
    assert_eq!(draft.field("customer"), Some("cus_QwB5Ao1AzY1Xvd"));
    assert_eq!(draft.field("collection_method"), Some("send_invoice"));
    assert_eq!(draft.field("days_until_due"), Some("14"));
    assert_eq!(
        draft.field("pending_invoice_items_behavior"),
        Some("exclude")
    );
    assert_eq!(draft.field("currency"), Some("usd"));
    assert_eq!(draft.field("metadata[invoice_id]"), Some(id.as_str()));
    assert_eq!(
        draft.field("metadata[invoice_number]"),
        invoice["number"].as_str()
    );

    // One item per non-zero line, keyed by the line, and one for the tax, summing to the
    // total (tax included) in cents.
    let lines: Vec<&Value> = invoice["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| {
            l["amount"].as_str().and_then(|a| a.parse::<Decimal>().ok()) != Some(Decimal::ZERO)
        })
        .collect();
    assert_eq!(items.len(), lines.len() + 1, "{seen:?}");
    let mut keys = std::collections::HashSet::new();
    let mut cents = 0i64;
    for item in &items {
        assert_eq!(item.field("invoice"), Some(stripe_invoice));
        assert_eq!(item.field("customer"), Some("cus_QwB5Ao1AzY1Xvd"));
        assert_eq!(item.field("metadata[invoice_id]"), Some(id.as_str()));
        let line = item.field("metadata[line_id]").expect("line id");
        assert_eq!(item.key, Some(format!("neocloud-invoice-line-{line}")));
        assert!(keys.insert(line.to_owned()), "a line sent twice: {seen:?}");
        cents += item
            .field("amount")
            .and_then(|a| a.parse::<i64>().ok())
            .expect("amount");
    }
    let total: Decimal = invoice["total"]
        .as_str()
        .expect("total")
        .parse()
        .expect("decimal");
    assert_eq!(Decimal::from(cents), total * Decimal::ONE_HUNDRED);
    assert_eq!(
        seen[seen.len() - 2].key,
        Some(format!("{hosted_key}-finalize"))
    );
    assert_eq!(seen[seen.len() - 1].key, Some(format!("{hosted_key}-send")));

    // Delivered once: later rounds of the worker send nothing more.
    let count = seen.len();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let again = log
        .lock()
        .expect("log")
        .iter()
        .filter(|s| !s.route.starts_with("GET /v1/events"))
        .count();
    assert_eq!(again, count);

    // Stripe's recorded `invoice.paid` for it settles our invoice.
    let body = fixture("event_invoice_paid.json")
        .replace("{{invoice_id}}", &id)
        .replace(
            "{{invoice_number}}",
            invoice["number"].as_str().expect("number"),
        )
        .replace("{{tenant_id}}", &tenant)
        .replace("{{created}}", &chrono::Utc::now().timestamp().to_string());
    let res = app
        .client
        .post(format!("{}/v1/stripe/webhook", app.url))
        .header(
            "Stripe-Signature",
            webhook::sign(body.as_bytes(), SECRET, chrono::Utc::now().timestamp()),
        )
        .body(body)
        .send()
        .await
        .expect("post");
    assert_eq!(res.status().as_u16(), 200);
    let r = app
        .gql(
            Some(&key),
            "query($id: ID!) { invoice(id: $id) { status paymentState } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(
        r["data"]["invoice"],
        json!({"status": "PAID", "paymentState": "PAID"}),
        "{r}"
    );
}

async fn voiding_an_invoice_voids_its_hosted_invoice(backend: Backend) {
    let Some((app, log)) = recorded_app(backend, |_| {}).await else {
        return;
    };
    let (tenant, key) = app.create_tenant("acme").await;
    let r = app
        .gql(Some(&app.operator_key), MODE, json!({"t": tenant, "d": 30}))
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let (invoice, url) = closed_and_sent(&app, &tenant, &key).await;
    assert!(url.is_string(), "never sent: {invoice}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($id: ID!) { voidInvoice(id: $id, reason: \"billed in error\") { status paymentState } }",
            json!({"id": invoice["id"]}),
        )
        .await;
    assert_eq!(
        r["data"]["voidInvoice"],
        json!({"status": "VOID", "paymentState": "VOID"}),
        "{r}"
    );
    let void = "POST /v1/invoices/in_1Q4MzbLkdIwHu7ixbLk2Ysf7/void";
    let mut voids = Vec::new();
    for _ in 0..100 {
        voids = log
            .lock()
            .expect("log")
            .iter()
            .filter(|s| s.route == void)
            .cloned()
            .collect();
        if !voids.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(voids.len(), 1, "{voids:?}");
    assert_eq!(
        voids[0].key,
        Some(format!(
            "neocloud-void-{}",
            invoice["id"].as_str().expect("id")
        ))
    );
}

on_both_databases!(
    a_send_invoice_tenant_gets_one_hosted_invoice_and_pays_it,
    voiding_an_invoice_voids_its_hosted_invoice,
);
