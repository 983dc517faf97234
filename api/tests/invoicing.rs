//! Invoicing through the API: the open period's draft, closing it into a numbered,
//! immutable invoice whose total is the sum of its rounded lines, late usage becoming an
//! adjustment on the next invoice (once), credits, voiding, exports, and another tenant
//! seeing none of it.

mod support;

use chrono::{DateTime, Datelike, Duration, DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::{Exact, invoice, invoice_line};
use rust_decimal::{Decimal, RoundingStrategy};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const INVOICE: &str = "id number status periodStart periodEnd currency plan subtotal credits total
    lines { kind description sku metric tier quantity unit unitPrice amount adjustsInvoiceId }";

struct Setup {
    tenant: String,
    key: String,
    token: String,
    version: String,
    sku: String,
    gpu: String,
    allocation: String,
    started: DateTime<Utc>,
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A tenant on a plan priced per second (3600 per GPU-hour) so that a few seconds of
/// usage make visible amounts, with one running H100.
async fn setup(app: &TestApp) -> Setup {
    let r = app.register_node("hgx-0", "H100", 8, "").await;
    let token = support::agent_token(&r);
    let sku = app.create_h100_sku().await;
    let plan = json!({"plan": "per-second", "currency": "USD", "effectiveFrom": "2026-01-01T00:00:00Z",
        "minimumBillableSeconds": 0,
        "rates": [
            {"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": "3600"},
            {"sku": sku, "metric": "ACTIVE", "tiersMode": "GRADUATED", "tiers": [
                {"upTo": "0.0005", "unitPrice": "7200", "flatFee": "0.25"}, {"upTo": null, "unitPrice": "3600"}]}]});
    let version = app.create_plan_version(plan).await;
    tenant_on_plan(app, "acme", &version, &sku, token).await
}

/// A new tenant on `version` with one running GPU of `sku`.
async fn tenant_on_plan(
    app: &TestApp,
    name: &str,
    version: &str,
    sku: &str,
    token: String,
) -> Setup {
    let (tenant, key) = app.create_tenant(name).await;
    app.assign_plan(&tenant, version).await;
    let r = app
        .gql(
            Some(&key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { allocations { id startedAt gpus { uuid } } } } }",
            json!({"s": sku}),
        )
        .await;
    let alloc = &r["data"]["placeOrder"]["order"]["allocations"][0];
    Setup {
        tenant,
        key,
        token,
        version: version.to_owned(),
        sku: sku.to_owned(),
        gpu: alloc["gpus"][0]["uuid"].as_str().expect("gpu").to_owned(),
        allocation: alloc["id"].as_str().expect("id").to_owned(),
        started: alloc["startedAt"]
            .as_str()
            .expect("start")
            .parse()
            .expect("time"),
    }
}

/// Two seconds at 50 % SM, starting `offset` seconds after the allocation's first whole
/// second.
async fn ingest(app: &TestApp, s: &Setup, boot: &str, seq: u64, offset: i64) {
    let start = s
        .started
        .duration_trunc(TimeDelta::seconds(1))
        .expect("trunc")
        + Duration::seconds(1 + offset);
    let body = json!({"version": 1, "agent_id": "hgx-0", "boot_id": boot, "seq": seq,
        "window": {"start": iso(start), "end": iso(start + Duration::seconds(2))},
        "devices": [{"uuid": s.gpu, "sm_util_pct": 50.0, "fb_used_bytes": 1u64 << 30, "energy_mj": 1000,
            "temp_c": 60, "health": "ok", "events": [],
            "processes": [{"pid": 42, "allocation_id": s.allocation, "labels": {},
                "sm_util_pct": 50.0, "fb_used_bytes": 1u64 << 30}]}]});
    let res = app
        .client
        .post(format!("{}/v1/ingest", app.url))
        .bearer_auth(&s.token)
        .json(&body)
        .send()
        .await
        .expect("ingest");
    assert_eq!(res.status().as_u16(), 200, "{:?}", res.text().await);
}

fn dec(v: &Value) -> Decimal {
    v.as_str()
        .unwrap_or_else(|| panic!("not a decimal string: {v}"))
        .parse()
        .expect("decimal")
}

/// Every line is quantity × unit price rounded half-even to cents; the total is their sum.
fn assert_exact(invoice: &Value) {
    let lines = invoice["lines"].as_array().expect("lines");
    let mut sum = Decimal::ZERO;
    for line in lines {
        let exact = dec(&line["quantity"]) * dec(&line["unitPrice"]);
        let rounded = exact.round_dp_with_strategy(2, RoundingStrategy::MidpointNearestEven);
        assert_eq!(rounded, dec(&line["amount"]), "{line}");
        sum += dec(&line["amount"]);
    }
    assert_eq!(sum, dec(&invoice["total"]), "{invoice}");
}

async fn close(app: &TestApp, tenant: &str) -> Value {
    let r = app
        .gql(
            Some(&app.operator_key),
            &format!("mutation($t: ID!) {{ closeBillingPeriod(tenantId: $t) {{ {INVOICE} }} }}"),
            json!({"t": tenant}),
        )
        .await;
    let invoice = r["data"]["closeBillingPeriod"].clone();
    assert!(invoice.is_object(), "{r}");
    invoice
}

/// Lifts the triggers that keep finalized invoices and their lines from changing (to
/// write an invoice as an older server did); returns what `restore_freeze` puts back.
async fn lift_freeze(db: &sea_orm::DatabaseConnection) -> Vec<String> {
    use sea_orm::{ConnectionTrait, DbBackend, Statement};
    if db.get_database_backend() == DbBackend::Postgres {
        for table in ["invoices", "invoice_lines"] {
            db.execute_unprepared(&format!("ALTER TABLE {table} DISABLE TRIGGER USER"))
                .await
                .expect("disable");
        }
        return Vec::new();
    }
    let rows = db
        .query_all_raw(Statement::from_string(
            DbBackend::Sqlite,
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' \
             AND tbl_name IN ('invoices', 'invoice_lines')",
        ))
        .await
        .expect("triggers");
    let mut saved = Vec::new();
    for row in rows {
        let name: String = row.try_get("", "name").expect("name");
        saved.push(row.try_get::<String>("", "sql").expect("sql"));
        db.execute_unprepared(&format!("DROP TRIGGER {name}"))
            .await
            .expect("drop");
    }
    assert!(!saved.is_empty(), "the freeze triggers exist");
    saved
}

async fn restore_freeze(db: &sea_orm::DatabaseConnection, saved: Vec<String>) {
    use sea_orm::{ConnectionTrait, DbBackend};
    if db.get_database_backend() == DbBackend::Postgres {
        for table in ["invoices", "invoice_lines"] {
            db.execute_unprepared(&format!("ALTER TABLE {table} ENABLE TRIGGER USER"))
                .await
                .expect("enable");
        }
    }
    for sql in saved {
        db.execute_unprepared(&sql).await.expect("recreate");
    }
}

/// The lines of `invoice` of `kind`, in order.
fn lines_of_kind<'a>(invoice: &'a Value, kind: &str) -> Vec<&'a Value> {
    invoice["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["kind"] == kind)
        .collect()
}

