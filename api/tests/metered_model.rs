//! The real server's metered invoice lines against an independent model of the rule in
//! `docs/metering.md` ("Meters and usage events"), sharing no code with `meters` or
//! rating: for generated meters of every aggregation, with and without a group-by, priced
//! per unit, with a free allowance (graduated, first tier at 0) or at the SKU's list
//! price, and generated events sent in shuffled batches with resends and invalid events
//! among them, each metered SKU's lines and the invoice's total must equal the model's.
//!
//! The rule the model encodes: an event counts once per `(source, id)` of its tenant,
//! whatever is resent; a refused event (here: timed hours ahead) counts nothing. Per meter and group (the values at
//! the group-by paths; absent is a group of its own), SUM adds the values, COUNT counts
//! the events, MAX takes the largest, UNIQUE_COUNT counts the distinct values, LATEST
//! takes the value of the latest event by time (the larger at equal times); the meter's
//! quantity is the sum over its groups. Per unit: quantity × price; graduated: each tier
//! its part × its price; each line rounded half-even to cents; the total their sum.
//!
//! Storage volumes (`docs/volumes.md`), generated alongside: random creates, resizes
//! (some refused: a block volume shrinking, a size out of bounds — they change nothing)
//! and deletes at random times. A volume SKU's quantity is the sum over the volume's sizes
//! of GB × milliseconds held, in GB-hours (divided once, 20 decimal places), priced like a
//! metered quantity.
//!
//! Model offerings (`docs/models.md`), generated too: random prices per million, with or
//! without a cached price, a request fee or none, a token bound, the output tokens rated
//! at list price, per unit or with a free allowance; random `model.request` events, some
//! for an unknown model, some above the bound (refused whole), each status, all sent
//! twice. Per offering: input, output and cached tokens summed over the events that count,
//! requests counted unless `error`, each priced per its rate.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::clock::Clock;
use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::{Value, json};
use support::{Backend, TestApp};

/// A small deterministic generator (xorshift64*), so a failing case replays by its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[usize::try_from(self.below(items.len() as u64)).unwrap_or(0)]
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Aggregation {
    Sum,
    Count,
    Max,
    Unique,
    Latest,
}

#[derive(Debug, Clone)]
enum Pricing {
    ListPrice,
    PerUnit(Decimal),
    /// The first `allowance` units free, then `price` each.
    Allowance(Decimal, Decimal),
}

#[derive(Debug, Clone)]
struct MeterCase {
    event_type: String,
    sku_name: String,
    list_price: Decimal,
    aggregation: Aggregation,
    grouped: bool,
    pricing: Pricing,
}

#[derive(Debug, Clone)]
struct Event {
    meter: usize,
    id: String,
    time: DateTime<Utc>,
    value: Decimal,
    group: Option<&'static str>,
    user: u64,
    valid: bool,
}

impl Event {
    fn json(&self, m: &MeterCase) -> Value {
        let mut data = json!({"user": self.user});
        if m.aggregation != Aggregation::Count {
            data["v"] = json!(self.value.to_string());
        }
        if let Some(g) = self.group {
            data["g"] = json!(g);
        }
        // An invalid event is timed hours ahead of the server's clock.
        let time = if self.valid {
            self.time
        } else {
            self.time + TimeDelta::hours(4)
        };
        json!({"specversion": "1.0", "id": self.id, "source": "model", "type": m.event_type,
               "time": time.to_rfc3339(), "data": data})
    }
}

fn money(d: Decimal) -> Decimal {
    d.round_dp_with_strategy(2, RoundingStrategy::MidpointNearestEven)
}

