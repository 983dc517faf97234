//! The money ledger against the records it must agree with, over generated sequences of
//! what moves money: usage billed and periods closed, promotional and prepaid grants, a
//! top-up paid through Stripe, invoices paid through Stripe's webhook, voids, and credit
//! notes applied to what is due, given to the balance or owed back to the card. After
//! every sequence, read through the API only:
//!
//! - debits equal credits, in every currency and every transfer (`ledgerCheck`);
//! - each tenant's receivable is its invoices (finalized, not void) less what credit notes
//!   took off them and what Stripe collected; its wallet is what is left of its grants;
//!   its refunds payable is what notes refunded;
//! - revenue and tax payable are the invoices' subtotals and taxes less the notes'; Stripe
//!   cash is what was collected; promotions and external cash are what was granted.
//!
//! The expected figures are summed here from invoices, grants, notes and the payments
//! the sequence made, never from the ledger. The same history posted afresh, as for a
//! database that had it before the ledger existed, gives the same balances. A tenant
//! reads only its own accounts, and the journal export is the operators'.

mod support;

use std::collections::BTreeMap;

use chrono::TimeDelta;
use neocloud_metering::payments::{accounts, outbox, webhook};
use neocloud_schema::clock::Clock;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use support::billing::{Customer, add_rate, customer, egress, egress_sku, seller};
use support::{Backend, TestApp, error_code};

const SECRET: &str = "whsec_ledger_test";

#[derive(Debug, Clone)]
enum Op {
    Usage {
        who: usize,
        gb: u32,
    },
    Grant {
        who: usize,
        promotional: bool,
        cents: u32,
    },
    TopUp {
        who: usize,
        units: u32,
    },
    Close {
        who: usize,
    },
    Pay {
        who: usize,
        pick: usize,
    },
    Void {
        who: usize,
        pick: usize,
    },
    Credit {
        who: usize,
        pick: usize,
        cents: Option<u32>,
        refund: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let who = 0..2usize;
    prop_oneof![
        3 => (who.clone(), 1..400u32).prop_map(|(who, gb)| Op::Usage { who, gb }),
        1 => (who.clone(), any::<bool>(), 1..3_000u32)
            .prop_map(|(who, promotional, cents)| Op::Grant { who, promotional, cents }),
        1 => (who.clone(), 1..40u32).prop_map(|(who, units)| Op::TopUp { who, units }),
        3 => who.clone().prop_map(|who| Op::Close { who }),
        2 => (who.clone(), 0..4usize).prop_map(|(who, pick)| Op::Pay { who, pick }),
        1 => (who.clone(), 0..4usize).prop_map(|(who, pick)| Op::Void { who, pick }),
        2 => (who, 0..4usize, prop::option::of(1..2_000u32), any::<bool>())
            .prop_map(|(who, pick, cents, refund)| Op::Credit { who, pick, cents, refund }),
    ]
}

/// What the sequence did that the records alone do not show: what Stripe collected.
struct Made {
    /// Per tenant, the finalized invoices, in order.
    invoices: Vec<Vec<String>>,
    /// Per tenant, what Stripe collected for invoices.
    collected: Vec<Decimal>,
    /// Per tenant, what Stripe collected for top-ups.
    topped_up: Vec<Decimal>,
    events: u32,
}

impl Made {
    fn for_tenants(n: usize) -> Made {
        Made {
            invoices: vec![Vec::new(); n],
            collected: vec![Decimal::ZERO; n],
            topped_up: vec![Decimal::ZERO; n],
            events: 0,
        }
    }
}

struct Run<'a> {
    app: &'a TestApp,
    who: Vec<Customer>,
    made: Made,
}

#[track_caller]
fn dec(v: &Value) -> Decimal {
    match v.as_str().map(str::parse) {
        Some(Ok(d)) => d,
        _ => panic!("not a decimal string: {v}"),
    }
}

fn cents(c: u32) -> String {
    Decimal::new(i64::from(c), 2).to_string()
}

