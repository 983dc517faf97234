//! Recording usage events (the batches of one or more requests), in the caller's
//! transaction: each event is checked on its own, recorded once (its tenant and the key of
//! its source and id, for ever), journaled (what it said, a batch per tenant) and counted
//! by every current meter of its type into minute buckets, all in that transaction, so a
//! committed answer means counted and a failed one means nothing was.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use neocloud_schema::entity::usage_event_key::key_of;
use neocloud_schema::entity::{meter_group, meter_minute, meter_unique, tenant};
use neocloud_schema::ids::{MeterId, TenantId};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};
use serde_json::Value;

use super::cloudevent::{self, CloudEvent, Refusal};
use super::{MAX_GROUPS, Meter, Reading, store};

/// Who reports: a key of one tenant, or of the operator (any tenant, named by `subject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reporter {
    pub tenant: Option<TenantId>,
}

/// What became of one event of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Recorded now; counted by this many meters.
    Accepted {
        meters: usize,
    },
    /// Recorded before (or earlier in this batch); nothing changed.
    Duplicate,
    Invalid(Refusal),
}

/// An event that passed its checks, with its tenant and readings.
struct Admitted {
    index: usize,
    tenant: TenantId,
    key: store::EventKey,
    event: CloudEvent,
    readings: Vec<Reading>,
}

impl Admitted {
    fn journaled(&self) -> Journaled<'_> {
        let e = &self.event;
        Journaled {
            id: &e.id,
            source: &e.source,
            event_type: &e.event_type,
            time: e.time,
            subject: e.subject.as_deref(),
            data: &e.data,
            meters: self.readings.len(),
        }
    }
}

/// What the journal keeps of an event: its attributes as received, and how many meters
/// counted it (serialized as it is borrowed, not copied into a JSON value first).
#[derive(serde::Serialize)]
struct Journaled<'a> {
    id: &'a str,
    source: &'a str,
    #[serde(rename = "type")]
    event_type: &'a str,
    time: DateTime<Utc>,
    subject: Option<&'a str>,
    data: &'a serde_json::Map<String, Value>,
    meters: usize,
}

/// One request's events (as sent: each is checked here) and who reported them.
#[derive(Debug, Clone)]
pub struct Report {
    pub reporter: Reporter,
    pub events: std::sync::Arc<Vec<Value>>,
}

/// Records the events of `reports` together, as if each report came after the ones
/// before it (an event repeated by a later report is its duplicate); one outcome per
/// event, in order, per report.
pub async fn record<C: ConnectionTrait>(
    conn: &C,
    reports: &[Report],
    now: DateTime<Utc>,
) -> Result<Vec<Vec<Outcome>>, DbErr> {
    let items: Vec<(Reporter, &Value)> = reports
        .iter()
        .flat_map(|r| r.events.iter().map(move |e| (r.reporter, e)))
        .collect();
    let mut outcomes = record_items(conn, &items, now).await?.into_iter();
    Ok(reports
        .iter()
        .map(|r| outcomes.by_ref().take(r.events.len()).collect())
        .collect())
}