/// The model: a meter's quantity from the events that count.
fn quantity(m: &MeterCase, events: &[&Event]) -> Decimal {
    let mut groups: BTreeMap<Option<&str>, Vec<&Event>> = BTreeMap::new();
    for e in events {
        groups
            .entry(if m.grouped { e.group } else { None })
            .or_default()
            .push(e);
    }
    groups
        .values()
        .map(|es| match m.aggregation {
            Aggregation::Sum => es.iter().map(|e| e.value).sum(),
            Aggregation::Count => Decimal::from(es.len()),
            Aggregation::Max => es.iter().map(|e| e.value).max().unwrap_or_default(),
            Aggregation::Unique => {
                Decimal::from(es.iter().map(|e| e.user).collect::<BTreeSet<_>>().len())
            }
            Aggregation::Latest => es
                .iter()
                .map(|e| (e.time, e.value))
                .max()
                .map_or(Decimal::ZERO, |(_, v)| v),
        })
        .sum()
}

/// One invoice line as the model has it: (quantity, unit price, amount).
type ModelLine = (Decimal, Decimal, Decimal);

/// The model: a SKU's lines as (quantity, unit price, amount).
fn lines(m: &MeterCase, q: Decimal) -> Vec<ModelLine> {
    if q.is_zero() {
        return Vec::new();
    }
    match &m.pricing {
        Pricing::ListPrice => vec![(q, m.list_price, money(q * m.list_price))],
        Pricing::PerUnit(p) => vec![(q, *p, money(q * p))],
        Pricing::Allowance(free, p) => {
            let mut out = vec![(q.min(*free), Decimal::ZERO, Decimal::ZERO)];
            if q > *free {
                out.push((q - free, *p, money((q - free) * p)));
            }
            out
        }
    }
}

fn generate_meters(rng: &mut Rng, case: u64) -> Vec<MeterCase> {
    let aggregations = [
        Aggregation::Sum,
        Aggregation::Count,
        Aggregation::Max,
        Aggregation::Unique,
        Aggregation::Latest,
    ];
    let prices = [
        Decimal::new(9, 2),
        Decimal::new(15, 4),
        Decimal::new(125, 2),
        Decimal::new(2, 6),
    ];
    (0..1 + rng.below(3))
        .map(|i| {
            let price = *rng.pick(&prices);
            let pricing = match rng.below(3) {
                0 => Pricing::ListPrice,
                1 => Pricing::PerUnit(price * Decimal::from(2)),
                _ => Pricing::Allowance(Decimal::from(1 + rng.below(200)), price),
            };
            MeterCase {
                event_type: format!("c{case}.m{i}"),
                sku_name: format!("c{case}-m{i}"),
                list_price: price,
                aggregation: *rng.pick(&aggregations),
                grouped: rng.below(2) == 0,
                pricing,
            }
        })
        .collect()
}

fn generate_events(rng: &mut Rng, meters: &[MeterCase], start: DateTime<Utc>) -> Vec<Event> {
    (0..10 + rng.below(30))
        .map(|n| Event {
            meter: usize::try_from(rng.below(meters.len() as u64)).unwrap_or(0),
            id: format!("e{n}"),
            time: start + TimeDelta::seconds(i64::try_from(60 + rng.below(300)).unwrap_or(60)),
            value: Decimal::new(
                i64::try_from(rng.below(100_000)).unwrap_or(0),
                u32::try_from(rng.below(4)).unwrap_or(0),
            ),
            group: *rng.pick(&[Some("a"), Some("b"), None]),
            user: rng.below(6),
            valid: rng.below(8) != 0,
        })
        .collect()
}