impl Run<'_> {
    async fn op(&mut self, op: &Op) {
        let app = self.app;
        match *op {
            Op::Usage { who, gb } => {
                app.advance(TimeDelta::seconds(5));
                self.made.events += 1;
                let id = format!("e{}", self.made.events);
                egress(app, &self.who[who], &id, &gb.to_string(), app.clock.now()).await;
            }
            Op::Grant {
                who,
                promotional,
                cents: c,
            } => {
                let kind = if promotional {
                    "PROMOTIONAL"
                } else {
                    "PREPAID"
                };
                let r = app.gql(Some(&app.operator_key),
                    "mutation($i: GrantCreditsInput!) { grantCredits(input: $i) { id } }",
                    json!({"i": {"tenantId": self.who[who].id, "kind": kind, "amount": cents(c), "reason": "test"}})).await;
                assert!(r["errors"].is_null(), "grantCredits: {r}");
            }
            Op::TopUp { who, units } => self.top_up(who, units).await,
            Op::Close { who } => {
                app.advance(TimeDelta::seconds(61));
                let invoice = app.close_period(&self.who[who].id, "id").await;
                let id = invoice["id"].as_str().expect("id").to_owned();
                self.made.invoices[who].push(id);
            }
            Op::Pay { who, pick } => self.pay(who, pick).await,
            Op::Void { who, pick } => {
                let Some(id) = self.made.invoices[who].get(pick).cloned() else {
                    return;
                };
                // Refused for paid or credited invoices: a refusal changes nothing.
                app.gql(
                    Some(&app.operator_key),
                    "mutation($id: ID!) { voidInvoice(id: $id, reason: \"test\") { status } }",
                    json!({"id": id}),
                )
                .await;
            }
            Op::Credit {
                who,
                pick,
                cents: c,
                refund,
            } => {
                let Some(id) = self.made.invoices[who].get(pick).cloned() else {
                    return;
                };
                let mut input =
                    json!({"invoiceId": id, "form": "FULL", "reason": "test", "refund": refund});
                if let Some(c) = c {
                    input["form"] = json!("AMOUNT");
                    input["amount"] = json!(cents(c));
                }
                // Refused when nothing is left, more is asked, or a refund has nothing to go to.
                app.gql(
                    Some(&app.operator_key),
                    "mutation($i: IssueCreditNoteInput!) { issueCreditNote(input: $i) { id } }",
                    json!({"i": input}),
                )
                .await;
            }
        }
    }

    /// Pays the picked invoice through Stripe's webhook, for what is due on it then; the
    /// charge's outbox row is settled by the same event, so a refund has a PaymentIntent.
    async fn pay(&mut self, who: usize, pick: usize) {
        let app = self.app;
        let Some(id) = self.made.invoices[who].get(pick).cloned() else {
            return;
        };
        let r = app
            .gql(
                Some(&app.operator_key),
                "query($id: ID!) { invoice(id: $id) { status amountDue } }",
                json!({"id": id}),
            )
            .await;
        let invoice = &r["data"]["invoice"];
        if !matches!(
            invoice["status"].as_str(),
            Some("OPEN" | "OVERDUE" | "UNCOLLECTIBLE")
        ) {
            return;
        }
        let due = dec(&invoice["amountDue"]);
        let invoice_id: uuid::Uuid = id.parse().expect("uuid");
        let key = outbox::invoice_key(invoice_id.into(), 0);
        let body = self.event(
            "payment_intent.succeeded",
            json!({"invoice_id": id, "neocloud_key": key}),
        );
        let outcome = deliver(app, &body).await;
        if outcome == "Applied" {
            self.made.collected[who] += due;
        }
    }

    /// Starts a top-up and pays it through Stripe's webhook.
    async fn top_up(&mut self, who: usize, units: u32) {
        let app = self.app;
        let r = app
            .gql(
                Some(&self.who[who].admin),
                "mutation($a: String!) { startTopUp(amount: $a) { id amount } }",
                json!({"a": units.to_string()}),
            )
            .await;
        let top_up = r["data"]["startTopUp"].clone();
        assert!(top_up.is_object(), "startTopUp: {r}");
        let body = self.event(
            "payment_intent.succeeded",
            json!({"top_up_id": top_up["id"]}),
        );
        assert_eq!(deliver(app, &body).await, "Applied");
        self.made.topped_up[who] += dec(&top_up["amount"]);
    }

    fn event(&mut self, kind: &str, metadata: Value) -> Vec<u8> {
        self.made.events += 1;
        let n = self.made.events;
        serde_json::to_vec(
            &json!({"id": format!("evt_{n}"), "object": "event", "type": kind,
            "created": 1_790_000_000, "data": {"object": {"id": format!("pi_{n}"),
            "object": "payment_intent", "metadata": metadata}}}),
        )
        .expect("json")
    }
}

