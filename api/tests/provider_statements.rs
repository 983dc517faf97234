//! Provider statements against an independent model of the rule in docs/providers.md
//! ("Statements"), written here from the rule and sharing no code with the server.
//!
//! Two providers — `rhein-gpu` on a revenue share, `seine-gpu` on a fixed rate and paid
//! only out of paid invoices — and the operator's own node serve three tenants for a
//! month: on-demand and spot GPUs, one of a provider's GPUs failing under an allocation
//! (an SLA credit the provider bears). One tenant's invoice is paid (by credit), the other
//! two stay open. Then:
//!
//! - December's statements hold, per allocation served on the provider's hardware,
//!   exactly the model's gross, fee, chargeback and net; held earnings wait; the
//!   operator's own node earns no statement; totals are the sums of the lines;
//! - an invoice voided in January is reversed on January's statement of the provider
//!   that earned on it, and only there;
//! - each provider's payable in the ledger is the sum of its statements' nets, and the
//!   ledger balances;
//! - a provider reads, and exports (CSV, PDF), only its own statements, with no tenant
//!   in them; a tenant reads none; closed statements cannot be changed;
//! - credit notes issued in January take back, on January's statements, the revenue
//!   share of what they credited (a full note the whole earning, SLA chargeback
//!   included), while a fixed rate keeps what its hours earned.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Datelike, DurationRound, TimeDelta, TimeZone, Utc};
use neocloud_schema::clock::Clock;
use neocloud_schema::entity::{allocation, gpu, gpu_health_interval, order};
use neocloud_schema::vocabulary::GpuHealth;
use rust_decimal::Decimal;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use support::billing::grant;
use support::{Backend, TestApp, error_code};

const PRICE: &str = "3.00";
const SHARE: &str = "0.70";
const RHEIN_FEE: &str = "0.10";
const SEINE_RATE: &str = "1.20";
const SEINE_FEE: &str = "0.05";

fn d(s: &str) -> Decimal {
    s.parse().expect("decimal")
}

fn cents(x: Decimal) -> Decimal {
    // Half-even, as the rule says.
    x.round_dp(2)
}

/// One allocation as the test ran it.
#[derive(Debug, Clone)]
struct Ran {
    id: String,
    tenant: usize,
    host: String,
    gpu: String,
    held: i64,
    failed: i64,
}

impl Ran {
    fn provider(&self) -> Option<&'static str> {
        match self.host.as_str() {
            "rhein-1" => Some("rhein-gpu"),
            "seine-1" => Some("seine-gpu"),
            _ => None,
        }
    }

    fn working(&self) -> i64 {
        self.held - self.failed
    }
}

/// (gross, fee, chargeback, net) of one allocation, by the rule.
type Figures = (Decimal, Decimal, Decimal, Decimal);

/// The model: per provider, the figures of each allocation of the tenants `claimable`
/// admits for it, by allocation id (every provider paid in the invoices' currency).
fn model(
    ran: &[Ran],
    claimable: impl Fn(usize, &str) -> bool,
) -> BTreeMap<&'static str, BTreeMap<String, Figures>> {
    model_converted(ran, claimable, Decimal::ONE)
}

/// `model`, with rhein-gpu paid in another currency at `rhein_rate` of it per unit of the
/// invoices': its revenue share and chargebacks converted before they are rounded.
fn model_converted(
    ran: &[Ran],
    claimable: impl Fn(usize, &str) -> bool,
    rhein_rate: Decimal,
) -> BTreeMap<&'static str, BTreeMap<String, Figures>> {
    let hour = Decimal::from(3600);
    let mut out: BTreeMap<&'static str, BTreeMap<String, Figures>> = BTreeMap::new();
    for tenant in 0..3 {
        let mine: Vec<&Ran> = ran.iter().filter(|r| r.tenant == tenant).collect();
        let working: i64 = mine.iter().map(|r| r.working()).sum();
        let failed: i64 = mine.iter().map(|r| r.failed).sum();
        // One ALLOCATED line (spot has no price of its own, so it is priced with the
        // on-demand hours) and one SLA credit line per invoice.
        let allocated_line = cents(Decimal::from(working) / hour * d(PRICE));
        let credit_line = cents(Decimal::from(failed) / hour * d(PRICE));
        for r in &mine {
            let Some(provider) = r.provider() else {
                continue;
            };
            if !claimable(tenant, provider) {
                continue;
            }
            // The exact proportion (the product first, so no rounding error decides a
            // half cent).
            let revenue = allocated_line * Decimal::from(r.working()) / Decimal::from(working);
            let credit = if failed == 0 {
                Decimal::ZERO
            } else {
                credit_line * Decimal::from(r.failed) / Decimal::from(failed)
            };
            let rate = if provider == "rhein-gpu" {
                rhein_rate
            } else {
                Decimal::ONE
            };
            let (gross, fee_rate) = if provider == "rhein-gpu" {
                (cents(revenue * rate * d(SHARE)), d(RHEIN_FEE))
            } else {
                (
                    cents(Decimal::from(r.working()) / hour * d(SEINE_RATE)),
                    d(SEINE_FEE),
                )
            };
            let fee = cents(gross * fee_rate);
            let chargeback = cents(credit * rate);
            out.entry(provider).or_default().insert(
                r.id.clone(),
                (gross, fee, chargeback, gross - fee - chargeback),
            );
        }
    }
    out
}

/// The model of a credit note on `tenant`'s invoice that took back `allocated` of its
/// ALLOCATED line and `sla` of its SLA credit line (as a positive amount): per provider,
/// each allocation's line, negated, by the rule ("Credit notes"); seine-gpu's fixed rate
/// gives back the same part of its earnings where `seine_shares`.
fn credited(
    ran: &[Ran],
    tenant: usize,
    (allocated, sla): (Decimal, Decimal),
    seine_shares: bool,
) -> BTreeMap<&'static str, BTreeMap<String, Figures>> {
    let hour = Decimal::from(3600);
    let mine: Vec<&Ran> = ran.iter().filter(|r| r.tenant == tenant).collect();
    let working: i64 = mine.iter().map(|r| r.working()).sum();
    let failed: i64 = mine.iter().map(|r| r.failed).sum();
    let allocated_line = cents(Decimal::from(working) / hour * d(PRICE));
    let mut out: BTreeMap<&'static str, BTreeMap<String, Figures>> = BTreeMap::new();
    for r in mine {
        let Some(provider) = r.provider() else {
            continue;
        };
        let revenue = allocated * Decimal::from(r.working()) / Decimal::from(working);
        let sla_share = if failed == 0 {
            Decimal::ZERO
        } else {
            sla * Decimal::from(r.failed) / Decimal::from(failed)
        };
        // A fixed rate prices hours, which a credit note does not take back, unless the
        // agreement shares notes: then the part of the invoice given back.
        let gross = if provider == "rhein-gpu" {
            cents(revenue * d(SHARE))
        } else if seine_shares {
            let earned = cents(Decimal::from(r.working()) / hour * d(SEINE_RATE));
            cents(earned * allocated / allocated_line)
        } else {
            Decimal::ZERO
        };
        let fee_rate = if provider == "rhein-gpu" {
            d(RHEIN_FEE)
        } else {
            d(SEINE_FEE)
        };
        let fee = cents(gross * fee_rate);
        let chargeback = cents(sla_share);
        let net = gross - fee - chargeback;
        out.entry(provider)
            .or_default()
            .insert(r.id.clone(), (-gross, -fee, -chargeback, -net));
    }
    out
}

/// Paid in US dollars, outside neocloud.
fn manual() -> Value {
    json!({"currency": "USD", "payoutMethod": "MANUAL"})
}

/// Creates the provider `name` with `payout` (currency, method, account); its id and key.
async fn provider(app: &TestApp, name: &str, payout: Value) -> (String, String) {
    let mut input = json!({"name": name, "legalName": format!("{name} SAS"), "country": "FR"});
    if let (Some(input), Some(payout)) = (input.as_object_mut(), payout.as_object()) {
        input.extend(payout.clone());
    }
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: CreateProviderInput!) { createProvider(input: $i) { provider { id } apiKey } }",
            json!({"i": input}),
        )
        .await;
    let p = &r["data"]["createProvider"];
    assert!(p.is_object(), "{r}");
    (
        p["provider"]["id"].as_str().expect("id").to_owned(),
        p["apiKey"].as_str().expect("key").to_owned(),
    )
}