/// Records `items`, each an event with who reported it; one outcome per item, in order.
async fn record_items<C: ConnectionTrait>(
    conn: &C,
    items: &[(Reporter, &Value)],
    now: DateTime<Utc>,
) -> Result<Vec<Outcome>, DbErr> {
    let mut outcomes: Vec<Option<Outcome>> = vec![None; items.len()];
    let mut checked = Vec::new();
    for (index, (reporter, value)) in items.iter().enumerate() {
        match cloudevent::validate(value, now)
            .and_then(|e| tenant_of(*reporter, &e).map(|t| (e, t)))
        {
            Ok((event, tenant)) => checked.push((index, event, tenant)),
            Err(refusal) => outcomes[index] = Some(Outcome::Invalid(refusal)),
        }
    }
    let known = existing_tenants(conn, checked.iter().map(|c| c.2)).await?;
    let meters = meters_by_type(conn).await?;
    let mut seen: HashSet<store::EventKey> = HashSet::new();
    let mut admitted = Vec::new();
    for (index, event, tenant) in checked {
        let key = (tenant, key_of(&event.source, &event.id));
        let first_period = known.get(&tenant);
        let verdict = if first_period.is_none() {
            Err(Outcome::Invalid(Refusal::new("subject", "no such tenant")))
        } else if first_period.is_some_and(|since| event.time < *since) {
            // Nothing bills usage before the tenant's first period.
            Err(Outcome::Invalid(Refusal::new(
                "time",
                "before the tenant's first billing period",
            )))
        } else if !seen.insert(key) {
            Err(Outcome::Duplicate)
        } else {
            readings(&meters, &event).map_err(Outcome::Invalid)
        };
        match verdict {
            Ok(readings) => admitted.push(Admitted {
                index,
                tenant,
                key,
                event,
                readings,
            }),
            Err(outcome) => outcomes[index] = Some(outcome),
        }
    }
    let (admitted, opened) = bound_groups(conn, admitted, &mut outcomes).await?;
    let fresh = store::insert_keys(conn, admitted.iter().map(|a| a.key).collect()).await?;
    let (fresh, repeated): (Vec<Admitted>, Vec<Admitted>) =
        admitted.into_iter().partition(|a| fresh.contains(&a.key));
    for a in &repeated {
        outcomes[a.index] = Some(Outcome::Duplicate);
    }
    journal(conn, &fresh, now).await?;
    count(conn, &fresh, &opened).await?;
    for a in &fresh {
        outcomes[a.index] = Some(Outcome::Accepted {
            meters: a.readings.len(),
        });
    }
    Ok(outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Outcome::Duplicate))
        .collect())
}

/// The tenant an event is for: a tenant key's own (`subject` absent or naming it), or the
/// tenant an operator key's event names.
fn tenant_of(reporter: Reporter, event: &CloudEvent) -> Result<TenantId, Refusal> {
    let named = event
        .subject
        .as_deref()
        .map(|s| {
            s.parse::<uuid::Uuid>()
                .map(TenantId::from)
                .map_err(|_| Refusal::new("subject", "the id of the tenant the usage is for"))
        })
        .transpose()?;
    match (reporter.tenant, named) {
        (Some(own), None) => Ok(own),
        (Some(own), Some(t)) if t == own => Ok(own),
        (Some(_), Some(_)) => Err(Refusal::new(
            "subject",
            "a tenant's key reports its own tenant's usage only",
        )),
        (None, Some(t)) => Ok(t),
        (None, None) => Err(Refusal::new(
            "subject",
            "an operator's key names the tenant (its id) in `subject`",
        )),
    }
}

/// The tenants among `asked` that exist, with the start of their first billing period.
async fn existing_tenants<C: ConnectionTrait>(
    conn: &C,
    asked: impl Iterator<Item = TenantId>,
) -> Result<HashMap<TenantId, DateTime<Utc>>, DbErr> {
    let asked: HashSet<TenantId> = asked.collect();
    if asked.is_empty() {
        return Ok(HashMap::new());
    }
    let found: Vec<(TenantId, DateTime<Utc>)> = tenant::Entity::find()
        .select_only()
        .column(tenant::Column::Id)
        .column(tenant::Column::CreatedAt)
        .filter(tenant::Column::Id.is_in(asked))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(found
        .into_iter()
        .map(|(id, created)| (id, crate::invoicing::whole_minute(created)))
        .collect())
}

async fn meters_by_type<C: ConnectionTrait>(
    conn: &C,
) -> Result<HashMap<String, Vec<Meter>>, DbErr> {
    let mut by_type: HashMap<String, Vec<Meter>> = HashMap::new();
    for row in store::current(conn).await? {
        let (key, event_type) = (row.key.clone(), row.event_type.clone());
        match Meter::from_row(row) {
            Some(meter) => by_type.entry(event_type).or_default().push(meter),
            None => {
                tracing::error!(meter = %key, "A stored meter's paths do not parse; it counts nothing.")
            }
        }
    }
    Ok(by_type)
}

/// What the event counts for each current meter of its type; the first meter that cannot
/// count it refuses the event.
fn readings(
    meters: &HashMap<String, Vec<Meter>>,
    event: &CloudEvent,
) -> Result<Vec<Reading>, Refusal> {
    meters
        .get(&event.event_type)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|m| m.read(&event.data).transpose())
        .collect()
}