async fn deliver(app: &TestApp, body: &[u8]) -> String {
    let signature = webhook::sign(body, SECRET, chrono::Utc::now().timestamp());
    let r: Value = app
        .client
        .post(format!("{}/v1/stripe/webhook", app.url))
        .header("content-type", "application/json")
        .header("Stripe-Signature", signature)
        .body(body.to_vec())
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("json");
    r["outcome"]
        .as_str()
        .map_or_else(|| r.to_string(), String::from)
}

/// Balances by (account, owner): owner `""` for the platform.
type Balances = BTreeMap<(String, String), Decimal>;

async fn balances(app: &TestApp, key: &str, tenant: Option<&str>) -> Balances {
    let r = app
        .gql(
            Some(key),
            "query($t: ID) { ledgerBalances(tenantId: $t) { account ownerId currency balance } }",
            json!({"t": tenant}),
        )
        .await;
    let rows = r["data"]["ledgerBalances"]
        .as_array()
        .unwrap_or_else(|| panic!("ledgerBalances: {r}"));
    rows.iter()
        .map(|b| {
            assert_eq!(b["currency"], "USD");
            let owner = b["ownerId"].as_str().unwrap_or_default().to_owned();
            let account = b["account"].as_str().expect("account").to_owned();
            ((account, owner), dec(&b["balance"]))
        })
        .collect()
}

/// Every account with an owner names it, as the tenant itself is named; the platform's
/// accounts name nobody.
async fn owners_are_named(app: &TestApp, who: &Customer) {
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($t: ID!) { tenant(id: $t) { name } ledgerBalances { ownerId ownerName } }",
            json!({"t": who.id}),
        )
        .await;
    let name = &r["data"]["tenant"]["name"];
    for b in r["data"]["ledgerBalances"].as_array().expect("balances") {
        assert_eq!(b["ownerId"].is_null(), b["ownerName"].is_null(), "{b}");
        if b["ownerId"] == json!(who.id) {
            assert_eq!(&b["ownerName"], name, "{b}");
        }
    }
}

/// What the ledger must show, summed from the tenant's records and what the run made.
async fn expected(run: &Run<'_>, who: usize, want: &mut Balances) {
    let app = run.app;
    let tenant = &run.who[who].id;
    let mut add = |account: &str, owner: &str, amount: Decimal| {
        *want.entry((account.into(), owner.into())).or_default() += amount;
    };
    let mut receivable = -run.made.collected[who];
    for id in &run.made.invoices[who] {
        let r = app
            .gql(
                Some(&app.operator_key),
                "query($id: ID!) { invoice(id: $id) { status subtotal tax total } }",
                json!({"id": id}),
            )
            .await;
        let inv = &r["data"]["invoice"];
        if inv["status"] != "VOID" {
            receivable += dec(&inv["total"]);
            add("REVENUE", "", dec(&inv["subtotal"]));
            add("TAX_PAYABLE", "", dec(&inv["tax"]));
        }
    }
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($t: ID) { creditNotes(tenantId: $t) { subtotal tax applied refunded } }",
            json!({"t": tenant}),
        )
        .await;
    for n in r["data"]["creditNotes"].as_array().expect("notes") {
        receivable -= dec(&n["applied"]);
        add("REVENUE", "", -dec(&n["subtotal"]));
        add("TAX_PAYABLE", "", -dec(&n["tax"]));
        add("REFUNDS_PAYABLE", tenant, dec(&n["refunded"]));
    }
    add("RECEIVABLE", tenant, receivable);
    add(
        "STRIPE_CASH",
        "",
        run.made.collected[who] + run.made.topped_up[who],
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($t: ID) { creditGrants(tenantId: $t) { kind amount remaining reason } }",
            json!({"t": tenant}),
        )
        .await;
    for g in r["data"]["creditGrants"].as_array().expect("grants") {
        add("WALLET", tenant, dec(&g["remaining"]));
        let operator = g["reason"] == "test";
        match g["kind"].as_str() {
            Some("PROMOTIONAL") => add("PROMOTIONS", "", dec(&g["amount"])),
            Some("PREPAID") if operator => add("EXTERNAL_CASH", "", dec(&g["amount"])),
            _ => {}
        }
    }
}