async fn agree(app: &TestApp, terms: Value) {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: ProviderAgreementInput!) { createProviderAgreement(input: $i) { version } }",
            json!({"i": terms}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
}

/// The fleet, the plan and the three tenants: (the SKU, the providers' keys, each tenant's
/// id and key).
async fn marketplace(
    app: &TestApp,
    (rhein_payout, seine_payout): (Value, Value),
) -> (String, (String, String), Vec<(String, String)>) {
    let (rhein, rhein_key) = provider(app, "rhein-gpu", rhein_payout).await;
    let (seine, seine_key) = provider(app, "seine-gpu", seine_payout).await;
    agree(
        app,
        json!({"providerId": rhein, "model": "REVENUE_SHARE", "revenueSharePercent": "70",
                      "platformFeePercent": "10", "payoutMinimum": "0.00", "holdUntilPaid": false}),
    )
    .await;
    agree(app, json!({"providerId": seine, "model": "FIXED_RATE", "platformFeePercent": "5",
                      "fixedRates": [{"form": "WHOLE_GPU", "region": "eu-west", "pricePerUnitHour": SEINE_RATE}],
                      "payoutMinimum": "0.00", "holdUntilPaid": true}))
    .await;
    for (host, extra) in [
        ("rhein-1", ", provider: \"rhein-gpu\""),
        ("seine-1", ", provider: \"seine-gpu\""),
        ("own-1", ""),
    ] {
        let r = app.register_node(host, "H100", 2, extra).await;
        assert!(r["errors"].is_null(), "{r}");
    }
    let sku = app.create_h100_sku().await;
    let plan = app
        .create_plan_version(json!({"plan": "resale", "currency": "USD",
        "effectiveFrom": app.clock.now().to_rfc3339(),
        "rates": [
            {"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": PRICE},
            {"sku": sku, "metric": "SLA_CREDIT", "tiersMode": "PER_UNIT", "unitPrice": PRICE},
        ]}))
        .await;
    let mut tenants = Vec::new();
    for name in ["alpha-ai", "beta-labs", "gamma-bio"] {
        let (id, key) = app.create_tenant(name).await;
        app.assign_plan(&id, &plan).await;
        tenants.push((id, key));
    }
    (sku, (rhein_key, seine_key), tenants)
}

/// Places two one-GPU orders per tenant (the second spot), releases them, and sets each
/// allocation's lifetime and the failure in the database; what ran.
async fn month_of_use(app: &TestApp, sku: &str, tenants: &[(String, String)]) -> Vec<Ran> {
    // The scheduler fills own-1, then rhein-1, then seine-1: in this order the paid
    // tenant (0) and the one voided later (1) run on both providers, tenant 2 on own-1.
    let orders = [
        (2, "ON_DEMAND"),
        (2, "SPOT"),
        (1, "ON_DEMAND"),
        (0, "ON_DEMAND"),
        (0, "SPOT"),
        (1, "SPOT"),
    ];
    let mut ran = place_and_release(app, sku, tenants, &orders).await;
    let base = set_lifetimes(app, &ran).await;
    // The first allocation on a provider's node loses its GPU for 30 minutes, 10 minutes
    // into its life.
    let i = ran
        .iter()
        .position(|r| r.provider().is_some())
        .expect("a provider serves");
    ran[i].failed = 1800;
    let started = base + TimeDelta::hours(i as i64);
    fail(app, &ran[i].gpu, started + TimeDelta::minutes(10)).await;
    app.advance(TimeDelta::days(2));
    ran
}

/// Places one-GPU orders of (tenant, class) in turn and releases them; what ran, with
/// hold times that differ per allocation (3h07m, 4h14m, …).
async fn place_and_release(
    app: &TestApp,
    sku: &str,
    tenants: &[(String, String)],
    plan: &[(usize, &str)],
) -> Vec<Ran> {
    let mut ran = Vec::new();
    let mut orders = Vec::new();
    for &(tenant, class) in plan {
        let key = &tenants[tenant].1;
        let r = app
            .gql(
                Some(key),
                "mutation($s: ID!, $k: AllocationClass!) { placeOrder(input: {sku: $s, count: 1, class: $k}) { order { id allocations { id node { hostname } gpus { uuid } } } } }",
                json!({"s": sku, "k": class}),
            )
            .await;
        let order = &r["data"]["placeOrder"]["order"];
        let a = &order["allocations"][0];
        assert!(a.is_object(), "{r}");
        orders.push((key.clone(), order["id"].as_str().expect("id").to_owned()));
        ran.push(Ran {
            id: a["id"].as_str().expect("id").to_owned(),
            tenant,
            host: a["node"]["hostname"].as_str().expect("host").to_owned(),
            gpu: a["gpus"][0]["uuid"].as_str().expect("gpu").to_owned(),
            // Hours and minutes that differ per allocation: 3h07m, 4h14m, ...
            held: 3600 * (3 + ran.len() as i64) + 420 * (1 + ran.len() as i64),
            failed: 0,
        });
    }
    for (key, id) in &orders {
        let r = app
            .gql(
                Some(key),
                "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
                json!({"o": id}),
            )
            .await;
        assert!(r["errors"].is_null(), "{r}");
    }
    ran
}

/// Sets each allocation's lifetime in the database: the i-th from i hours after the next
/// whole second an hour from now, for its hold time; that first start.
async fn set_lifetimes(app: &TestApp, ran: &[Ran]) -> DateTime<Utc> {
    // Whole seconds: usage is counted in them.
    let base = (app.clock.now() + TimeDelta::hours(1))
        .duration_trunc(TimeDelta::seconds(1))
        .expect("whole seconds");
    for (i, r) in ran.iter().enumerate() {
        let started = base + TimeDelta::hours(i as i64);
        let ended = started + TimeDelta::seconds(r.held);
        let id: uuid::Uuid = r.id.parse().expect("id");
        let row = allocation::Entity::find_by_id(id)
            .one(&app.db)
            .await
            .expect("read")
            .expect("allocation");
        allocation::Entity::update_many()
            .col_expr(allocation::Column::StartedAt, Expr::value(started))
            .col_expr(allocation::Column::EndedAt, Expr::value(Some(ended)))
            .filter(allocation::Column::Id.eq(id))
            .exec(&app.db)
            .await
            .expect("lifetime");
        order::Entity::update_many()
            .col_expr(order::Column::EndedAt, Expr::value(Some(ended)))
            .filter(order::Column::Id.eq(row.order_id))
            .exec(&app.db)
            .await
            .expect("order end");
    }
    base
}

async fn fail(app: &TestApp, uuid: &str, from: DateTime<Utc>) {
    let gpu = gpu::Entity::find()
        .filter(gpu::Column::Uuid.eq(uuid))
        .one(&app.db)
        .await
        .expect("read")
        .expect("the GPU");
    gpu_health_interval::ActiveModel {
        id: Set(uuid::Uuid::now_v7()),
        gpu_id: Set(gpu.id),
        health: Set(GpuHealth::Failed.as_str().into()),
        started_at: Set(from),
        ended_at: Set(Some(from + TimeDelta::seconds(1800))),
        cause: Set("xid 79".into()),
    }
    .insert(&app.db)
    .await
    .expect("failure");
}

fn next_month(t: DateTime<Utc>) -> DateTime<Utc> {
    let (y, m) = if t.month() == 12 {
        (t.year() + 1, 1)
    } else {
        (t.year(), t.month() + 1)
    };
    Utc.with_ymd_and_hms(y, m, 1, 0, 0, 0)
        .single()
        .expect("date")
}

const STATEMENTS: &str = "query($p: ID) { providerStatements(providerId: $p) { id number month currency gross fees slaChargebacks net lineCount } }";
const STATEMENT: &str = "query($id: ID!) { providerStatement(id: $id) { number net lines { kind allocationId revenue unitHours gross fee slaChargeback net revenueCurrency exchangeRate } } }";