/// The groups a batch opens: (tenant, meter, group key) not counted before.
type NewGroups = HashSet<(TenantId, MeterId, String)>;

/// Refuses, in order, the events that would open a group beyond `MAX_GROUPS` for their
/// tenant and meter; returns the rest, and the groups they open. Reads the batch's own
/// groups, and counts a meter's groups only when the batch brings a new one.
async fn bound_groups<C: ConnectionTrait>(
    conn: &C,
    admitted: Vec<Admitted>,
    outcomes: &mut [Option<Outcome>],
) -> Result<(Vec<Admitted>, NewGroups), DbErr> {
    let wanted: NewGroups = admitted
        .iter()
        .flat_map(|a| {
            a.readings
                .iter()
                .map(|r| (a.tenant, r.meter, r.group_key.clone()))
        })
        .collect();
    if wanted.is_empty() {
        return Ok((admitted, NewGroups::new()));
    }
    let known = store::known_groups(conn, &wanted).await?;
    let new: NewGroups = wanted.difference(&known).cloned().collect();
    if new.is_empty() {
        return Ok((admitted, NewGroups::new()));
    }
    let tenants = new.iter().map(|g| g.0).collect();
    let meters = new.iter().map(|g| g.1).collect();
    let mut counts = store::group_counts(conn, &tenants, &meters).await?;
    let mut opened = NewGroups::new();
    let mut kept = Vec::new();
    for a in admitted {
        let key = |r: &Reading| (a.tenant, r.meter, r.group_key.clone());
        let opens: Vec<&Reading> = a
            .readings
            .iter()
            .filter(|r| new.contains(&key(r)) && !opened.contains(&key(r)))
            .collect();
        if let Some(r) = opens
            .iter()
            .find(|r| counts.get(&(a.tenant, r.meter)).copied().unwrap_or(0) >= MAX_GROUPS)
        {
            outcomes[a.index] = Some(Outcome::Invalid(Refusal::new(
                "data",
                format!(
                    "this meter has counted {MAX_GROUPS} groups for the tenant, the most it may: group {} is one more",
                    r.group_key
                ),
            )));
            continue;
        }
        for r in opens {
            *counts.entry((a.tenant, r.meter)).or_default() += 1;
            opened.insert(key(r));
        }
        kept.push(a);
    }
    Ok((kept, opened))
}

/// Journals what the fresh events said, a batch per tenant.
async fn journal<C: ConnectionTrait>(
    conn: &C,
    fresh: &[Admitted],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut by_tenant: BTreeMap<TenantId, Vec<Journaled<'_>>> = BTreeMap::new();
    for a in fresh {
        by_tenant.entry(a.tenant).or_default().push(a.journaled());
    }
    for (tenant, events) in by_tenant {
        store::journal(conn, tenant, &events, now).await?;
    }
    Ok(())
}

fn minute_of(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::minutes(1)).unwrap_or(t)
}

/// Shards of a minute bucket (`meter_minutes.shard`).
const SHARDS: u8 = 16;

/// The shard a transaction adds into: the process's transactions take the shards in
/// turn, from a random first one, so concurrent ones rarely wait on one another's bucket
/// rows (and other replicas' start elsewhere).
fn next_shard() -> i16 {
    use std::sync::LazyLock;
    use std::sync::atomic::{AtomicU8, Ordering};
    static NEXT: LazyLock<AtomicU8> =
        LazyLock::new(|| AtomicU8::new(uuid::Uuid::new_v4().as_bytes()[0]));
    i16::from(NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS)
}