async fn invoice_by_id(app: &TestApp, key: &str, id: &Value) -> Value {
    let r = app
        .gql(
            Some(key),
            &format!("query($id: ID!) {{ invoice(id: $id) {{ {INVOICE} }} }}"),
            json!({"id": id}),
        )
        .await;
    r["data"]["invoice"].clone()
}

async fn upcoming(app: &TestApp, key: &str) -> Value {
    let r = app
        .gql(
            Some(key),
            &format!("{{ upcomingInvoice {{ {INVOICE} }} }}"),
            json!({}),
        )
        .await;
    let invoice = r["data"]["upcomingInvoice"].clone();
    assert!(invoice.is_object(), "{r}");
    invoice
}

async fn export(app: &TestApp, key: &str, id: &str, format: &str) -> (u16, Vec<u8>) {
    let res = app
        .client
        .get(format!(
            "{}/v1/invoices/{id}/export?format={format}",
            app.url
        ))
        .bearer_auth(key)
        .send()
        .await
        .expect("export");
    let status = res.status().as_u16();
    (status, res.bytes().await.expect("body").to_vec())
}

async fn a_closed_period_becomes_a_numbered_immutable_invoice(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.start_of_next_minute();
    let s = setup(&app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    ingest(&app, &s, &boot, 1, 0).await;
    app.advance_past(s.started + Duration::seconds(4));

    let draft = upcoming(&app, &s.key).await;
    assert_eq!(draft["status"], "DRAFT", "{draft}");
    assert!(draft["number"].is_null());
    // Assigned within the minute the tenant was created in: the plan covers all of it.
    assert_eq!(draft["plan"], "per-second v1");
    assert_exact(&draft);

    let first = close(&app, &s.tenant).await;
    let year = Utc::now().year();
    assert_eq!(first["number"], format!("NC-{year}-000001"), "{first}");
    assert_eq!(first["status"], "OPEN");
    assert_exact(&first);
    let lines = first["lines"].as_array().expect("lines");
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["kind"].as_str()).collect();
    assert!(
        kinds.contains(&"USAGE") && kinds.contains(&"FLAT_FEE"),
        "{first}"
    );
    // One GPU-second active (2 s at 50 %): all of it in tier 1 (up to 0.0005 h = 1.8 s).
    let active: Vec<&Value> = lines
        .iter()
        .filter(|l| l["metric"] == "ACTIVE" && l["kind"] == "USAGE")
        .collect();
    assert_eq!(active.len(), 1, "{first}");
    assert_eq!(active[0]["quantity"], "0.00027777777777777778");
    assert_eq!(active[0]["tier"], 1);
    assert_eq!(active[0]["amount"], "2.00");

    // A tenant's periods run from its anchor day; the day is checked.
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createTenant(input: {name: \"anchored\", currency: \"USD\", billingAnchorDay: 15}) { tenant { billingAnchorDay } apiKey } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["createTenant"]["tenant"]["billingAnchorDay"], 15,
        "{r}"
    );
    let anchored = r["data"]["createTenant"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    let period_end = upcoming(&app, &anchored).await["periodEnd"].clone();
    assert!(
        period_end
            .as_str()
            .is_some_and(|e| e[8..].starts_with("15T00:00:00")),
        "{period_end}"
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createTenant(input: {name: \"late\", currency: \"USD\", billingAnchorDay: 31}) { apiKey } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");

    // The next period starts where this one ended; numbers have no gaps.
    let next = upcoming(&app, &s.key).await;
    assert_eq!(next["periodStart"], first["periodEnd"]);
    app.advance(TimeDelta::milliseconds(1100));
    let second = close(&app, &s.tenant).await;
    assert_eq!(second["number"], format!("NC-{year}-000002"));

    // Finalized invoices refuse every change, whatever path the write takes.
    let id: uuid::Uuid = first["id"].as_str().expect("id").parse().expect("uuid");
    let tamper = invoice::Entity::update_many()
        .col_expr(invoice::Column::Total, Expr::value(Exact(Decimal::ZERO)))
        .filter(invoice::Column::Id.eq(id))
        .exec(&app.db)
        .await;
    assert!(tamper.is_err(), "a finalized invoice was changed");
    let delete = invoice_line::Entity::delete_many()
        .filter(invoice_line::Column::InvoiceId.eq(id))
        .exec(&app.db)
        .await;
    assert!(delete.is_err(), "a finalized invoice's lines were deleted");

    // Exports, for the tenant.
    let id = first["id"].as_str().expect("id");
    let (code, csv) = export(&app, &s.key, id, "csv").await;
    assert_eq!(code, 200);
    let csv = String::from_utf8(csv).expect("utf-8");
    // A header, the lines, and the TOTAL row.
    assert_eq!(csv.lines().count(), lines.len() + 2, "{csv}");
    assert!(csv.starts_with("invoice,status,period_start"), "{csv}");
    let (code, body) = export(&app, &s.key, id, "json").await;
    assert_eq!(code, 200);
    let exported: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(exported["total"], first["total"]);
    assert!(exported["rating"]["input"]["segments"].is_array());
    let (code, pdf) = export(&app, &s.key, id, "pdf").await;
    assert_eq!(code, 200);
    assert!(pdf.starts_with(b"%PDF-"), "not a PDF");
    let (code, focus) = export(&app, &s.key, id, "focus").await;
    assert_eq!(code, 200);
    assert!(String::from_utf8_lossy(&focus).starts_with("BillingAccountId,"));
    let (code, _) = export(&app, &s.key, id, "xlsx").await;
    assert_eq!(code, 400);

    // Another tenant sees nothing of it.
    let (_, other) = app.create_tenant("globex").await;
    let r = app
        .gql(
            Some(&other),
            "query($id: ID!) { invoice(id: $id) { id total } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    assert_eq!(export(&app, &other, id, "csv").await.0, 404);
    let r = app
        .gql(
            Some(&other),
            "{ invoices { edges { node { id } } } }",
            json!({}),
        )
        .await;
    let ids: Vec<&Value> = r["data"]["invoices"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| &e["node"]["id"])
        .collect();
    assert!(!ids.contains(&&json!(id)), "{r}");
    let r = app
        .gql(
            Some(&other),
            "mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { id } }",
            json!({"t": s.tenant}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    for query in [
        "query($t: ID) { upcomingInvoice(tenantId: $t) { id } }",
        "query($t: ID) { creditGrants(tenantId: $t) { id } }",
        "query($t: ID) { invoices(tenantId: $t) { edges { node { id } } } }",
    ] {
        let r = app.gql(Some(&other), query, json!({"t": s.tenant})).await;
        assert_eq!(error_code(&r), Some("NOT_FOUND"), "{query}: {r}");
    }
    let r = app
        .gql(
            Some(&s.key),
            "mutation($id: ID!) { voidInvoice(id: $id, reason: \"mine\") { id } }",
            json!({"id": id}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    for (tenant, code) in [
        ("not-an-id", "INVALID_INPUT"),
        ("01a2285a-0000-7000-8000-000000000000", "NOT_FOUND"),
    ] {
        let r = app
            .gql(
                Some(&app.operator_key),
                "mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { id } }",
                json!({"t": tenant}),
            )
            .await;
        assert_eq!(error_code(&r), Some(code), "{r}");
    }

    // Voiding needs a reason, keeps the number, and happens once.
    let void = "mutation($id: ID!, $r: String!) { voidInvoice(id: $id, reason: $r) { status number voidReason } }";
    let r = app
        .gql(Some(&app.operator_key), void, json!({"id": id, "r": " "}))
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            void,
            json!({"id": id, "r": "duplicate billing"}),
        )
        .await;
    assert_eq!(r["data"]["voidInvoice"]["status"], "VOID", "{r}");
    assert_eq!(r["data"]["voidInvoice"]["number"], first["number"]);
    let r = app
        .gql(
            Some(&app.operator_key),
            void,
            json!({"id": id, "r": "again"}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
}

async fn late_usage_is_an_adjustment_on_the_next_invoice_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    ingest(&app, &s, &boot, 1, 0).await;
    app.advance_past(s.started + Duration::seconds(6));
    let first = close(&app, &s.tenant).await;

    // Samples from before the close arrive after it.
    ingest(&app, &s, &boot, 2, 2).await;
    let draft = upcoming(&app, &s.key).await;
    let adjustments: Vec<&Value> = lines_of_kind(&draft, "ADJUSTMENT");
    // One more GPU-second active: 0.8 s fill tier 1 (up to 1.8 s), 0.2 s go to tier 2.
    assert_eq!(adjustments.len(), 2, "{draft}");
    for (line, tier, amount) in [(adjustments[0], 1, "1.60"), (adjustments[1], 2, "0.20")] {
        assert_eq!(line["adjustsInvoiceId"], first["id"]);
        assert_eq!(line["metric"], "ACTIVE");
        assert_eq!(
            (&line["tier"], &line["amount"]),
            (&json!(tier), &json!(amount))
        );
    }
    assert_eq!(
        dec(&adjustments[0]["quantity"]) + dec(&adjustments[1]["quantity"]),
        dec(&json!("0.00027777777777777778"))
    );
    assert_exact(&draft);

    // The closed invoice did not change.
    let r = app
        .gql(
            Some(&s.key),
            &format!("query($id: ID!) {{ invoice(id: $id) {{ {INVOICE} }} }}"),
            json!({"id": first["id"]}),
        )
        .await;
    assert_eq!(r["data"]["invoice"], first, "{r}");

    // Billed on the next invoice, and never again.
    app.advance(TimeDelta::milliseconds(1100));
    let second = close(&app, &s.tenant).await;
    assert!(!lines_of_kind(&second, "ADJUSTMENT").is_empty(), "{second}");
    let after = upcoming(&app, &s.key).await;
    assert!(lines_of_kind(&after, "ADJUSTMENT").is_empty(), "{after}");
}

/// An invoice finalized before ALLOCATED counted SKU units billed a node once per GPU. It
/// stays as it was billed, and late usage of its period is compared only where the two
/// rules agree: the sampled metrics come as adjustments, the node's held time does not.
async fn an_invoice_of_the_old_unit_rule_stays_and_only_late_usage_adjusts_it(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    app.register_node("hgx-1", "H100", 8, "").await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createSku(input: {name: \"h100-node\", gpuModel: \"H100\", form: WHOLE_NODE, region: \"eu-west\", listPricePerHour: \"19.92\", currency: \"USD\"}) { sku { id } } }",
            json!({}),
        )
        .await;
    let node_sku = r["data"]["createSku"]["sku"]["id"].clone();
    let r = app
        .gql(
            Some(&s.key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }",
            json!({"s": node_sku}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let boot = uuid::Uuid::new_v4().to_string();
    ingest(&app, &s, &boot, 1, 0).await;
    app.advance_past(s.started + Duration::seconds(6));
    let first = close(&app, &s.tenant).await;
    let first_id: uuid::Uuid = first["id"].as_str().expect("id").parse().expect("uuid");

    // Make it an invoice of the old rule, as an older server wrote it: the node billed
    // per GPU...
    let node_line = invoice_line::Entity::find()
        .filter(invoice_line::Column::InvoiceId.eq(first_id))
        .filter(
            invoice_line::Column::SkuId.eq(node_sku
                .as_str()
                .expect("id")
                .parse::<uuid::Uuid>()
                .expect("uuid")),
        )
        .one(&app.db)
        .await
        .expect("read")
        .expect("the node's line");
    let times_eight = |v: Exact| Exact(v.get() * Decimal::from(8));
    let frozen = lift_freeze(&app.db).await;
    invoice_line::Entity::update_many()
        .col_expr(
            invoice_line::Column::Quantity,
            Expr::value(times_eight(node_line.quantity)),
        )
        .col_expr(
            invoice_line::Column::AmountExact,
            Expr::value(times_eight(node_line.amount_exact)),
        )
        .col_expr(
            invoice_line::Column::Amount,
            Expr::value(times_eight(node_line.amount)),
        )
        .filter(invoice_line::Column::Id.eq(node_line.id))
        .exec(&app.db)
        .await
        .expect("old line");
    restore_freeze(&app.db, frozen).await;
    // (which, marked as rated in SKU units, would read as billed 8 times too much)...
    let draft = upcoming(&app, &s.key).await;
    assert!(
        lines_of_kind(&draft, "ADJUSTMENT")
            .iter()
            .any(|l| l["metric"] == "ALLOCATED"),
        "{draft}"
    );
    // ...and without the rule's marker.
    let stored = invoice::Entity::find_by_id(first_id)
        .one(&app.db)
        .await
        .expect("read")
        .expect("invoice");
    let mut rating = stored.rating.clone().expect("rating");
    rating
        .as_object_mut()
        .expect("object")
        .remove("allocated_unit");
    let frozen = lift_freeze(&app.db).await;
    invoice::Entity::update_many()
        .col_expr(invoice::Column::Rating, Expr::value(Some(rating)))
        .filter(invoice::Column::Id.eq(first_id))
        .exec(&app.db)
        .await
        .expect("old rating");
    restore_freeze(&app.db, frozen).await;
    let as_billed = invoice_by_id(&app, &s.key, &first["id"]).await;

    // Samples from before the close arrive after it: only they are adjusted.
    ingest(&app, &s, &boot, 2, 2).await;
    let draft = upcoming(&app, &s.key).await;
    let adjustments: Vec<&Value> = lines_of_kind(&draft, "ADJUSTMENT");
    assert!(!adjustments.is_empty(), "{draft}");
    assert!(
        adjustments.iter().all(|l| l["metric"] == "ACTIVE"),
        "the node's held time differs by the rule, not by late usage: {draft}"
    );
    assert_eq!(
        invoice_by_id(&app, &s.key, &first["id"]).await,
        as_billed,
        "a finalized invoice never changes"
    );
}

async fn credits_pay_oldest_expiry_first_and_come_back_when_voided(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let grant =
        "mutation($i: GrantCreditsInput!) { grantCredits(input: $i) { id amount remaining kind } }";
    let soon = iso(Utc::now() + Duration::days(30));
    for (amount, expires) in [("1.50", Some(soon)), ("1000.00", None)] {
        let r = app
            .gql(
                Some(&app.operator_key),
                grant,
                json!({"i": {"tenantId": s.tenant, "kind": "PREPAID", "amount": amount, "expiresAt": expires}}),
            )
            .await;
        assert_eq!(r["data"]["grantCredits"]["remaining"], amount, "{r}");
    }
    let past = iso(Utc::now() - Duration::days(1));
    for (bad, expires, field) in [
        ("-5", None, "amount"),
        ("0.001", None, "amount"),
        ("1e3", None, "amount"),
        ("5", Some(past), "expiresAt"),
    ] {
        let r = app
            .gql(
                Some(&app.operator_key),
                grant,
                json!({"i": {"tenantId": s.tenant, "kind": "PROMOTIONAL", "amount": bad, "expiresAt": expires}}),
            )
            .await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{bad}: {r}");
        assert!(
            r["errors"][0]["message"]
                .as_str()
                .unwrap_or("")
                .contains(field)
        );
    }
    let r = app
        .gql(
            Some(&s.key),
            grant,
            json!({"i": {"tenantId": s.tenant, "kind": "PROMOTIONAL", "amount": "5"}}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    app.advance_past(s.started + Duration::seconds(3));
    let invoice = close(&app, &s.tenant).await;
    assert_exact(&invoice);
    let credits: Vec<&Value> = lines_of_kind(&invoice, "CREDIT");
    // The expiring grant goes first and is used up; the other covers the rest.
    assert_eq!(credits.len(), 2, "{invoice}");
    assert_eq!(credits[0]["amount"], "-1.50");
    assert_eq!(dec(&invoice["total"]), Decimal::ZERO, "{invoice}");
    assert_eq!(
        dec(&invoice["subtotal"]),
        dec(&invoice["credits"]),
        "{invoice}"
    );
    let remaining = |r: &Value| -> Vec<String> {
        r["data"]["creditGrants"]
            .as_array()
            .expect("grants")
            .iter()
            .map(|g| g["remaining"].as_str().expect("remaining").to_owned())
            .collect()
    };
    let query = "query($t: ID) { creditGrants(tenantId: $t) { remaining } }";
    let r = app.gql(Some(&s.key), query, json!({})).await;
    let left = remaining(&r);
    assert_eq!(left[0], "0.00", "{r}");
    assert_eq!(
        dec(&json!(left[1])),
        Decimal::from(1000) - (dec(&invoice["subtotal"]) - Decimal::new(150, 2)),
        "{r}"
    );

    app.gql(
        Some(&app.operator_key),
        "mutation($id: ID!) { voidInvoice(id: $id, reason: \"wrong plan\") { status } }",
        json!({"id": invoice["id"]}),
    )
    .await;
    let r = app
        .gql(Some(&app.operator_key), query, json!({"t": s.tenant}))
        .await;
    assert_eq!(
        remaining(&r),
        vec!["1.50".to_owned(), "1000.00".to_owned()],
        "{r}"
    );
}

/// The ACTIVE lines of the tenant's upcoming invoice.
async fn active_lines(app: &TestApp, key: &str) -> Vec<Value> {
    let draft = upcoming(app, key).await;
    draft["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["metric"] == "ACTIVE")
        .map(|l| json!([l["kind"], l["quantity"], l["unitPrice"], l["amount"]]))
        .collect()
}

async fn reordered_and_repeated_batches_bill_the_same(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let a = setup(&app).await;
    let b = tenant_on_plan(&app, "globex", &a.version, &a.sku, a.token.clone()).await;
    let (boot_a, boot_b, replay) = (
        uuid::Uuid::new_v4().to_string(),
        uuid::Uuid::new_v4().to_string(),
        uuid::Uuid::new_v4().to_string(),
    );
    for seq in 1..=5 {
        ingest(&app, &a, &boot_a, seq, 2 * (seq as i64 - 1)).await;
    }
    // The same usage for the other tenant: out of order, repeated, and partly replayed
    // by a restarted agent that lost its spool.
    for seq in [4, 2, 2, 5, 1, 4, 3, 1] {
        ingest(&app, &b, &boot_b, seq, 2 * (seq as i64 - 1)).await;
    }
    for seq in [2, 3] {
        ingest(&app, &b, &replay, seq, 2 * (seq as i64 - 1)).await;
    }
    // A draft is rated up to now: read both once every window (up to 11 s after the later
    // start) has passed, so how fast the test ran does not decide what each one holds.
    app.advance_past(b.started.max(a.started) + Duration::seconds(12));
    let lines_a = active_lines(&app, &a.key).await;
    assert!(!lines_a.is_empty());
    assert_eq!(lines_a, active_lines(&app, &b.key).await);
}

/// Ends the allocation of `s` (its charges stop growing).
async fn release(app: &TestApp, s: &Setup) {
    let r = app
        .gql(
            Some(&s.key),
            "mutation($id: ID!) { releaseAllocation(id: $id) { id } }",
            json!({"id": s.allocation}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
}

/// `invoices` as the key sees them: (id, status, total) oldest first.
async fn listed(app: &TestApp, key: &str, tenant: Option<&str>) -> Vec<(Value, Value, Value)> {
    let r = app
        .gql(
            Some(key),
            "query($t: ID) { invoices(tenantId: $t) { nodes { id status total finalized } } }",
            json!({"t": tenant}),
        )
        .await;
    r["data"]["invoices"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|i| (i["id"].clone(), i["status"].clone(), i["total"].clone()))
        .collect()
}

async fn the_invoice_list_shows_the_open_draft_at_its_current_total(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    app.advance_past(s.started + Duration::seconds(2));
    release(&app, &s).await;

    // Listed before anything read the draft, at what it costs now.
    let before = listed(&app, &s.key, None).await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0].1, "DRAFT");
    assert!(dec(&before[0].2) >= Decimal::from(2), "{before:?}");
    let draft = upcoming(&app, &s.key).await;
    assert_eq!(before[0].0, draft["id"]);
    assert_eq!(before[0].2, draft["total"], "{draft}");
    assert_eq!(
        listed(&app, &app.operator_key, Some(&s.tenant)).await,
        before
    );

    // Finalized invoices keep their billed totals; the next draft is listed too.
    let first = close(&app, &s.tenant).await;
    let after = listed(&app, &s.key, None).await;
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(
        (&after[0].0, &after[0].1, &after[0].2),
        (&first["id"], &json!("OPEN"), &first["total"])
    );
    assert_eq!(after[1].1, "DRAFT");
    assert_eq!(after[1].2, upcoming(&app, &s.key).await["total"]);

    // Another tenant lists only its own.
    let (_, other) = app.create_tenant("globex").await;
    let theirs = listed(&app, &other, None).await;
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert!(after.iter().all(|mine| mine.0 != theirs[0].0));
    let r = app
        .gql(
            Some(&other),
            "query($t: ID) { invoices(tenantId: $t) { nodes { id } } }",
            json!({"t": s.tenant}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
}

/// A closed invoice with a tier-1 ACTIVE line and its flat fee: (setup, invoice).
async fn closed_with_tiers(app: &TestApp) -> (Setup, Value) {
    let s = setup(app).await;
    let boot = uuid::Uuid::new_v4().to_string();
    ingest(app, &s, &boot, 1, 0).await;
    app.advance_past(s.started + Duration::seconds(4));
    let invoice = close(app, &s.tenant).await;
    (s, invoice)
}

async fn the_json_export_numbers_tiers_from_one_as_graphql_and_csv_do(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (s, invoice) = closed_with_tiers(&app).await;
    let id = invoice["id"].as_str().expect("id");
    let tiered: Vec<&Value> = invoice["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["metric"] == "ACTIVE")
        .collect();
    assert_eq!(tiered.len(), 2, "{invoice}");
    assert!(tiered.iter().all(|l| l["tier"] == 1), "{invoice}");

    let (_, body) = export(&app, &s.key, id, "json").await;
    let exported: Value = serde_json::from_slice(&body).expect("json");
    let active: Vec<&Value> = exported["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["metric"] == "active")
        .collect();
    assert_eq!(active.len(), 2, "{exported}");
    for line in &active {
        assert_eq!(line["tier"], 1, "{line}");
        assert_eq!(line["trace"]["tier"], 1, "{line}");
    }
    let stored: Vec<&Value> = exported["rating"]["output"]["lines"]
        .as_array()
        .expect("rated lines")
        .iter()
        .filter(|l| l["metric"] == "active")
        .collect();
    assert_eq!(stored.len(), 2, "{exported}");
    assert!(stored.iter().all(|l| l["tier"] == 1), "{exported}");

    let (_, csv) = export(&app, &s.key, id, "csv").await;
    let csv = String::from_utf8(csv).expect("utf-8");
    let tiers: Vec<&str> = csv
        .lines()
        .filter(|l| l.contains(",active,"))
        .map(|l| l.split(',').nth(10).expect("tier cell"))
        .collect();
    assert_eq!(tiers, ["1", "1"], "{csv}");
}

async fn the_csv_export_ends_with_the_invoice_total(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: GrantCreditsInput!) { grantCredits(input: $i) { id } }",
            json!({"i": {"tenantId": s.tenant, "kind": "PROMOTIONAL", "amount": "1.00"}}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    app.advance_past(s.started + Duration::seconds(3));
    let invoice = close(&app, &s.tenant).await;
    let (_, csv) = export(&app, &s.key, invoice["id"].as_str().expect("id"), "csv").await;
    let csv = String::from_utf8(csv).expect("utf-8");
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let n = rows.len();
    assert_eq!(
        n,
        invoice["lines"].as_array().expect("lines").len() + 4,
        "{csv}"
    );
    let closing: Vec<(&str, &str)> = rows[n - 3..].iter().map(|r| (r[6], r[14])).collect();
    let credits = format!("-{}", invoice["credits"].as_str().expect("credits"));
    assert_eq!(
        closing,
        [
            ("SUBTOTAL", invoice["subtotal"].as_str().expect("subtotal")),
            ("CREDITS", credits.as_str()),
            ("TOTAL", invoice["total"].as_str().expect("total")),
        ],
        "{csv}"
    );
    assert_eq!(rows[n - 1][0], invoice["number"].as_str().expect("number"));
}

/// The FOCUS rows of an export, as column → cell maps.
fn focus_rows(body: &[u8]) -> Vec<std::collections::HashMap<String, String>> {
    let text = String::from_utf8(body.to_vec()).expect("utf-8");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, c)| ((*h).to_owned(), c.to_owned()))
                .collect()
        })
        .collect()
}

async fn focus_lists_the_catalog_price_and_the_charges_own_period(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    app.register_node("hgx-0", "H100", 8, "").await;
    let sku = app.create_h100_sku().await;
    let version = app
        .create_plan_version(json!({"plan": "spot", "currency": "USD",
            "effectiveFrom": "2026-01-01T00:00:00Z", "minimumBillableSeconds": 0,
            "rates": [{"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT",
                "unitPrice": "3600", "spotUnitPrice": "1800"}]}))
        .await;
    let (tenant, key) = app.create_tenant("acme").await;
    app.assign_plan(&tenant, &version).await;
    let r = app
        .gql(
            Some(&key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1, class: SPOT}) { order { allocations { id startedAt } } } }",
            json!({"s": sku}),
        )
        .await;
    let allocation = &r["data"]["placeOrder"]["order"]["allocations"][0];
    let started: DateTime<Utc> = allocation["startedAt"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .parse()
        .expect("time");
    app.advance_past(started + Duration::seconds(2));
    let invoice = close(&app, &tenant).await;
    let (code, body) = export(&app, &key, invoice["id"].as_str().expect("id"), "focus").await;
    assert_eq!(code, 200);
    let rows = focus_rows(&body);
    assert_eq!(rows.len(), 1, "{}", String::from_utf8_lossy(&body));
    let row = &rows[0];
    let line = &invoice["lines"][0];
    // Billed at the spot price; listed at the catalog's on-demand 2.49 per GPU-hour.
    let quantity = dec(&line["quantity"]);
    assert_eq!(dec(&json!(row["PricingQuantity"])), quantity);
    assert_eq!(row["ListUnitPrice"], "2.49");
    assert_eq!(
        dec(&json!(row["ListCost"])),
        Decimal::new(249, 2) * quantity
    );
    assert_eq!(row["ContractedUnitPrice"], "1800");
    assert_eq!(row["BilledCost"], line["amount"].as_str().expect("amount"));
    assert_eq!(row["EffectiveCost"], row["BilledCost"]);
    assert_eq!(row["PricingCategory"], "Dynamic");
    assert_eq!(row["ChargeCategory"], "Usage");
    assert_eq!(row["ConsumedQuantity"], row["PricingQuantity"]);
    assert_eq!(row["ResourceId"], allocation["id"].as_str().expect("id"));
    assert_eq!(row["ResourceType"], "Allocation");
    assert_eq!(row["RegionId"], "eu-west");
    assert_eq!(row["SkuId"], sku);
    assert_eq!(
        row["InvoiceId"],
        invoice["number"].as_str().expect("number")
    );
    // The charge runs from when the allocation started, not from the period's start.
    let second = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    assert_eq!(row["ChargePeriodStart"], second(started));
    let period_start: DateTime<Utc> = invoice["periodStart"]
        .as_str()
        .expect("start")
        .parse()
        .expect("time");
    assert_eq!(row["BillingPeriodStart"], second(period_start));
    assert!(row["ChargePeriodEnd"].ends_with('Z'), "{row:?}");
}

async fn a_credit_granted_mid_period_pays_the_whole_open_period_by_default(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    // Charged from the start of the period; nothing is charged after the grants.
    app.advance_past(s.started + Duration::seconds(4));
    release(&app, &s).await;
    let grant =
        "mutation($i: GrantCreditsInput!) { grantCredits(input: $i) { id remaining coversFrom } }";
    let draft = upcoming(&app, &s.key).await;

    // Coverage cannot start before the open period: refused, and nothing is granted.
    let before = iso(draft["periodStart"]
        .as_str()
        .expect("start")
        .parse::<DateTime<Utc>>()
        .expect("time")
        - Duration::days(1));
    let r = app
        .gql(
            Some(&app.operator_key),
            grant,
            json!({"i": {"tenantId": s.tenant, "kind": "PROMOTIONAL", "amount": "1.00", "coversFrom": before}}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("coversFrom"),
        "{r}"
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($t: ID) { creditGrants(tenantId: $t) { id } }",
            json!({"t": s.tenant}),
        )
        .await;
    assert_eq!(r["data"]["creditGrants"], json!([]), "{r}");

    // The default covers the whole open period.
    let r = app
        .gql(
            Some(&app.operator_key),
            grant,
            json!({"i": {"tenantId": s.tenant, "kind": "PROMOTIONAL", "amount": "3.50", "reason": "goodwill"}}),
        )
        .await;
    assert_eq!(
        r["data"]["grantCredits"]["coversFrom"], draft["periodStart"],
        "{r}"
    );
    // A grant covering from now on pays nothing of what was charged before.
    let now = (Utc::now() + Duration::seconds(1))
        .duration_trunc(TimeDelta::seconds(1))
        .expect("trunc");
    let r = app
        .gql(
            Some(&app.operator_key),
            grant,
            json!({"i": {"tenantId": s.tenant, "kind": "PREPAID", "amount": "2.00", "coversFrom": iso(now)}}),
        )
        .await;
    let covers: Option<DateTime<Utc>> = r["data"]["grantCredits"]["coversFrom"]
        .as_str()
        .and_then(|t| t.parse().ok());
    assert_eq!(covers, Some(now), "{r}");

    let invoice = close(&app, &s.tenant).await;
    assert_exact(&invoice);
    let credits: Vec<&Value> = lines_of_kind(&invoice, "CREDIT");
    let subtotal = dec(&invoice["subtotal"]);
    assert!(subtotal >= Decimal::from(4), "{invoice}");
    assert_eq!(credits.len(), 1, "{invoice}");
    assert_eq!(
        dec(&credits[0]["amount"]),
        -Decimal::new(350, 2).min(subtotal),
        "{invoice}"
    );
    assert_eq!(dec(&invoice["total"]), subtotal - Decimal::new(350, 2));
}

/// Amounts are stored as the exact decimal (PostgreSQL: `NUMERIC`, SQLite: its text); a
/// stored value that is not a decimal is refused by PostgreSQL and, on SQLite, makes the
/// read fail — it never shows as a price of zero.
async fn a_stored_amount_is_the_exact_decimal_and_garbage_never_reads_as_zero(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let s = setup(&app).await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createSku(input: {name: \"odd-price\", gpuModel: \"H100\", form: WHOLE_GPU, region: \"eu-west\", listPricePerHour: \"2.1050\", currency: \"USD\"}) { sku { id } } }",
            json!({}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let stored = neocloud_schema::entity::sku::Entity::find()
        .filter(neocloud_schema::entity::sku::Column::Name.eq("odd-price"))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the SKU");
    assert_eq!(stored.list_price_per_hour.to_string(), "2.1050");

    // A finalized invoice reads back in minor units on both databases, zeros included
    // (PostgreSQL keeps a stored zero as `0`).
    app.advance(TimeDelta::seconds(3));
    let closed = close(&app, &s.tenant).await;
    let reread = invoice_by_id(&app, &s.key, &closed["id"]).await;
    for invoice in [&closed, &reread] {
        assert_eq!(invoice["credits"], "0.00", "{invoice}");
        for line in invoice["lines"].as_array().expect("lines") {
            let amount = line["amount"].as_str().expect("amount");
            assert!(
                amount
                    .split_once('.')
                    .is_some_and(|(_, cents)| cents.len() == 2),
                "{invoice}"
            );
        }
    }

    use sea_orm::ConnectionTrait;
    let corrupt = app
        .db
        .execute_unprepared("UPDATE skus SET list_price_per_hour = 'lots'")
        .await;
    match backend {
        Backend::Postgres => assert!(corrupt.is_err(), "PostgreSQL stored a non-number"),
        Backend::Sqlite => {
            corrupt.expect("SQLite stores any text");
            let r = app
                .gql(
                    Some(&s.key),
                    "{ catalog { skus { name listPricePerHour } } }",
                    json!({}),
                )
                .await;
            assert!(r["errors"].is_array(), "a corrupt price was read: {r}");
            assert!(!r.to_string().contains("\"listPricePerHour\":\"0\""), "{r}");
        }
    }
}

/// The open period's usage costs: priced by the plan in force each second (1.00 a
/// GPU-second, then 2.00 after a mid-period `assignPlan`), the graduated ACTIVE tier and
/// its flat fee all on the seconds they priced, and the whole adding up to the draft's
/// usage lines. Three `usage` fields of one request share one rating of the period.
async fn usage_costs_follow_the_plan_in_force_and_add_up_to_the_open_invoice(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    // The allocation and its sampled seconds fall early in one minute, the plan switch
    // at the start of the next: never both in the minute the switch takes effect from.
    app.start_of_next_minute();
    let s = setup(&app).await;
    ingest(&app, &s, "00000000-0000-0000-0000-0000000000c1", 1, 0).await;
    // A plan takes effect from the start of the minute it is assigned in.
    app.start_of_next_minute();
    let doubled = json!({"plan": "per-second", "currency": "USD", "effectiveFrom": "2026-01-01T00:00:00Z",
        "minimumBillableSeconds": 0,
        "rates": [{"sku": s.sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": "7200"}]});
    let v2 = app.create_plan_version(doubled).await;
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!, $v: ID!) { assignPlan(tenantId: $t, planVersionId: $v) { effectiveFrom } }",
            json!({"t": s.tenant, "v": v2}),
        )
        .await;
    let switched = r["data"]["assignPlan"]["effectiveFrom"].clone();
    assert!(switched.is_string(), "{r}");
    app.advance(TimeDelta::seconds(10));
    release(&app, &s).await;
    let from = iso(s.started - Duration::hours(1));
    let to = iso(s.started + Duration::hours(1));
    let r = app
        .gql(
            Some(&s.key),
            "query($f: DateTime!, $s: DateTime!, $t: DateTime!) {
                all: usage(from: $f, to: $t) { currency rows { allocatedSeconds cost } }
                before: usage(from: $f, to: $s) { rows { allocatedSeconds cost } }
                after: usage(from: $s, to: $t) { rows { allocatedSeconds cost } }
                upcomingInvoice { lines { kind metric amount } } }",
            json!({"f": from, "s": switched, "t": to}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    assert_eq!(r["data"]["all"]["currency"], "USD");
    let row = |field: &str| {
        let row = &r["data"][field]["rows"][0];
        (dec(&row["allocatedSeconds"]), dec(&row["cost"]))
    };
    let lines = r["data"]["upcomingInvoice"]["lines"]
        .as_array()
        .expect("lines");
    let charged = |kinds: &[&str], metric: &str| -> Decimal {
        lines
            .iter()
            .filter(|l| kinds.contains(&l["kind"].as_str().unwrap_or_default()))
            .filter(|l| metric.is_empty() || l["metric"] == metric)
            .map(|l| dec(&l["amount"]))
            .sum()
    };
    let active = charged(&["USAGE", "FLAT_FEE"], "ACTIVE");
    assert!(
        active > Decimal::ZERO,
        "the sampled seconds were charged: {r}"
    );
    // Lines are rounded to cents: a cost may differ from a line's exact share by that.
    let near = |a: Decimal, b: Decimal| (a - b).abs() <= Decimal::new(1, 2);
    let (held_before, cost_before) = row("before");
    assert!(
        near(cost_before, held_before + active),
        "before the switch: {held_before} s at 1.00 and the ACTIVE lines {active}, cost {cost_before}"
    );
    let (held_after, cost_after) = row("after");
    assert!(held_after >= Decimal::from(9), "{r}");
    assert!(
        near(cost_after, held_after * Decimal::TWO),
        "after the switch: {held_after} s at 2.00, cost {cost_after}"
    );
    let (_, cost_all) = row("all");
    assert_eq!(cost_all, cost_before + cost_after, "{r}");
    let usage_lines = charged(&["USAGE", "FLAT_FEE", "SLA_CREDIT"], "");
    assert!(
        (cost_all - usage_lines).abs() <= Decimal::new(1, 6),
        "the rows add up to the usage lines: {cost_all} != {usage_lines}"
    );
}

/// Readers that find no draft at once (a portal page asks for it from several fields)
/// open the tenant's first period between them, never also the one after it.
async fn readers_racing_to_open_the_first_period_open_it_once(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, key) = app.create_tenant("acme").await;
    let reads = (0..8).map(|_| {
        app.gql(
            Some(&key),
            "{ upcomingInvoice { id periodStart } }",
            json!({}),
        )
    });
    let drafts: std::collections::BTreeSet<String> = futures_util::future::join_all(reads)
        .await
        .iter()
        .map(|r| r["data"]["upcomingInvoice"].to_string())
        .collect();
    assert_eq!(drafts.len(), 1, "{drafts:?}");
    let listed = listed(&app, &key, None).await;
    assert_eq!(listed.len(), 1, "one period is open: {listed:?}");
}

on_both_databases!(
    readers_racing_to_open_the_first_period_open_it_once,
    usage_costs_follow_the_plan_in_force_and_add_up_to_the_open_invoice,
    a_stored_amount_is_the_exact_decimal_and_garbage_never_reads_as_zero,
    the_invoice_list_shows_the_open_draft_at_its_current_total,
    the_json_export_numbers_tiers_from_one_as_graphql_and_csv_do,
    the_csv_export_ends_with_the_invoice_total,
    focus_lists_the_catalog_price_and_the_charges_own_period,
    a_credit_granted_mid_period_pays_the_whole_open_period_by_default,
    reordered_and_repeated_batches_bill_the_same,
    a_closed_period_becomes_a_numbered_immutable_invoice,
    late_usage_is_an_adjustment_on_the_next_invoice_once,
    an_invoice_of_the_old_unit_rule_stays_and_only_late_usage_adjusts_it,
    credits_pay_oldest_expiry_first_and_come_back_when_voided,
);