/// The provider's statements, newest first, each with its lines.
async fn statements_of(app: &TestApp, key: &str) -> Vec<Value> {
    let r = app.gql(Some(key), STATEMENTS, json!({})).await;
    let list = r["data"]["providerStatements"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .clone();
    let mut out = Vec::new();
    for s in list {
        let r = app.gql(Some(key), STATEMENT, json!({"id": s["id"]})).await;
        let mut s = s.clone();
        s["lines"] = r["data"]["providerStatement"]["lines"].clone();
        assert!(s["lines"].is_array(), "{r}");
        out.push(s);
    }
    out
}

fn money(v: &Value) -> Decimal {
    d(v.as_str().unwrap_or_else(|| panic!("money: {v}")))
}

/// The statement's lines of `kind`, as the model's figures by allocation.
fn figures(statement: &Value, kind: &str) -> BTreeMap<String, Figures> {
    statement["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["kind"] == kind)
        .map(|l| {
            (
                l["allocationId"].as_str().expect("id").to_owned(),
                (
                    money(&l["gross"]),
                    money(&l["fee"]),
                    money(&l["slaChargeback"]),
                    money(&l["net"]),
                ),
            )
        })
        .collect()
}

/// The statement's totals are the sums of its lines.
fn totals_add_up(statement: &Value) {
    let lines = statement["lines"].as_array().expect("lines");
    for (total, line) in [
        ("gross", "gross"),
        ("fees", "fee"),
        ("slaChargebacks", "slaChargeback"),
        ("net", "net"),
    ] {
        let sum: Decimal = lines.iter().map(|l| money(&l[line])).sum();
        assert_eq!(money(&statement[total]), sum, "{total}: {statement}");
    }
    assert_eq!(statement["lineCount"], json!(lines.len()));
}

async fn close_statements(app: &TestApp) {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { closeProviderStatements }",
            json!({}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
}

async fn payables(app: &TestApp) -> BTreeMap<String, Decimal> {
    balances(app, "PROVIDER_PAYABLE")
        .await
        .into_iter()
        .collect()
}

/// The ledger's balances of `account`, each with its owner (empty for the platform's),
/// after checking that the ledger balances.
async fn balances(app: &TestApp, account: &str) -> Vec<(String, Decimal)> {
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ ledgerBalances { account ownerId balance } ledgerCheck { balanced } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["ledgerCheck"]["balanced"], true, "{r}");
    r["data"]["ledgerBalances"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .filter(|b| b["account"] == account)
        .map(|b| {
            (
                b["ownerId"].as_str().unwrap_or_default().to_owned(),
                money(&b["balance"]),
            )
        })
        .collect()
}

async fn statements_follow_the_agreements(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (sku, (rhein_key, seine_key), tenants) = marketplace(&app, (manual(), manual())).await;
    let ran = month_of_use(&app, &sku, &tenants).await;
    // alpha-ai's invoice is paid (by a credit that covers it); the others stay open.
    grant(&app, &tenants[0].0, "PROMOTIONAL", "1000.00").await;
    let mut invoices = Vec::new();
    for (tenant, _) in &tenants {
        let inv = app.close_period(tenant, "id status total").await;
        invoices.push(inv);
    }
    assert_eq!(invoices[0]["status"], "PAID", "{invoices:?}");
    assert_eq!(invoices[1]["status"], "OPEN", "{invoices:?}");

    // December closes.
    let december = app.clock.now();
    app.advance_past(next_month(december) + TimeDelta::hours(1));
    close_statements(&app).await;
    let expected = model(&ran, |tenant, provider| {
        provider == "rhein-gpu" || tenant == 0
    });
    let serves = |p: &str, t: usize| ran.iter().any(|r| r.provider() == Some(p) && r.tenant == t);
    assert!(
        serves("seine-gpu", 0) && serves("seine-gpu", 1) && serves("rhein-gpu", 1),
        "the case covers earned, held and reversed lines of both providers: {ran:?}"
    );
    let rhein = statements_of(&app, &rhein_key).await;
    let seine = statements_of(&app, &seine_key).await;
    assert_eq!((rhein.len(), seine.len()), (1, 1), "{rhein:?} {seine:?}");
    for (statement, name) in [(&rhein[0], "rhein-gpu"), (&seine[0], "seine-gpu")] {
        assert_eq!(statement["month"], december.format("%Y-%m").to_string());
        assert_eq!(statement["currency"], "USD");
        assert_eq!(
            figures(statement, "earning"),
            expected.get(name).cloned().unwrap_or_default(),
            "{name}: {statement}"
        );
        totals_add_up(statement);
    }
    assert!(
        money(&rhein[0]["slaChargebacks"]) + money(&seine[0]["slaChargebacks"]) > Decimal::ZERO,
        "the failure was charged back"
    );
    // Closing again closes nothing more.
    close_statements(&app).await;
    assert_eq!(statements_of(&app, &rhein_key).await.len(), 1);

    // January: beta-labs' invoice is voided; rhein-gpu gives back what it earned on it.
    app.advance(TimeDelta::days(4));
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($id: ID!) { voidInvoice(id: $id, reason: \"disputed\") { status } }",
            json!({"id": invoices[1]["id"]}),
        )
        .await;
    assert_eq!(r["data"]["voidInvoice"]["status"], "VOID", "{r}");
    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;
    let rhein = statements_of(&app, &rhein_key).await;
    let seine = statements_of(&app, &seine_key).await;
    assert_eq!((rhein.len(), seine.len()), (2, 2));
    let reversed: BTreeMap<String, Figures> =
        model(&ran, |tenant, p| tenant == 1 && p == "rhein-gpu")
            .remove("rhein-gpu")
            .unwrap_or_default()
            .into_iter()
            .map(|(id, (g, f, c, n))| (id, (-g, -f, -c, -n)))
            .collect();
    assert_eq!(figures(&rhein[0], "reversal"), reversed, "{}", rhein[0]);
    assert!(figures(&rhein[0], "earning").is_empty());
    assert_eq!(
        seine[0]["lines"],
        json!([]),
        "held, then voided: never earned"
    );
    totals_add_up(&rhein[0]);

    // What each provider's statements netted is what the ledger still owes it plus the
    // payouts queued for it (manual ones: the operator pays them outside neocloud).
    owed_what_statements_netted(&app, [("rhein-gpu", &rhein_key), ("seine-gpu", &seine_key)]).await;
    manual_payouts_are_recorded(&app, &rhein_key).await;

    isolation(&app, &tenants, (&rhein_key, &seine_key), &rhein[1]).await;
}

/// The amounts of an invoice's ALLOCATED line and its SLA credit line (positive; 0 where
/// there is none), and the ALLOCATED line's number (from 1).
async fn allocated_and_sla(
    app: &TestApp,
    tenant_key: &str,
    id: &Value,
) -> (usize, Decimal, Decimal) {
    let r = app
        .gql(
            Some(tenant_key),
            "query($id: ID!) { invoice(id: $id) { lines { kind metric amount } } }",
            json!({"id": id}),
        )
        .await;
    let lines = r["data"]["invoice"]["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    let find = |metric: &str| {
        lines
            .iter()
            .position(|l| l["metric"] == metric)
            .map(|i| (i + 1, money(&lines[i]["amount"]).abs()))
    };
    let (line, allocated) = find("ALLOCATED").unwrap_or_else(|| panic!("{r}"));
    (
        line,
        allocated,
        find("SLA_CREDIT").map_or(Decimal::ZERO, |(_, a)| a),
    )
}

async fn issue_credit_note(app: &TestApp, input: Value) {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: IssueCreditNoteInput!) { issueCreditNote(input: $i) { number } }",
            json!({"i": input}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
}

async fn credit_notes_take_back_a_revenue_share(backend: Backend) {
    credit_notes_take_back(backend, false).await;
}

/// As above, with a second version of seine-gpu's fixed rate that shares credit notes.
async fn a_fixed_rate_shares_credit_notes_where_agreed(backend: Backend) {
    credit_notes_take_back(backend, true).await;
}

async fn credit_notes_take_back(backend: Backend, seine_shares: bool) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (sku, (rhein_key, seine_key), tenants) = marketplace(&app, (manual(), manual())).await;
    if seine_shares {
        let seine = provider_ids(&app).await["seine-gpu"].clone();
        let from = app.clock.now() + TimeDelta::minutes(1);
        agree(&app, json!({"providerId": seine, "model": "FIXED_RATE", "platformFeePercent": "5",
                           "fixedRates": [{"form": "WHOLE_GPU", "region": "eu-west", "pricePerUnitHour": SEINE_RATE}],
                           "payoutMinimum": "0.00", "holdUntilPaid": true, "shareCreditNotes": true,
                           "effectiveFrom": from.to_rfc3339()}))
        .await;
        app.advance(TimeDelta::minutes(2));
    }
    let ran = month_of_use(&app, &sku, &tenants).await;
    grant(&app, &tenants[0].0, "PROMOTIONAL", "1000.00").await;
    let mut invoices = Vec::new();
    for (tenant, _) in &tenants {
        invoices.push(app.close_period(tenant, "id status total").await);
    }
    let failed_tenant = ran.iter().find(|r| r.failed > 0).expect("a failure").tenant;
    assert_eq!(failed_tenant, 1, "beta-labs' allocation failed: {ran:?}");
    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;

    // January: alpha-ai (paid) is credited 1.00 of its GPU hours; beta-labs (open, with
    // the failure) is credited in full, which settles its invoice.
    app.advance(TimeDelta::days(3));
    let (line, _, _) = allocated_and_sla(&app, &tenants[0].1, &invoices[0]["id"]).await;
    issue_credit_note(
        &app,
        json!({"invoiceId": invoices[0]["id"], "form": "LINES",
        "lines": [{"line": line, "amount": "1.00"}], "reason": "a slow hour"}),
    )
    .await;
    let (_, allocated, sla) = allocated_and_sla(&app, &tenants[1].1, &invoices[1]["id"]).await;
    assert!(sla > Decimal::ZERO, "beta-labs has an SLA credit");
    issue_credit_note(
        &app,
        json!({"invoiceId": invoices[1]["id"], "form": "FULL",
        "reason": "disputed"}),
    )
    .await;
    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;

    let mut expected = credited(&ran, 0, (d("1.00"), Decimal::ZERO), seine_shares);
    for (provider, lines) in credited(&ran, 1, (allocated, sla), seine_shares) {
        expected.entry(provider).or_default().extend(lines);
    }
    let rhein = statements_of(&app, &rhein_key).await;
    let seine = statements_of(&app, &seine_key).await;
    assert_eq!((rhein.len(), seine.len()), (2, 2));
    for (statement, name) in [(&rhein[0], "rhein-gpu"), (&seine[0], "seine-gpu")] {
        assert_eq!(
            figures(statement, "credit_note"),
            expected.get(name).cloned().unwrap_or_default(),
            "{name}: {statement}"
        );
        totals_add_up(statement);
    }
    // The full note gives back exactly what beta-labs' allocations earned rhein-gpu,
    // the chargeback of the failure included.
    let december = figures(&rhein[1], "earning");
    let beta: Vec<&Ran> = ran
        .iter()
        .filter(|r| r.tenant == 1 && r.provider() == Some("rhein-gpu"))
        .collect();
    assert!(!beta.is_empty());
    for r in beta {
        let (g, f, c, n) = december[&r.id];
        let taken = figures(&rhein[0], "credit_note")[&r.id];
        assert_eq!(taken, (-g, -f, -c, -n), "{}", rhein[0]);
    }
    // beta-labs' invoice is settled by the note, so seine-gpu's held hours are earned now.
    let settled = model(&ran, |tenant, p| tenant == 1 && p == "seine-gpu");
    assert_eq!(
        figures(&seine[0], "earning"),
        settled.get("seine-gpu").cloned().unwrap_or_default(),
        "{}",
        seine[0]
    );
    // Closing again takes nothing twice.
    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;
    let rhein = statements_of(&app, &rhein_key).await;
    assert_eq!(rhein[0]["lines"], json!([]), "{}", rhein[0]);
    // The ledger owes each provider what its statements netted.
    owed_what_statements_netted(&app, [("rhein-gpu", &rhein_key), ("seine-gpu", &seine_key)]).await;
}

/// What each provider's statements netted is what the ledger still owes it plus the
/// payouts queued for it.
async fn owed_what_statements_netted(app: &TestApp, providers: [(&str, &String); 2]) {
    let ids = provider_ids(app).await;
    let owed = payables(app).await;
    for (name, key) in providers {
        let nets: Decimal = statements_of(app, key)
            .await
            .iter()
            .map(|s| money(&s["net"]))
            .sum();
        let queued: Decimal = payouts_of(app, key)
            .await
            .iter()
            .map(|p| money(&p["amount"]))
            .sum();
        assert_eq!(
            owed.get(&ids[name]).copied().unwrap_or_default() + queued,
            nets,
            "{name}"
        );
    }
}

/// The operator pays a manual provider's queued payout by bank and records it: sent with
/// the reference, out of the payouts in transit; once only, by operators only.
async fn manual_payouts_are_recorded(app: &TestApp, provider_key: &str) {
    let payouts = payouts_of(app, provider_key).await;
    let queued: Vec<&Value> = payouts.iter().filter(|p| p["status"] == "queued").collect();
    assert!(
        !queued.is_empty(),
        "a manual provider's payout is queued: {payouts:?}"
    );
    assert!(
        queued.iter().all(|p| p["method"] == "manual"),
        "{payouts:?}"
    );
    let before = in_transit(app).await;
    let record = "mutation($p: ID!, $r: String!) { recordManualPayout(payoutId: $p, reference: $r) { status reference sentAt } }";
    let first = json!({"p": queued[0]["id"], "r": "bank transfer 2027-01-05 #4711"});
    let r = app.gql(Some(provider_key), record, first.clone()).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            record,
            json!({"p": queued[0]["id"], "r": "  "}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "reference", "{r}");
    let r = app
        .gql(Some(&app.operator_key), record, first.clone())
        .await;
    assert_eq!(r["data"]["recordManualPayout"]["status"], "sent", "{r}");
    assert_eq!(
        r["data"]["recordManualPayout"]["reference"],
        "bank transfer 2027-01-05 #4711"
    );
    assert_eq!(
        in_transit(app).await,
        before - money(&queued[0]["amount"]),
        "out of transit, once"
    );
    let r = app.gql(Some(&app.operator_key), record, first).await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "recorded once: {r}");
    let mine = payouts_of(app, provider_key).await;
    let recorded = mine
        .iter()
        .find(|p| p["id"] == queued[0]["id"])
        .expect("the payout");
    assert_eq!(
        recorded["status"], "sent",
        "the provider sees it paid: {recorded}"
    );
}

async fn provider_ids(app: &TestApp) -> BTreeMap<String, String> {
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ providers { id name } }",
            json!({}),
        )
        .await;
    r["data"]["providers"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("name").to_owned(),
                p["id"].as_str().expect("id").to_owned(),
            )
        })
        .collect()
}