/// Adds the fresh events' readings into the meters' buckets (one shard, chosen at random
/// for this transaction), distinct values, and the groups not seen before (`new_groups`).
async fn count<C: ConnectionTrait>(
    conn: &C,
    fresh: &[Admitted],
    new_groups: &HashSet<(TenantId, MeterId, String)>,
) -> Result<(), DbErr> {
    let shard = next_shard();
    let mut buckets: BTreeMap<(TenantId, MeterId, DateTime<Utc>, String), meter_minute::Model> =
        BTreeMap::new();
    let mut uniques = HashSet::new();
    let mut groups = HashSet::new();
    for a in fresh {
        let minute = minute_of(a.event.time);
        for r in &a.readings {
            let group = (a.tenant, r.meter, r.group_key.clone());
            if new_groups.contains(&group) {
                groups.insert(group);
            }
            if let Some(value) = &r.distinct {
                uniques.insert((
                    a.tenant,
                    r.meter,
                    minute,
                    r.group_key.clone(),
                    value.clone(),
                ));
            }
            let one = bucket_of(a.tenant, r, (minute, shard), a.event.time);
            let key = (a.tenant, r.meter, minute, r.group_key.clone());
            let merged = match buckets.remove(&key) {
                Some(b) => merge(&b, &one)
                    .ok_or_else(|| DbErr::Custom("a meter's total overflows".into()))?,
                None => one,
            };
            buckets.insert(key, merged);
        }
    }
    store::insert_missing(
        conn,
        &groups
            .into_iter()
            .map(|(tenant_id, meter_id, group_key)| meter_group::Model {
                tenant_id,
                meter_id,
                group_key,
            })
            .collect::<Vec<_>>(),
    )
    .await?;
    store::insert_missing(
        conn,
        &uniques
            .into_iter()
            .map(
                |(tenant_id, meter_id, minute_start, group_key, value)| meter_unique::Model {
                    tenant_id,
                    meter_id,
                    minute_start,
                    group_key,
                    value,
                },
            )
            .collect::<Vec<_>>(),
    )
    .await?;
    store::add_buckets(conn, buckets.into_values().collect(), merge).await
}

fn bucket_of(
    tenant: TenantId,
    r: &Reading,
    (minute, shard): (DateTime<Utc>, i16),
    at: DateTime<Utc>,
) -> meter_minute::Model {
    meter_minute::Model {
        tenant_id: tenant,
        meter_id: r.meter,
        minute_start: minute,
        group_key: r.group_key.clone(),
        shard,
        sum: r.value.into(),
        count: 1,
        max: r.value.into(),
        latest_at: at,
        latest: r.value.into(),
    }
}

/// Two buckets of one key as one: sums and counts add, the larger maximum stays, and the
/// latest value is the one with the later time (the larger value at equal times), so the
/// order events arrive in changes nothing. `None` when a sum overflows.
pub fn merge(a: &meter_minute::Model, b: &meter_minute::Model) -> Option<meter_minute::Model> {
    let (latest_at, latest) = (a.latest_at, a.latest.get()).max((b.latest_at, b.latest.get()));
    Some(meter_minute::Model {
        sum: a.sum.get().checked_add(b.sum.get())?.into(),
        count: a.count.checked_add(b.count)?,
        max: a.max.get().max(b.max.get()).into(),
        latest_at,
        latest: latest.into(),
        ..a.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::Decimal;

    fn bucket(at: &str, value: i64) -> meter_minute::Model {
        let at: DateTime<Utc> = at.parse().unwrap();
        meter_minute::Model {
            tenant_id: TenantId::from(uuid::Uuid::nil()),
            meter_id: MeterId::from(uuid::Uuid::nil()),
            minute_start: minute_of(at),
            group_key: "[]".into(),
            shard: 0,
            sum: Decimal::from(value).into(),
            count: 1,
            max: Decimal::from(value).into(),
            latest_at: at,
            latest: Decimal::from(value).into(),
        }
    }

    #[test]
    fn merging_buckets_does_not_depend_on_their_order() {
        let a = bucket("2026-12-03T10:00:10Z", 5);
        let b = bucket("2026-12-03T10:00:40Z", 2);
        let c = bucket("2026-12-03T10:00:40Z", 3);
        let one = merge(&merge(&a, &b).unwrap(), &c).unwrap();
        let other = merge(&merge(&c, &a).unwrap(), &b).unwrap();
        assert_eq!(one, other);
        assert_eq!(
            (one.sum.get(), one.count, one.max.get()),
            (Decimal::from(10), 3, Decimal::from(5))
        );
        // The latest time wins; at equal times the larger value.
        assert_eq!(one.latest.get(), Decimal::from(3));
    }

    #[test]
    fn a_sum_that_overflows_is_refused() {
        let mut a = bucket("2026-12-03T10:00:10Z", 1);
        a.sum = Decimal::MAX.into();
        assert!(merge(&a, &bucket("2026-12-03T10:00:11Z", 1)).is_none());
    }
}