fn nonzero(b: Balances) -> Balances {
    b.into_iter().filter(|(_, v)| !v.is_zero()).collect()
}

async fn setup(backend: Backend) -> Option<(TestApp, Vec<Customer>)> {
    let app = TestApp::spawn_with(backend, |s| {
        seller(s);
        s.stripe_secret_key = Some("sk_test_ledger".to_owned().into());
        s.stripe_webhook_secret = Some(SECRET.to_owned().into());
        // No Stripe answers: charges stay queued; the webhook says what was paid.
        s.stripe_api_base = Some("http://127.0.0.1:9".into());
    })
    .await?;
    egress_sku(&app).await;
    add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    let who = vec![
        customer(&app, "rhein", Some(("DE", Some("DE811363057")))).await,
        customer(&app, "seine", Some(("FR", Some("FR40303265045")))).await,
    ];
    // A card on file, as Stripe would have confirmed it, so top-ups can start.
    for c in &who {
        let tenant = neocloud_schema::ids::TenantId(c.id.parse().expect("uuid"));
        accounts::set_payment_method(
            &app.db,
            tenant,
            "cus_test",
            "pm_card_visa",
            None,
            chrono::Utc::now(),
        )
        .await
        .expect("payment method");
    }
    Some((app, who))
}

async fn the_ledger_agrees_with_invoices_payments_and_credits(backend: Backend) {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[22; 32]),
    );
    let cases = prop::collection::vec(op(), 6..20);
    let mut kinds_seen = std::collections::BTreeSet::new();
    for case in 0..6 {
        let Some((app, who)) = setup(backend).await else {
            return;
        };
        let ops = cases.new_tree(&mut runner).expect("ops").current();
        let mut run = Run {
            app: &app,
            who,
            made: Made::for_tenants(2),
        };
        for op in &ops {
            run.op(op).await;
        }
        // Close both periods at the end so every sequence bills something.
        run.op(&Op::Close { who: 0 }).await;
        run.op(&Op::Close { who: 1 }).await;

        let r = app
            .gql(
                Some(&app.operator_key),
                "{ ledgerCheck { balanced transfers unbalancedCurrencies { currency offBy } } }",
                json!({}),
            )
            .await;
        assert_eq!(
            r["data"]["ledgerCheck"]["balanced"], true,
            "case {case} {ops:?}: {r}"
        );

        let mut want = Balances::new();
        for i in 0..2 {
            expected(&run, i, &mut want).await;
        }
        let got = balances(&app, &app.operator_key, None).await;
        assert_eq!(nonzero(got), nonzero(want), "case {case}: {ops:?}");

        // A tenant reads its own accounts, and nobody else's.
        let own = balances(&app, &run.who[0].admin, None).await;
        assert!(
            own.keys().all(|(_, owner)| *owner == run.who[0].id),
            "{own:?}"
        );
        owners_are_named(&app, &run.who[0]).await;
        let r = app
            .gql(
                Some(&run.who[0].admin),
                "query($t: ID) { ledgerBalances(tenantId: $t) { balance } }",
                json!({"t": run.who[1].id}),
            )
            .await;
        assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
        kinds_seen.extend(journal_kinds(&app).await);
        history_is_posted_as_it_would_have_been(&app).await;
    }
    // The generated sequences moved money every way this test can.
    let every = [
        "credit.granted",
        "credit_note.issued",
        "invoice.finalized",
        "invoice.paid",
        "invoice.voided",
    ];
    assert_eq!(kinds_seen, every.map(String::from).into(), "{kinds_seen:?}");
}

/// A database that held this history before it had a ledger (migration 037 undone and
/// redone: empty tables) gets the same balances posted when it is next migrated.
async fn history_is_posted_as_it_would_have_been(app: &TestApp) {
    use neocloud_migrations::{Migrator, MigratorTrait};
    use sea_orm::ConnectionTrait;
    // Migration 037 made the ledger; undo it and every migration after it.
    const BEFORE_LEDGER: usize = 36;
    let live = balances(app, &app.operator_key, None).await;
    let after = u32::try_from(Migrator::migrations().len() - BEFORE_LEDGER).expect("count");
    Migrator::down(&app.db, Some(after))
        .await
        .expect("undo 037 and later");
    let gone = app
        .db
        .execute_unprepared("SELECT COUNT(*) FROM ledger_transfers")
        .await;
    assert!(gone.is_err(), "the ledger's tables are gone");
    neocloud_api::db::migrate(&app.db).await.expect("migrate");
    assert_eq!(balances(app, &app.operator_key, None).await, live);
}