async fn export(app: &TestApp, key: &str, id: &Value, format: &str) -> (u16, Vec<u8>) {
    let res = app
        .client
        .get(format!(
            "{}/v1/provider-statements/{}/export?format={format}",
            app.url,
            id.as_str().expect("id")
        ))
        .bearer_auth(key)
        .send()
        .await
        .expect("get");
    let status = res.status().as_u16();
    (status, res.bytes().await.expect("body").to_vec())
}

/// Who reads and exports which statement, and what a statement says of tenants.
async fn isolation(
    app: &TestApp,
    tenants: &[(String, String)],
    (rhein_key, seine_key): (&str, &str),
    december: &Value,
) {
    let (status, csv) = export(app, rhein_key, &december["id"], "csv").await;
    assert_eq!(status, 200);
    let csv = String::from_utf8(csv).expect("utf-8");
    let nets: Decimal = csv
        .lines()
        .skip(1)
        .map(|l| d(l.rsplit(',').next().expect("net")))
        .sum();
    assert_eq!(nets, money(&december["net"]), "{csv}");
    let (status, pdf) = export(app, rhein_key, &december["id"], "pdf").await;
    assert_eq!(status, 200);
    assert!(pdf.starts_with(b"%PDF-"));
    for (tenant, _) in tenants {
        assert!(!csv.contains(tenant.as_str()), "{csv}");
        assert!(!december.to_string().contains(tenant.as_str()));
    }
    for name in ["alpha-ai", "beta-labs", "gamma-bio"] {
        assert!(!csv.contains(name) && !String::from_utf8_lossy(&pdf).contains(name));
    }

    // Another provider's statement is as if it did not exist; tenants read none.
    assert_eq!(export(app, seine_key, &december["id"], "csv").await.0, 404);
    assert_eq!(
        export(app, &tenants[0].1, &december["id"], "csv").await.0,
        403
    );
    let r = app
        .gql(Some(seine_key), STATEMENT, json!({"id": december["id"]}))
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let ids = provider_ids(app).await;
    let r = app
        .gql(Some(seine_key), STATEMENTS, json!({"p": ids["rhein-gpu"]}))
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    for query in [STATEMENTS, "mutation { closeProviderStatements }"] {
        let r = app.gql(Some(&tenants[0].1), query, json!({})).await;
        assert_eq!(error_code(&r), Some("FORBIDDEN"), "{query}: {r}");
    }
    let r = app
        .gql(
            Some(rhein_key),
            "mutation { closeProviderStatements }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    // Closed is closed.
    for sql in [
        "UPDATE provider_statements SET net = 0",
        "DELETE FROM provider_statement_lines",
    ] {
        assert!(app.db.execute_unprepared(sql).await.is_err(), "{sql}");
    }
}

/// Earnings held until paid wait for an invoice collected outside Stripe until an operator
/// records the payment (`markInvoicePaid`, with the ledger's receivable moving to
/// external cash); the statement of the month it was paid in then holds them.
async fn an_invoice_paid_outside_stripe_releases_held_earnings(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (sku, (_, seine_key), tenants) = marketplace(&app, (manual(), manual())).await;
    // own-1 serves tenant 2, rhein-1 tenant 0, seine-1 tenant 1.
    let plan = [
        (2, "ON_DEMAND"),
        (2, "SPOT"),
        (0, "ON_DEMAND"),
        (0, "SPOT"),
        (1, "ON_DEMAND"),
        (1, "SPOT"),
    ];
    let ran = place_and_release(&app, &sku, &tenants, &plan).await;
    assert!(
        ran.iter()
            .filter(|r| r.tenant == 1)
            .all(|r| r.host == "seine-1"),
        "{ran:?}"
    );
    set_lifetimes(&app, &ran).await;
    app.advance(TimeDelta::days(2));
    let mut invoices = Vec::new();
    for (tenant, _) in &tenants {
        invoices.push(app.close_period(tenant, "id status paymentState").await);
    }
    assert_eq!(invoices[1]["paymentState"], "EXTERNAL", "{invoices:?}");
    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;
    assert_eq!(
        statements_of(&app, &seine_key).await[0]["lines"],
        json!([]),
        "held"
    );

    // The transfer arrives: the operator records it, once; nobody else can.
    const MARK: &str = "mutation($id: ID!, $r: String!) { markInvoicePaid(id: $id, reference: $r) { status paymentState amountDue } }";
    let vars = |r: &str| json!({"id": invoices[1]["id"], "r": r});
    let r = app.gql(Some(&app.operator_key), MARK, vars(" ")).await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    let r = app.gql(Some(&tenants[1].1), MARK, vars("SEPA 4711")).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(Some(&app.operator_key), MARK, vars("SEPA 4711"))
        .await;
    let paid = &r["data"]["markInvoicePaid"];
    assert_eq!(
        (&paid["status"], &paid["paymentState"]),
        (&json!("PAID"), &json!("PAID")),
        "{r}"
    );
    let r = app
        .gql(Some(&app.operator_key), MARK, vars("SEPA 4711"))
        .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "once: {r}");
    let r = app
        .gql(
            Some(&tenants[1].1),
            "{ ledgerBalances { account balance } }",
            json!({}),
        )
        .await;
    let receivable = r["data"]["ledgerBalances"]
        .as_array()
        .expect("balances")
        .iter()
        .find(|b| b["account"] == "RECEIVABLE")
        .map(|b| money(&b["balance"]));
    assert_eq!(receivable, Some(Decimal::ZERO), "{r}");

    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;
    let seine = statements_of(&app, &seine_key).await;
    let expected = model(&ran, |tenant, provider| {
        tenant == 1 && provider == "seine-gpu"
    });
    assert_eq!(
        figures(&seine[0], "earning"),
        expected["seine-gpu"],
        "{}",
        seine[0]
    );
    assert_eq!(figures(&seine[0], "earning").len(), 2);
}