async fn setup_meter(app: &TestApp, m: &MeterCase) -> String {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: String!, $p: String!) { createSku(input: {name: $n, form: METERED, unit: \"unit\", region: \"eu-west\", listPricePerHour: $p, currency: \"USD\"}) { sku { id } } }",
            json!({"n": m.sku_name, "p": m.list_price.to_string()}),
        )
        .await;
    let sku = r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let (aggregation, path) = match m.aggregation {
        Aggregation::Sum => ("SUM", Some("v")),
        Aggregation::Count => ("COUNT", None),
        Aggregation::Max => ("MAX", Some("v")),
        Aggregation::Unique => ("UNIQUE_COUNT", Some("user")),
        Aggregation::Latest => ("LATEST", Some("v")),
    };
    let group_by: Vec<&str> = if m.grouped { vec!["g"] } else { vec![] };
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: CreateMeterInput!) { createMeter(input: $i) { meter { id } } }",
            json!({"i": {"key": m.sku_name, "eventType": m.event_type, "valuePath": path,
                   "aggregation": aggregation, "groupBy": group_by, "skuId": sku}}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    sku
}

fn rate(pricing: &Pricing, sku: &str) -> Option<Value> {
    match pricing {
        Pricing::ListPrice => None,
        Pricing::PerUnit(p) => Some(
            json!({"sku": sku, "metric": "METERED", "tiersMode": "PER_UNIT", "unitPrice": p.to_string()}),
        ),
        Pricing::Allowance(free, p) => Some(
            json!({"sku": sku, "metric": "METERED", "tiersMode": "GRADUATED",
            "tiers": [{"upTo": free.to_string(), "unitPrice": "0"}, {"upTo": null, "unitPrice": p.to_string()}]}),
        ),
    }
}

/// Sends the events shuffled, in batches of 1 to 15, each valid one a second time in a
/// later batch (a retry after a lost answer).
async fn send(app: &TestApp, rng: &mut Rng, key: &str, meters: &[MeterCase], events: &[Event]) {
    let mut order: Vec<&Event> = events
        .iter()
        .chain(events.iter().filter(|e| e.valid))
        .collect();
    for i in (1..order.len()).rev() {
        order.swap(i, usize::try_from(rng.below(i as u64 + 1)).unwrap_or(0));
    }
    while !order.is_empty() {
        let n = usize::try_from(1 + rng.below(15))
            .unwrap_or(1)
            .min(order.len());
        let batch: Vec<Value> = order.drain(..n).map(|e| e.json(&meters[e.meter])).collect();
        let res = app
            .client
            .post(format!("{}/v1/events", app.url))
            .bearer_auth(key)
            .header("content-type", "application/cloudevents-batch+json")
            .body(Value::Array(batch).to_string())
            .send()
            .await
            .expect("request");
        assert_eq!(res.status().as_u16(), 200, "{:?}", res.text().await);
    }
}

#[derive(Debug, Clone)]
struct VolumeCase {
    sku_name: String,
    block: bool,
    list_price: Decimal,
    pricing: Pricing,
}

/// What a SKU's lines bill, the same way for a metered quantity and GB-hours.
fn priced(pricing: &Pricing, list_price: Decimal, q: Decimal) -> Vec<ModelLine> {
    let m = MeterCase {
        event_type: String::new(),
        sku_name: String::new(),
        list_price,
        aggregation: Aggregation::Sum,
        grouped: false,
        pricing: pricing.clone(),
    };
    lines(&m, q)
}

fn generate_volumes(rng: &mut Rng, case: u64) -> Vec<VolumeCase> {
    let prices = [
        Decimal::new(137, 6),
        Decimal::new(1, 2),
        Decimal::new(35, 3),
    ];
    (0..rng.below(3))
        .map(|i| {
            let price = *rng.pick(&prices);
            VolumeCase {
                sku_name: format!("c{case}-v{i}"),
                block: rng.below(2) == 0,
                list_price: price,
                pricing: match rng.below(3) {
                    0 => Pricing::ListPrice,
                    1 => Pricing::PerUnit(price * Decimal::from(3)),
                    _ => Pricing::Allowance(Decimal::from(1 + rng.below(300)), price),
                },
            }
        })
        .collect()
}

async fn setup_volume_sku(app: &TestApp, v: &VolumeCase) -> String {
    let class = if v.block { "BLOCK" } else { "OBJECT" };
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: String!, $c: StorageClass!, $p: String!, $r: String!) { createSku(input: {name: $n, form: VOLUME, storageClass: $c, region: $r, listPricePerHour: $p, currency: \"USD\"}) { sku { id } } }",
            json!({"n": v.sku_name, "c": class, "p": v.list_price.to_string(), "r": v.sku_name}),
        )
        .await;
    r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

fn volume_rate(v: &VolumeCase, sku: &str) -> Option<Value> {
    let mut rate = match &v.pricing {
        Pricing::ListPrice => return None,
        Pricing::PerUnit(p) => json!({"tiersMode": "PER_UNIT", "unitPrice": p.to_string()}),
        Pricing::Allowance(free, p) => json!({"tiersMode": "GRADUATED",
            "tiers": [{"upTo": free.to_string(), "unitPrice": "0"}, {"upTo": null, "unitPrice": p.to_string()}]}),
    };
    rate["sku"] = json!(sku);
    rate["metric"] = json!("ALLOCATED");
    Some(rate)
}

fn instant(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("not a time: {v}")))
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

/// One volume as the model holds it: its SKU, size and since when.
struct Held {
    id: Value,
    sku: usize,
    gb: i64,
    since: DateTime<Utc>,
}

/// Runs a random life of volumes (every one deleted at the end) and returns the GB ×
/// milliseconds each SKU held, as the model counts them.
async fn live_volumes(
    app: &TestApp,
    rng: &mut Rng,
    key: &str,
    vols: &[VolumeCase],
) -> Vec<Decimal> {
    let mut gb_ms = vec![Decimal::ZERO; vols.len()];
    let mut held: Vec<Held> = Vec::new();
    let fields = "volume { id sizeGb createdAt deletedAt }";
    for step in 0..(vols.len() as u64) * (2 + rng.below(5)) {
        app.advance(TimeDelta::milliseconds(
            i64::try_from(1 + rng.below(1_800_000)).unwrap_or(1),
        ));
        let gb = i64::try_from(1 + rng.below(2000)).unwrap_or(1);
        if held.is_empty() || rng.below(3) == 0 {
            let sku = usize::try_from(rng.below(vols.len() as u64)).unwrap_or(0);
            let class = if vols[sku].block { "BLOCK" } else { "OBJECT" };
            let r = app.gql(Some(key), &format!("mutation($n: String!, $g: Int!, $c: StorageClass!, $r: String!) {{ createVolume(input: {{name: $n, sizeGb: $g, storageClass: $c, region: $r}}) {{ {fields} }} }}"),
                json!({"n": format!("v{step}"), "g": gb, "c": class, "r": vols[sku].sku_name})).await;
            let v = &r["data"]["createVolume"]["volume"];
            held.push(Held {
                id: v["id"].clone(),
                sku,
                gb,
                since: instant(&v["createdAt"]),
            });
            continue;
        }
        let i = usize::try_from(rng.below(held.len() as u64)).unwrap_or(0);
        let h = &held[i];
        let refused = (vols[h.sku].block && gb < h.gb) || gb == h.gb;
        let asked = if rng.below(6) == 0 { 0 } else { gb };
        if rng.below(3) == 0 {
            let r = app
                .gql(
                    Some(key),
                    &format!("mutation($i: ID!) {{ deleteVolume(id: $i) {{ {fields} }} }}"),
                    json!({"i": h.id}),
                )
                .await;
            let end = instant(&r["data"]["deleteVolume"]["volume"]["deletedAt"]);
            gb_ms[h.sku] += Decimal::from(h.gb) * Decimal::from((end - h.since).num_milliseconds());
            held.remove(i);
            continue;
        }
        let r = app.gql(Some(key), &format!("mutation($i: ID!, $g: Int!) {{ resizeVolume(id: $i, sizeGb: $g) {{ {fields} }} }}"), json!({"i": h.id, "g": asked})).await;
        if refused || asked == 0 {
            assert!(r["errors"].is_array(), "a refused resize: {r}");
            continue;
        }
        assert_eq!(r["data"]["resizeVolume"]["volume"]["sizeGb"], asked, "{r}");
        let at = app.events_of(key, "volume.resized").await;
        let at = instant(&at.last().expect("resized")["resized_at"]);
        let h = &mut held[i];
        gb_ms[h.sku] += Decimal::from(h.gb) * Decimal::from((at - h.since).num_milliseconds());
        (h.gb, h.since) = (asked, at);
    }
    for h in held {
        app.advance(TimeDelta::minutes(1));
        let r = app
            .gql(
                Some(key),
                &format!("mutation($i: ID!) {{ deleteVolume(id: $i) {{ {fields} }} }}"),
                json!({"i": h.id}),
            )
            .await;
        let end = instant(&r["data"]["deleteVolume"]["volume"]["deletedAt"]);
        gb_ms[h.sku] += Decimal::from(h.gb) * Decimal::from((end - h.since).num_milliseconds());
    }
    gb_ms
}

/// GB × milliseconds as the GB-hours a line bills.
fn gb_hours(gb_ms: Decimal) -> Decimal {
    (gb_ms / Decimal::from(3_600_000)).round_dp(20)
}

/// A model offering as the model holds it: prices per token (input, output, cached when
/// priced apart), the request fee, the token bound and how its output SKU is rated.
#[derive(Debug, Clone)]
struct OfferingCase {
    name: String,
    region: String,
    per_million: [Decimal; 3],
    cached: bool,
    fee: Decimal,
    max_tokens: u64,
    output_pricing: Pricing,
}

/// One `model.request` event: the offering it names (none: an unknown model), tokens
/// (input, output, cached), status.
#[derive(Debug, Clone)]
struct Request {
    offering: Option<usize>,
    tokens: [u64; 3],
    status: &'static str,
}

fn generate_offerings(rng: &mut Rng, case: u64) -> Vec<OfferingCase> {
    let prices = [
        Decimal::new(60, 2),
        Decimal::new(15, 3),
        Decimal::new(24, 1),
    ];
    (0..rng.below(3))
        .map(|i| OfferingCase {
            name: format!("org/model-{case}.{i}"),
            region: format!("mr{case}"),
            per_million: [*rng.pick(&prices), *rng.pick(&prices), *rng.pick(&prices)],
            cached: rng.below(2) == 0,
            fee: *rng.pick(&[Decimal::ZERO, Decimal::new(1, 4)]),
            max_tokens: 1000 + rng.below(5000),
            output_pricing: match rng.below(3) {
                0 => Pricing::ListPrice,
                1 => Pricing::PerUnit(Decimal::new(1, 6)),
                _ => Pricing::Allowance(Decimal::from(rng.below(3000)), Decimal::new(3, 6)),
            },
        })
        .collect()
}

fn generate_requests(rng: &mut Rng, offerings: &[OfferingCase]) -> Vec<Request> {
    let top = offerings.iter().map(|o| o.max_tokens).max().unwrap_or(1000);
    (0..rng.below(25))
        .map(|_| Request {
            offering: (rng.below(5) != 0 && !offerings.is_empty())
                .then(|| usize::try_from(rng.below(offerings.len() as u64)).unwrap_or(0)),
            tokens: [rng.below(top + top / 8), rng.below(top), rng.below(top / 2)],
            status: ["ok", "ok", "incomplete", "error"][usize::try_from(rng.below(4)).unwrap_or(0)],
        })
        .collect()
}

/// Publishes the offering; returns its SKU ids by the unit the catalog names them with.
async fn setup_offering(app: &TestApp, o: &OfferingCase) -> HashMap<String, String> {
    let mut input = json!({"name": o.name, "region": o.region, "currency": "USD",
        "inputPricePerMillion": o.per_million[0].to_string(),
        "outputPricePerMillion": o.per_million[1].to_string(),
        "requestFee": o.fee.to_string(), "maxTokensPerRequest": o.max_tokens});
    if o.cached {
        input["cachedInputPricePerMillion"] = json!(o.per_million[2].to_string());
    }
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: CreateModelOfferingInput!) { createModelOffering(input: $i) { modelOffering { skuIds } } }",
            json!({"i": input}),
        )
        .await;
    let ids: Vec<Value> = r["data"]["createModelOffering"]["modelOffering"]["skuIds"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .clone();
    let catalog = app
        .gql(
            Some(&app.operator_key),
            "{ catalog { skus { id unit } } }",
            json!({}),
        )
        .await;
    catalog["data"]["catalog"]["skus"]
        .as_array()
        .expect("skus")
        .iter()
        .filter(|s| ids.contains(&s["id"]))
        .map(|s| {
            (
                s["unit"].as_str().unwrap_or("").to_owned(),
                s["id"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The model: an offering's lines per SKU id, from the requests that count (those naming
/// it, each token count within its bound).
fn offering_lines(
    o: &OfferingCase,
    index: usize,
    skus: &HashMap<String, String>,
    requests: &[Request],
) -> Vec<(String, Vec<ModelLine>)> {
    let within = |r: &&Request| {
        r.offering == Some(index)
            && r.tokens[0] <= o.max_tokens
            && r.tokens[1] <= o.max_tokens
            && (!o.cached || r.tokens[2] <= o.max_tokens)
    };
    let counted: Vec<&Request> = requests.iter().filter(within).collect();
    let sum = |i: usize| Decimal::from(counted.iter().map(|r| r.tokens[i]).sum::<u64>());
    let served = Decimal::from(counted.iter().filter(|r| r.status != "error").count());
    let per_token = |i: usize| o.per_million[i] / Decimal::from(1_000_000);
    let mut parts = vec![
        (
            "input token",
            priced(&Pricing::ListPrice, per_token(0), sum(0)),
        ),
        (
            "output token",
            priced(&o.output_pricing, per_token(1), sum(1)),
        ),
        ("request", priced(&Pricing::ListPrice, o.fee, served)),
    ];
    if o.cached {
        parts.push((
            "cached input token",
            priced(&Pricing::ListPrice, per_token(2), sum(2)),
        ));
    }
    parts
        .into_iter()
        .map(|(unit, lines)| {
            (
                skus.get(unit)
                    .cloned()
                    .unwrap_or_else(|| panic!("no {unit} SKU: {skus:?}")),
                lines,
            )
        })
        .collect()
}

fn request_event(n: usize, r: &Request, offerings: &[OfferingCase], at: DateTime<Utc>) -> Value {
    let (model, region) = r
        .offering
        .map_or(("unknown/model".to_owned(), "mr0".to_owned()), |i| {
            (offerings[i].name.clone(), offerings[i].region.clone())
        });
    json!({"specversion": "1.0", "id": format!("q{n}"), "source": "gateway", "type": "model.request",
           "time": at.to_rfc3339(),
           "data": {"model": model, "region": region, "api_key": "k", "status": r.status,
                    "input_tokens": r.tokens[0], "output_tokens": r.tokens[1], "cached_tokens": r.tokens[2]}})
}

async fn run_case(app: &TestApp, seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let meters = generate_meters(&mut rng, seed);
    let mut skus = Vec::new();
    for m in &meters {
        skus.push(setup_meter(app, m).await);
    }
    let volumes = generate_volumes(&mut rng, seed);
    let mut volume_skus = Vec::new();
    for v in &volumes {
        volume_skus.push(setup_volume_sku(app, v).await);
    }
    let mut rates: Vec<Value> = meters
        .iter()
        .zip(&skus)
        .filter_map(|(m, s)| rate(&m.pricing, s))
        .collect();
    rates.extend(
        volumes
            .iter()
            .zip(&volume_skus)
            .filter_map(|(v, s)| volume_rate(v, s)),
    );
    let offerings = generate_offerings(&mut rng, seed);
    let mut offering_skus = Vec::new();
    for o in &offerings {
        let skus = setup_offering(app, o).await;
        rates.extend(rate(&o.output_pricing, &skus["output token"]));
        offering_skus.push(skus);
    }
    let (tenant, admin) = app.create_tenant(&format!("case-{seed}")).await;
    if !rates.is_empty() {
        let version = app
            .create_plan_version(json!({"plan": format!("metered-{seed}"), "currency": "USD",
                "effectiveFrom": "2026-01-01T00:00:00Z", "minimumBillableSeconds": 0, "rates": rates}))
            .await;
        app.assign_plan(&tenant, &version).await;
    }
    let held = live_volumes(app, &mut rng, &admin, &volumes).await;
    let start = app.clock.now();
    let events = generate_events(&mut rng, &meters, start);
    app.advance(TimeDelta::hours(2));
    let r = app
        .gql(
            Some(&admin),
            "mutation { createApiKey(role: USAGE_REPORTER) { apiKey } }",
            json!({}),
        )
        .await;
    let reporter = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    send(app, &mut rng, &reporter, &meters, &events).await;
    let requests = generate_requests(&mut rng, &offerings);
    let batch: Vec<Value> = requests
        .iter()
        .enumerate()
        .map(|(n, r)| request_event(n, r, &offerings, start + TimeDelta::minutes(1)))
        .collect();
    for _ in 0..2 {
        // The second time, every event is a duplicate.
        let res = app
            .client
            .post(format!("{}/v1/events", app.url))
            .bearer_auth(&reporter)
            .header("content-type", "application/cloudevents-batch+json")
            .body(Value::Array(batch.clone()).to_string())
            .send()
            .await
            .expect("request");
        assert_eq!(res.status().as_u16(), 200);
    }

    let invoice = app
        .gql(
            Some(&admin),
            "{ upcomingInvoice { total lines { metric skuId quantity unitPrice amount } } }",
            json!({}),
        )
        .await;
    let got_lines = invoice["data"]["upcomingInvoice"]["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("{invoice}"))
        .clone();
    let dec = |v: &Value| {
        v.as_str()
            .unwrap_or("x")
            .parse::<Decimal>()
            .unwrap_or_else(|_| panic!("not a decimal: {v}"))
    };
    let mut got: HashMap<String, Vec<ModelLine>> = HashMap::new();
    for l in got_lines
        .iter()
        .filter(|l| l["metric"] == "METERED" || l["metric"] == "ALLOCATED")
    {
        got.entry(l["skuId"].as_str().unwrap_or("").to_owned())
            .or_default()
            .push((dec(&l["quantity"]), dec(&l["unitPrice"]), dec(&l["amount"])));
    }
    let mut total = Decimal::ZERO;
    for (i, (m, sku)) in meters.iter().zip(&skus).enumerate() {
        let counted: Vec<&Event> = events.iter().filter(|e| e.meter == i && e.valid).collect();
        let mut want = lines(m, quantity(m, &counted));
        total += want.iter().map(|l| l.2).sum::<Decimal>();
        let mut have = got.remove(sku).unwrap_or_default();
        want.sort();
        have.sort();
        assert_eq!(have, want, "seed {seed}: {m:?}\n{invoice}");
    }
    for ((v, gb_ms), sku) in volumes.iter().zip(held).zip(&volume_skus) {
        let mut want = priced(&v.pricing, v.list_price, gb_hours(gb_ms));
        total += want.iter().map(|l| l.2).sum::<Decimal>();
        let mut have = got.remove(sku).unwrap_or_default();
        want.sort();
        have.sort();
        assert_eq!(have, want, "seed {seed}: {v:?}\n{invoice}");
    }
    for (i, o) in offerings.iter().enumerate() {
        for (sku, mut want) in offering_lines(o, i, &offering_skus[i], &requests) {
            total += want.iter().map(|l| l.2).sum::<Decimal>();
            let mut have = got.remove(&sku).unwrap_or_default();
            want.sort();
            have.sort();
            assert_eq!(have, want, "seed {seed}: {o:?} {sku}\n{invoice}");
        }
    }
    assert!(
        got.is_empty(),
        "seed {seed}: lines the model has none of: {got:?}"
    );
    assert_eq!(
        dec(&invoice["data"]["upcomingInvoice"]["total"]),
        total,
        "seed {seed}"
    );
}

async fn metered_invoices_match_an_independent_model(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let cases = if backend == Backend::Sqlite { 24 } else { 12 };
    for seed in 1..=cases {
        run_case(&app, seed).await;
    }
}

on_both_databases!(metered_invoices_match_an_independent_model);