/// The kinds of transfer the journal holds.
async fn journal_kinds(app: &TestApp) -> std::collections::BTreeSet<String> {
    let csv = app
        .client
        .get(format!("{}/v1/ledger/journal.csv", app.url))
        .bearer_auth(&app.operator_key)
        .send()
        .await
        .expect("get")
        .text()
        .await
        .expect("text");
    csv.lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(2).map(String::from))
        .collect()
}

/// The journal is the operators': a row per entry, debits and credits in the currency's
/// units, summing to the same on both sides; tenants are refused.
async fn the_journal_exports_every_entry_to_operators_only(backend: Backend) {
    let Some((app, who)) = setup(backend).await else {
        return;
    };
    app.advance(TimeDelta::minutes(2));
    egress(&app, &who[0], "e1", "150", app.clock.now()).await;
    let invoice = app.close_period(&who[0].id, "id total").await;
    assert_eq!(invoice["total"], "17.85");
    let url = format!("{}/v1/ledger/journal.csv", app.url);
    let get = |key: &str| app.client.get(&url).bearer_auth(key.to_owned()).send();
    let refused = get(&who[0].admin).await.expect("get");
    assert_eq!(refused.status().as_u16(), 403);
    let csv = get(&app.operator_key)
        .await
        .expect("get")
        .text()
        .await
        .expect("text");
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][0], "posted_at");
    let of_kind = |k: &str| rows.iter().filter(|r| r[2] == k).count();
    assert_eq!(
        of_kind("invoice.finalized"),
        3,
        "receivable, revenue, tax: {csv}"
    );
    let sum = |col: usize| -> Decimal {
        rows[1..]
            .iter()
            .filter_map(|r| r[col].parse::<Decimal>().ok())
            .sum()
    };
    assert_eq!(sum(9), sum(10), "{csv}");
    assert_eq!(sum(9), "17.85".parse::<Decimal>().expect("decimal"));
    let bad = app
        .client
        .get(format!("{url}?tenantId=nope"))
        .bearer_auth(&app.operator_key)
        .send()
        .await
        .expect("get");
    assert_eq!(bad.status().as_u16(), 400);

    // Posted is posted: the database itself refuses to change or remove it.
    use sea_orm::ConnectionTrait;
    for sql in [
        "UPDATE ledger_entries SET amount = amount + 1",
        "DELETE FROM ledger_entries",
        "UPDATE ledger_transfers SET description = 'edited'",
        "DELETE FROM ledger_transfers",
    ] {
        assert!(
            app.db.execute_unprepared(sql).await.is_err(),
            "{sql} was allowed"
        );
    }
    let after = app
        .client
        .get(&url)
        .bearer_auth(&app.operator_key)
        .send()
        .await;
    assert_eq!(after.expect("get").text().await.expect("text"), csv);
}

/// A period closed in this second opens the next at the following whole second; a
/// top-up paid in between is granted from then (it was once refused, and Stripe's event
/// answered with a server error).
async fn a_top_up_paid_in_the_second_a_period_closes_is_granted(backend: Backend) {
    let Some((app, who)) = setup(backend).await else {
        return;
    };
    app.advance(TimeDelta::milliseconds(61_500));
    app.close_period(&who[0].id, "id").await;
    let mut run = Run {
        app: &app,
        who,
        made: Made::for_tenants(2),
    };
    run.top_up(0, 7).await;
    let wallet = balances(&app, &app.operator_key, Some(&run.who[0].id)).await;
    let key = ("WALLET".to_owned(), run.who[0].id.clone());
    assert_eq!(wallet.get(&key), Some(&Decimal::new(700, 2)), "{wallet:?}");
}

on_both_databases!(
    the_ledger_agrees_with_invoices_payments_and_credits,
    a_top_up_paid_in_the_second_a_period_closes_is_granted,
    the_journal_exports_every_entry_to_operators_only,
);