/// Stripe Connect as a local server answering with the recorded transfer
/// (`fixtures/stripe/transfer.json`), honouring idempotency keys as Stripe does (unless
/// told to forget them, as Stripe does after 24 hours) and listing transfers by group.
/// The first request of each key creates its transfer but its answer is "lost" (a 500),
/// as when a network drops it; the retry under the same key gets the transfer created
/// first.
/// A request's idempotency key and form.
type Request = (String, BTreeMap<String, String>);

#[derive(Clone, Default)]
struct Connect {
    /// Every request.
    requests: Arc<Mutex<Vec<Request>>>,
    /// Transfers created, by idempotency key.
    transfers: Arc<Mutex<BTreeMap<String, String>>>,
    /// While set, a new transfer is created and its answer never sent (the caller is
    /// killed while it waits).
    hold: Arc<AtomicBool>,
    /// While set, idempotency keys are forgotten: every request creates a transfer.
    forget_keys: Arc<AtomicBool>,
    /// The transfer groups looked up.
    lookups: Arc<Mutex<Vec<String>>>,
}

/// `GET /v1/transfers?transfer_group=…`: the transfers made in the group.
fn transfers_in_group(req: &actix_web::HttpRequest, connect: &Connect) -> actix_web::HttpResponse {
    let group = reqwest::Url::parse(&format!("http://x{}", req.uri()))
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "transfer_group")
                .map(|(_, v)| v.into_owned())
        })
        .unwrap_or_default();
    connect.lookups.lock().expect("lock").push(group.clone());
    let data: Vec<Value> = connect
        .transfers
        .lock()
        .expect("lock")
        .values()
        .filter_map(|body| serde_json::from_str::<Value>(body).ok())
        .filter(|t| t["transfer_group"] == group.as_str())
        .collect();
    actix_web::HttpResponse::Ok().json(json!({"object": "list", "data": data, "has_more": false}))
}

async fn connect_api(
    req: actix_web::HttpRequest,
    body: actix_web::web::Bytes,
    connect: actix_web::web::Data<Connect>,
) -> actix_web::HttpResponse {
    use actix_web::HttpResponse;
    match (req.method().as_str(), req.path()) {
        ("GET", "/v1/events") => {
            return HttpResponse::Ok()
                .content_type("application/json")
                .body(r#"{"object": "list", "data": [], "has_more": false, "url": "/v1/events"}"#);
        }
        ("GET", "/v1/transfers") => return transfers_in_group(&req, &connect),
        ("POST", "/v1/transfers") => {}
        _ => return HttpResponse::NotFound().finish(),
    }
    let form: BTreeMap<String, String> =
        reqwest::Url::parse(&format!("http://x/?{}", String::from_utf8_lossy(&body)))
            .map(|u| u.query_pairs().into_owned().collect())
            .unwrap_or_default();
    let key = req
        .headers()
        .get("Idempotency-Key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    connect
        .requests
        .lock()
        .expect("lock")
        .push((key.clone(), form.clone()));
    let forget = connect.forget_keys.load(Ordering::SeqCst);
    let known = connect.transfers.lock().expect("lock").get(&key).cloned();
    if let Some(known) = known.filter(|_| !forget) {
        return HttpResponse::Ok()
            .content_type("application/json")
            .body(known);
    }
    let created = transfer_from(&form);
    {
        let mut transfers = connect.transfers.lock().expect("lock");
        let stored = if forget {
            format!("{key}#{}", transfers.len())
        } else {
            key
        };
        transfers.insert(stored, created);
    }
    if connect.hold.load(Ordering::SeqCst) {
        tokio::time::sleep(std::time::Duration::from_secs(600)).await;
    }
    HttpResponse::InternalServerError().finish()
}

/// The recorded transfer, filled in from a request's form.
fn transfer_from(form: &BTreeMap<String, String>) -> String {
    let path = format!(
        "{}/tests/fixtures/stripe/transfer.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let metadata: BTreeMap<&str, &str> = form
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("metadata[")?.strip_suffix(']')?, v.as_str())))
        .collect();
    let field = |k: &str| form.get(k).cloned().unwrap_or_default();
    std::fs::read_to_string(path)
        .expect("fixture")
        .replace("{{amount}}", &field("amount"))
        .replace("{{currency}}", &field("currency"))
        .replace("{{destination}}", &field("destination"))
        .replace("{{transfer_group}}", &field("transfer_group"))
        .replace("{{metadata}}", &json!(metadata).to_string())
}

fn connect_server() -> (String, Connect) {
    let connect = Connect::default();
    let data = actix_web::web::Data::new(connect.clone());
    let server = actix_web::HttpServer::new(move || {
        actix_web::App::new()
            .app_data(data.clone())
            .default_service(actix_web::web::to(connect_api))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let url = format!("http://{}", server.addrs()[0]);
    tokio::spawn(server.run());
    (url, connect)
}

const OPERATOR_ACCOUNT: &str = "DE89 3704 0044 0532 0130 00 COBADEFFXXX";
const PAYOUTS: &str = "query($p: ID) { providerPayouts(providerId: $p) { id number statementId currency amount method status reference } }";
const SEPA_FILE: &str = "mutation { createSepaPayoutFile { messageId xml payouts { number amount status reference } } }";

async fn payouts_of(app: &TestApp, key: &str) -> Vec<Value> {
    let r = app.gql(Some(key), PAYOUTS, json!({})).await;
    r["data"]["providerPayouts"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .clone()
}

/// What a closed statement leaves owed is paid once: a Stripe Connect transfer sent under
/// one idempotency key whatever the network loses, or a line of a SEPA file valid against
/// the pain.001.001.09 schema; the ledger moves it out of the provider's payable.
async fn payouts_are_sent_once(backend: Backend) {
    let (url, connect) = connect_server();
    connect.forget_keys.store(true, Ordering::SeqCst);
    let Some(app) = TestApp::spawn_with(backend, move |s| {
        s.stripe_secret_key = Some("sk_test_connect".to_owned().into());
        s.stripe_api_base = Some(url);
        s.billing.payout_account = OPERATOR_ACCOUNT.into();
    })
    .await
    else {
        return;
    };
    let connect_payout = json!({"currency": "USD", "payoutMethod": "STRIPE_CONNECT",
                                "payoutAccount": "acct_1RheinGpu0000001"});
    let sepa_payout = json!({"currency": "EUR", "payoutMethod": "SEPA_CREDIT_TRANSFER",
                             "payoutAccount": "FR14 2004 1010 0505 0001 3M02 606 PSSTFRPPXXX"});
    let (sku, (rhein_key, seine_key), tenants) =
        marketplace(&app, (connect_payout, sepa_payout)).await;
    // Every order runs on a provider's node; the tenant's credit pays its invoice.
    let plan = [
        (0, "ON_DEMAND"),
        (0, "ON_DEMAND"),
        (1, "ON_DEMAND"),
        (2, "ON_DEMAND"),
        (1, "SPOT"),
        (2, "SPOT"),
    ];
    let ran = place_and_release(&app, &sku, &tenants, &plan).await;
    set_lifetimes(&app, &ran).await;
    app.advance(TimeDelta::days(2));
    for (tenant, _) in &tenants {
        grant(&app, tenant, "PROMOTIONAL", "1000.00").await;
        app.close_period(tenant, "id").await;
    }
    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;

    // Each provider's statement queued one payout of its net.
    let mut sent = Vec::new();
    for _ in 0..150 {
        sent = payouts_of(&app, &rhein_key).await;
        if sent.first().is_some_and(|p| p["status"] == "sent") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let statement = &statements_of(&app, &rhein_key).await[0];
    assert_eq!(sent.len(), 1, "{sent:?}");
    let payout = &sent[0];
    assert_eq!(
        (
            &payout["status"],
            &payout["amount"],
            &payout["method"],
            &payout["statementId"]
        ),
        (
            &json!("sent"),
            &statement["net"],
            &json!("stripe_connect"),
            &statement["id"]
        ),
        "{payout}"
    );
    assert!(money(&payout["amount"]) > Decimal::ZERO);
    // The first answer lost and the key forgotten by the retry (as after Stripe's 24
    // hours): the retry looks the transfer up by its group and takes it, sends nothing
    // again, and one transfer pays the payout.
    let requests = connect.requests.lock().expect("lock").clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        *connect.lookups.lock().expect("lock"),
        [payout["number"].as_str().expect("number")]
    );
    assert_eq!(connect.transfers.lock().expect("lock").len(), 1);
    let form = &requests[0].1;
    let cents = (money(&payout["amount"]) * Decimal::ONE_HUNDRED).to_string();
    assert_eq!(
        (
            form["amount"].as_str(),
            form["currency"].as_str(),
            form["destination"].as_str()
        ),
        (
            cents.trim_end_matches(".00"),
            "usd",
            "acct_1RheinGpu0000001"
        ),
        "{form:?}"
    );
    assert_eq!(payout["reference"], "tr_1QhX2bL9aZ0Connect0001");

    // SEPA: one file pays the euro payout, valid against the schema; it is paid once.
    let r = app.gql(Some(&app.operator_key), SEPA_FILE, json!({})).await;
    let file = &r["data"]["createSepaPayoutFile"];
    assert!(file.is_object(), "{r}");
    let seine_statement = &statements_of(&app, &seine_key).await[0];
    assert_eq!(file["payouts"][0]["amount"], seine_statement["net"], "{r}");
    assert_eq!(file["payouts"][0]["status"], "sent");
    let xml = file["xml"].as_str().expect("xml");
    validate_pain001(xml);
    assert!(xml.contains("FR1420041010050500013M02606") && xml.contains("seine-gpu SAS"));
    let r = app.gql(Some(&app.operator_key), SEPA_FILE, json!({})).await;
    assert_eq!(
        error_code(&r),
        Some("INVALID_STATE"),
        "nothing left to pay: {r}"
    );
    let again = app
        .gql(
            Some(&app.operator_key),
            "query($m: String!) { sepaPayoutFile(messageId: $m) { xml } }",
            json!({"m": file["messageId"]}),
        )
        .await;
    assert_eq!(
        again["data"]["sepaPayoutFile"]["xml"], file["xml"],
        "{again}"
    );

    // The ledger: nothing owed or in transit any more; paid from Stripe and the bank.
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ ledgerBalances { account ownerId currency balance } ledgerCheck { balanced } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["ledgerCheck"]["balanced"], true, "{r}");
    for b in r["data"]["ledgerBalances"].as_array().expect("balances") {
        if matches!(
            b["account"].as_str(),
            Some("PROVIDER_PAYABLE" | "PAYOUTS_IN_TRANSIT")
        ) {
            assert_eq!(money(&b["balance"]), Decimal::ZERO, "{b}");
        }
    }

    // Who reads what.
    let ids = provider_ids(&app).await;
    let r = app
        .gql(Some(&seine_key), PAYOUTS, json!({"p": ids["rhein-gpu"]}))
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    assert_eq!(payouts_of(&app, &seine_key).await.len(), 1);
    for key in [&tenants[0].1, &seine_key] {
        let r = app.gql(Some(key), SEPA_FILE, json!({})).await;
        assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    }
    let r = app.gql(Some(&tenants[0].1), PAYOUTS, json!({})).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
}

/// Validates a pain.001.001.09 document against the schema `sepaxml` ships, with
/// `xmlschema` (both installed by `scripts/test-deps.sh`). Without them the check is
/// skipped, unless NEOCLOUD_REQUIRE_LOCALSTRIPE=1 (the project's full test run).
fn validate_pain001(xml: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("payouts.xml");
    std::fs::write(&path, xml).expect("write");
    let script = "import sys, importlib.resources, xmlschema\n\
xsd = importlib.resources.files('sepaxml') / 'schemas' / 'pain.001.001.09.xsd'\n\
xmlschema.XMLSchema(str(xsd)).validate(sys.argv[1])\n";
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let present = std::process::Command::new(&python)
        .args(["-c", "import sepaxml, xmlschema"])
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        assert!(
            std::env::var("NEOCLOUD_REQUIRE_LOCALSTRIPE").as_deref() != Ok("1"),
            "sepaxml and xmlschema are required: run scripts/test-deps.sh"
        );
        eprintln!("skipping the pain.001 schema check: sepaxml or xmlschema missing");
        return;
    }
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "the file is not valid pain.001.001.09: {}\n{xml}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the ledger holds in transit to providers (all currencies), balanced.
async fn in_transit(app: &TestApp) -> Decimal {
    balances(app, "PAYOUTS_IN_TRANSIT")
        .await
        .into_iter()
        .map(|(_, balance)| balance)
        .sum()
}

/// `neocloud serve` (the worker that sends payouts) on `app`'s database, paying through
/// the Connect server at `connect_url`.
fn payout_worker(app: &TestApp, connect_url: &str) -> support::Killed {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_neocloud"))
        .args(["serve", "--role", "worker"])
        .env(
            "NEOCLOUD_DATABASE_URL",
            app.settings.database_url.expose_secret(),
        )
        .env(
            "NEOCLOUD_LISTEN",
            format!("127.0.0.1:{}", support::free_port()),
        )
        .env("NEOCLOUD_STRIPE_SECRET_KEY", "sk_test_connect")
        .env("NEOCLOUD_STRIPE_API_BASE", connect_url)
        .env("NEOCLOUD_LOG_FILTER", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn neocloud serve");
    support::Killed(child)
}

/// The process sending a payout is killed (kill -9) after Stripe created the transfer
/// but before its answer came back, and comes back after Stripe has forgotten the
/// idempotency key; restarted, it finds the transfer by its group instead of sending
/// again, so Stripe pays once and the payout is recorded sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payout_killed_mid_transfer_is_paid_once() {
    let (url, connect) = connect_server();
    connect.hold.store(true, Ordering::SeqCst);
    // This server has no Stripe: only the worker processes below send payouts.
    let Some(app) = TestApp::spawn(Backend::Postgres).await else {
        return;
    };
    let connect_payout = json!({"currency": "USD", "payoutMethod": "STRIPE_CONNECT",
                                "payoutAccount": "acct_1RheinGpu0000001"});
    let sepa_payout = json!({"currency": "EUR", "payoutMethod": "SEPA_CREDIT_TRANSFER",
                             "payoutAccount": "FR14 2004 1010 0505 0001 3M02 606 PSSTFRPPXXX"});
    let (sku, (rhein_key, _), tenants) = marketplace(&app, (connect_payout, sepa_payout)).await;
    let plan = [
        (0, "ON_DEMAND"),
        (0, "ON_DEMAND"),
        (1, "ON_DEMAND"),
        (2, "ON_DEMAND"),
        (1, "SPOT"),
        (2, "SPOT"),
    ];
    let ran = place_and_release(&app, &sku, &tenants, &plan).await;
    set_lifetimes(&app, &ran).await;
    app.advance(TimeDelta::days(2));
    for (tenant, _) in &tenants {
        app.close_period(tenant, "id").await;
    }
    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;
    let queued = payouts_of(&app, &rhein_key).await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0]["status"], "queued");
    // Due now for the workers, which run on the system's clock.
    app.db
        .execute_unprepared(
            "UPDATE provider_payouts SET next_attempt_at = now() - interval '1 minute'",
        )
        .await
        .expect("due");

    assert_eq!(in_transit(&app).await, money(&queued[0]["amount"]));
    let mut worker = payout_worker(&app, &url);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while connect.transfers.lock().expect("lock").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no transfer was requested"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    worker.0.kill().expect("kill -9");
    worker.0.wait().expect("reaped");
    assert_eq!(payouts_of(&app, &rhein_key).await[0]["status"], "queued");

    connect.hold.store(false, Ordering::SeqCst);
    connect.forget_keys.store(true, Ordering::SeqCst);
    let _worker = payout_worker(&app, &url);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let payout = loop {
        let p = payouts_of(&app, &rhein_key).await.remove(0);
        if p["status"] == "sent" {
            break p;
        }
        assert!(std::time::Instant::now() < deadline, "never sent: {p}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(payout["reference"], "tr_1QhX2bL9aZ0Connect0001");
    // Give a wrongly repeated transfer time to show.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    // The restarted worker knows an attempt was made: it finds the transfer by its
    // group and sends nothing again.
    let requests = connect.requests.lock().expect("lock").clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        *connect.lookups.lock().expect("lock"),
        [payout["number"].as_str().expect("number")]
    );
    assert_eq!(connect.transfers.lock().expect("lock").len(), 1);
    // Paid once in the ledger too: out of transit once, whatever was sent twice.
    assert_eq!(in_transit(&app).await, Decimal::ZERO);
}

/// A provider paid in euros for usage invoiced in dollars: its statement is held, and says
/// why, until the operator adds a USD→EUR rate; then it closes with every earning and
/// chargeback converted at the rate in force at the invoices' period end (not a later
/// one), the rate on each line, and the ledger balanced.
async fn earnings_in_another_currency_are_converted(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let euros = json!({"currency": "EUR", "payoutMethod": "MANUAL"});
    let (sku, (rhein_key, seine_key), tenants) = marketplace(&app, (euros, manual())).await;
    let ran = month_of_use(&app, &sku, &tenants).await;
    grant(&app, &tenants[0].0, "PROMOTIONAL", "1000.00").await;
    // Each invoice's period ends when it is closed: the closes may straddle a second.
    let mut period_ends: Vec<DateTime<Utc>> = Vec::new();
    for (tenant, _) in &tenants {
        let inv = app.close_period(tenant, "periodEnd").await;
        period_ends.push(
            inv["periodEnd"]
                .as_str()
                .expect("end")
                .parse()
                .expect("instant"),
        );
    }
    app.advance_past(next_month(app.clock.now()) + TimeDelta::hours(1));
    close_statements(&app).await;
    assert!(statements_of(&app, &rhein_key).await.is_empty());
    let held = "{ provider { statementHeld { reason from to at } } }";
    let r = app.gql(Some(&rhein_key), held, json!({})).await;
    let hold = &r["data"]["provider"]["statementHeld"];
    assert_eq!(
        (&hold["from"], &hold["to"]),
        (&json!("USD"), &json!("EUR")),
        "{r}"
    );
    let at: DateTime<Utc> = hold["at"].as_str().expect("at").parse().expect("instant");
    let reason = hold["reason"].as_str().expect("reason");
    assert!(reason.contains("no USD→EUR exchange rate"), "{reason}");

    // A rate from just after the period end is not the one in force at it.
    let add = "mutation($i: AddExchangeRateInput!) { addExchangeRate(input: $i) { rate } }";
    assert!(
        period_ends.contains(&at),
        "the rate must be in force at an invoice's period end: {at} not in {period_ends:?}"
    );
    // After every invoice's period end.
    let end = period_ends.iter().copied().max().expect("invoices");
    for (rate, from) in [
        ("0.9215", end - TimeDelta::days(40)),
        ("0.5", end + TimeDelta::seconds(1)),
    ] {
        let input = json!({"from": "usd", "to": "EUR", "rate": rate, "effectiveFrom": from, "source": "ECB"});
        let r = app
            .gql(Some(&app.operator_key), add, json!({"i": input}))
            .await;
        assert!(r["errors"].is_null(), "{r}");
    }
    for (input, field) in [
        (
            json!({"from": "USD", "to": "USD", "rate": "1", "effectiveFrom": end}),
            "to",
        ),
        (
            json!({"from": "USD", "to": "EUR", "rate": "0", "effectiveFrom": end}),
            "rate",
        ),
        (
            json!({"from": "USD", "to": "XXX", "rate": "1", "effectiveFrom": end}),
            "to",
        ),
        (
            json!({"from": "USD", "to": "EUR", "rate": "0.9", "effectiveFrom": end - TimeDelta::days(40)}),
            "effectiveFrom",
        ),
    ] {
        let r = app
            .gql(Some(&app.operator_key), add, json!({"i": input}))
            .await;
        assert_eq!(r["errors"][0]["extensions"]["field"], field, "{r}");
    }
    let r = app
        .gql(
            Some(&rhein_key),
            add,
            json!({"i": {"from": "USD", "to": "EUR", "rate": "2", "effectiveFrom": end}}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    close_statements(&app).await;
    let rhein = statements_of(&app, &rhein_key).await;
    assert_eq!(rhein.len(), 1, "{rhein:?}");
    assert_eq!(rhein[0]["currency"], "EUR");
    let expected = model_converted(&ran, |_, p| p == "rhein-gpu", d("0.9215"));
    assert_eq!(
        figures(&rhein[0], "earning"),
        expected["rhein-gpu"],
        "{}",
        rhein[0]
    );
    for line in rhein[0]["lines"].as_array().expect("lines") {
        assert_eq!(
            (&line["revenueCurrency"], &line["exchangeRate"]),
            (&json!("USD"), &json!("0.9215"))
        );
    }
    totals_add_up(&rhein[0]);
    let r = app.gql(Some(&rhein_key), held, json!({})).await;
    assert_eq!(r["data"]["provider"]["statementHeld"], Value::Null, "{r}");
    // The ledger balances, and owes each provider what its statements netted.
    owed_what_statements_netted(&app, [("rhein-gpu", &rhein_key), ("seine-gpu", &seine_key)]).await;
}

/// A day of reference rates in the ECB's format (single quotes, as the ECB writes them).
fn ecb_day(date: &str, usd: &str) -> String {
    ecb_history(&[(date, usd)])
}

/// A feed in the ECB's format with a day per `(date, USD per euro)`, in the order given
/// (the ECB's history lists the newest first).
fn ecb_history(days: &[(&str, &str)]) -> String {
    let cubes: String = days
        .iter()
        .map(|(date, usd)| {
            format!(
                "\t\t<Cube time='{date}'>\n\t\t\t<Cube currency='USD' rate='{usd}'/>\n\t\t\t<Cube currency='JPY' rate='162.35'/>\n\t\t\t<Cube currency='HUF' rate='402.10'/>\n\t\t\t<Cube currency='GBP' rate='0.8421'/>\n\t\t</Cube>\n"
            )
        })
        .collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gesmes:Envelope xmlns:gesmes=\"http://www.gesmes.org/xml/2002-08-01\" xmlns=\"http://www.ecb.int/vocabulary/2002-08-01/eurofxref\">\n\t<gesmes:subject>Reference rates</gesmes:subject>\n\t<Cube>\n{cubes}\t</Cube>\n</gesmes:Envelope>\n"
    )
}

/// A local server answering every request with what `feed` holds.
fn feed_server(feed: Arc<Mutex<String>>) -> String {
    use actix_web::{App, HttpResponse, HttpServer, web};
    let data = web::Data::new(feed);
    let server = HttpServer::new(move || {
        App::new().app_data(data.clone()).default_service(web::to(
            |feed: web::Data<Arc<Mutex<String>>>| async move {
                let body = feed.lock().expect("feed").clone();
                HttpResponse::Ok().content_type("text/xml").body(body)
            },
        ))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let url = format!(
        "http://{}/stats/eurofxref/eurofxref-daily.xml",
        server.addrs()[0]
    );
    tokio::spawn(server.run());
    url
}

async fn rates(app: &TestApp) -> Vec<Value> {
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ exchangeRates { from to rate effectiveFrom source } }",
            json!({}),
        )
        .await;
    r["data"]["exchangeRates"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{r}"))
}

const FETCH: &str = "mutation { fetchReferenceRates { day added } }";

/// Reference rates read from a feed in the ECB's format, at start and on demand: every
/// pair of the day's supported currencies with the euro (the published rate, its inverse,
/// the cross rates), each from the day's start; a day read again adds nothing, a
/// malformed feed nothing at all, a new day its own rates, a history the days missed.
async fn reference_rates_come_from_the_feed(backend: Backend) {
    let feed = Arc::new(Mutex::new(ecb_day("2026-12-04", "1.0845")));
    let url = feed_server(feed.clone());
    let Some(app) =
        TestApp::spawn_with(backend, move |s| s.exchange_rates.feed_url = Some(url)).await
    else {
        return;
    };
    // The server reads the feed as it starts.
    let mut read = Vec::new();
    for _ in 0..100 {
        read = rates(&app).await;
        if read.len() == 12 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(read.len(), 12, "EUR, USD, JPY and GBP pairwise: {read:?}");
    let rate = |all: &[Value], from: &str, to: &str| {
        all.iter()
            .filter(|r| r["from"] == from && r["to"] == to)
            .map(|r| {
                (
                    r["rate"].as_str().unwrap_or_default().to_owned(),
                    r["effectiveFrom"].clone(),
                    r["source"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rate(&read, "USD", "EUR"),
        vec![(
            "0.9220839096".to_owned(),
            json!("2026-12-04T00:00:00+00:00"),
            json!("Reference rate 2026-12-04")
        )]
    );
    assert_eq!(rate(&read, "EUR", "USD")[0].0, "1.0845");
    assert_eq!(rate(&read, "USD", "GBP")[0].0, "0.7764868603");
    let r = app.gql(Some(&app.operator_key), FETCH, json!({})).await;
    assert_eq!(
        r["data"]["fetchReferenceRates"],
        json!({"day": "2026-12-04", "added": 0}),
        "{r}"
    );

    for bad in [
        "<html>down for maintenance</html>".to_owned(),
        ecb_day("2026-12-07", "-1"),
        ecb_day("2999-01-01", "1.0900"),
    ] {
        *feed.lock().expect("feed") = bad;
        let r = app.gql(Some(&app.operator_key), FETCH, json!({})).await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
        assert_eq!(r["errors"][0]["extensions"]["field"], "feed", "{r}");
    }
    assert_eq!(
        rates(&app).await.len(),
        12,
        "a malformed feed added something"
    );

    *feed.lock().expect("feed") = ecb_day("2026-12-07", "1.0900");
    let r = app.gql(Some(&app.operator_key), FETCH, json!({})).await;
    assert_eq!(
        r["data"]["fetchReferenceRates"],
        json!({"day": "2026-12-07", "added": 12}),
        "{r}"
    );
    let usd_eur = rate(&rates(&app).await, "USD", "EUR");
    assert_eq!(usd_eur.len(), 2);
    assert_eq!(usd_eur[1].0, "0.9174311927", "1 / 1.09");
    let audit = app
        .gql(Some(&app.operator_key), "{ auditLog(filter: {action: \"exchange_rate.reference\"}) { edges { node { after } } } }", json!({}))
        .await;
    assert_eq!(
        audit["data"]["auditLog"]["edges"].as_array().map(Vec::len),
        Some(2),
        "{audit}"
    );

    // The 90-day history back-fills the day missed; the days read before keep their rates.
    *feed.lock().expect("feed") = ecb_history(&[
        ("2026-12-07", "1.0950"),
        ("2026-12-05", "1.087"),
        ("2026-12-04", "1.0845"),
    ]);
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { fetchReferenceRates { day days added } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["fetchReferenceRates"],
        json!({"day": "2026-12-07", "days": 3, "added": 12}),
        "{r}"
    );
    let usd_eur: Vec<(String, Value)> = rate(&rates(&app).await, "USD", "EUR")
        .into_iter()
        .map(|(rate, from, _)| (rate, from))
        .collect();
    assert_eq!(
        usd_eur,
        vec![
            (
                "0.9220839096".to_owned(),
                json!("2026-12-04T00:00:00+00:00")
            ),
            (
                "0.9199632015".to_owned(),
                json!("2026-12-05T00:00:00+00:00")
            ),
            (
                "0.9174311927".to_owned(),
                json!("2026-12-07T00:00:00+00:00")
            ),
        ],
        "1 / 1.087 from the 5th; the 7th keeps 1 / 1.09"
    );
    for bad in [
        ecb_history(&[("2026-12-05", "1.087"), ("2026-12-05", "1.088")]),
        ecb_history(&[("2026-12-06", "1.087"), ("2999-01-01", "1.088")]),
    ] {
        *feed.lock().expect("feed") = bad;
        let r = app.gql(Some(&app.operator_key), FETCH, json!({})).await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    }
    assert_eq!(rates(&app).await.len(), 36, "three days of 12 pairs");
}

on_both_databases!(
    reference_rates_come_from_the_feed,
    earnings_in_another_currency_are_converted,
    credit_notes_take_back_a_revenue_share,
    a_fixed_rate_shares_credit_notes_where_agreed,
    statements_follow_the_agreements,
    payouts_are_sent_once,
    an_invoice_paid_outside_stripe_releases_held_earnings,
);
