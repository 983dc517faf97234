//! Meters and usage events at the api's edge: who may define meters (operators), read
//! them (every user: customers re-derive their charges from them, as from plans) and read
//! a tenant's metered usage (its own users; operators, any tenant), who may report events
//! (usage reporter keys and operators), the audit of each new meter version, and the
//! transaction a batch of events is recorded in. The rules and tables are
//! `neocloud_metering::meters`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use neocloud_metering::group_commit::{Bound, GroupCommit};
use neocloud_metering::meters::quantity::{self, MeterQuantity};
use neocloud_metering::meters::record::{self, Outcome, Report, Reporter};
use neocloud_metering::meters::{self, NewMeter, store};
use neocloud_schema::clock::SharedClock;
use neocloud_schema::entity::meter;
use neocloud_schema::ids::TenantId;
use sea_orm::{DatabaseConnection, DbErr};
use serde_json::{Value, json};

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// Longest span a metered-usage query covers.
pub const MAX_RANGE_DAYS: i64 = 93;

/// `createMeter` (operator): the next version of the meter under the key.
pub async fn create(
    db: &DatabaseConnection,
    actor: &Principal,
    new: &NewMeter,
    now: DateTime<Utc>,
) -> ApiResult<meter::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let created = meters::create(&txn, new, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "meter.create",
            object_type: "meter",
            object_id: created.id.to_string(),
            before: None,
            after: Some(describe(&created)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(created)
}

fn describe(m: &meter::Model) -> Value {
    json!({
        "key": m.key,
        "version": m.version,
        "event_type": m.event_type,
        "value_path": m.value_path,
        "aggregation": m.aggregation,
        "group_by": m.group_by,
        "filter": m.filter,
        "max_value": m.max_value.to_string(),
        "sku": m.sku_id,
    })
}

/// `meters`: every version of every meter, by key and version.
pub async fn list(db: &DatabaseConnection, actor: &Principal) -> ApiResult<Vec<meter::Model>> {
    actor.require_user()?;
    Ok(store::all_versions(db).await?)
}

/// `meterUsage`: what the meters counted for the tenant in `[from, to)`, per meter version
/// and group.
pub async fn usage(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
) -> ApiResult<Vec<MeterQuantity>> {
    let tenant = actor.acting_tenant(tenant)?;
    if to <= from {
        return Err(ApiError::invalid("to", "must be after from"));
    }
    if (to - from).num_days() > MAX_RANGE_DAYS {
        return Err(ApiError::invalid(
            "to",
            format!("a query spans at most {MAX_RANGE_DAYS} days"),
        ));
    }
    Ok(quantity::by_group(db, tenant, from, to).await?)
}

/// Usage events recorded by group commit: the reports queued together are recorded in
/// one transaction, each answered on its own.
pub type EventWriter = GroupCommit<Report, Result<Vec<Outcome>, DbErr>>;

/// Writer tasks recording usage events, and the most events one records in a transaction.
const EVENT_WRITERS: usize = 4;
const EVENT_GROUP: usize = 2000;

/// Starts the tasks that record usage events, judging their times by `clock`.
pub fn spawn_writer(db: DatabaseConnection, clock: SharedClock) -> EventWriter {
    let bound = Bound {
        max_weight: EVENT_GROUP,
        weight: |r: &Report| r.events.len(),
    };
    GroupCommit::spawn(EVENT_WRITERS, bound, move |reports: Vec<Report>| {
        let (db, clock) = (db.clone(), clock.clone());
        async move {
            let now = clock.now();
            let attempt = |some: Vec<Report>| {
                let db = db.clone();
                async move { record_once(&db, &some, now).await }
            };
            record_group(&reports, attempt).await
        }
    })
}

/// `POST /v1/events`: records a batch (with the others queued beside it); one outcome per
/// event.
pub async fn report(
    writer: &EventWriter,
    actor: &Principal,
    events: Arc<Vec<Value>>,
) -> ApiResult<Vec<Outcome>> {
    let reporter = Reporter {
        tenant: actor.usage_reporter()?,
    };
    let stopped = || DbErr::Custom("the usage event writer stopped".into());
    Ok(writer
        .submit(Report { reporter, events })
        .await
        .unwrap_or_else(|| Err(stopped()))?)
}

/// Records `reports` in one transaction by `attempt`. If it fails, each report is
/// recorded on its own (retried once when the database gives up on it, e.g. a deadlock
/// between two batches of one tenant), so one report cannot fail another.
async fn record_group<F, Fut>(reports: &[Report], attempt: F) -> Vec<Result<Vec<Outcome>, DbErr>>
where
    F: Fn(Vec<Report>) -> Fut,
    Fut: Future<Output = Result<Vec<Vec<Outcome>>, DbErr>>,
{
    match attempt(reports.to_vec()).await {
        Ok(outcomes) => return outcomes.into_iter().map(Ok).collect(),
        Err(err) => {
            tracing::warn!(error = %err, reports = reports.len(), "Recording usage events failed; retrying each report alone.")
        }
    }
    let mut answers = Vec::with_capacity(reports.len());
    for report in reports {
        let mut outcome = attempt(vec![report.clone()]).await;
        if outcome.is_err() && reports.len() > 1 {
            outcome = attempt(vec![report.clone()]).await;
        }
        answers.push(outcome.map(|mut o| o.pop().unwrap_or_default()));
    }
    answers
}

async fn record_once(
    db: &DatabaseConnection,
    reports: &[Report],
    now: DateTime<Utc>,
) -> Result<Vec<Vec<Outcome>>, DbErr> {
    let txn = crate::db::begin_write(db).await?;
    let outcomes = record::record(&txn, reports, now).await?;
    txn.commit().await?;
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    fn report(events: usize) -> Report {
        Report {
            reporter: Reporter { tenant: None },
            events: Arc::new(vec![Value::Null; events]),
        }
    }

    /// A database stand-in: a transaction of several reports fails, a report of 3 events
    /// always fails, one of 2 events fails the first time only; otherwise each event is
    /// accepted. Every attempt's report sizes are logged.
    struct Flaky {
        attempts: RefCell<Vec<Vec<usize>>>,
    }

    impl Flaky {
        fn attempt(&self, reports: &[Report]) -> Result<Vec<Vec<Outcome>>, DbErr> {
            let sizes: Vec<usize> = reports.iter().map(|r| r.events.len()).collect();
            let mut attempts = self.attempts.borrow_mut();
            let tried_before = attempts.contains(&sizes);
            attempts.push(sizes.clone());
            let fails = sizes.len() > 1 || sizes == [3] || (sizes == [2] && !tried_before);
            if fails {
                return Err(DbErr::Custom("deadlock detected".into()));
            }
            Ok(sizes
                .iter()
                .map(|&n| vec![Outcome::Accepted { meters: 1 }; n])
                .collect())
        }
    }

    #[tokio::test]
    async fn a_failed_group_records_each_report_alone_and_retries_once() {
        let db = Flaky {
            attempts: RefCell::default(),
        };
        let reports = [report(1), report(2), report(3)];
        let answers = record_group(&reports, |r| std::future::ready(db.attempt(&r))).await;

        assert_eq!(answers.len(), 3);
        assert_eq!(answers[0].as_ref().unwrap().len(), 1);
        assert_eq!(
            answers[1].as_ref().unwrap().len(),
            2,
            "retried after one failure"
        );
        assert!(
            answers[2].is_err(),
            "the failing report is answered with its error"
        );
        let attempts = db.attempts.into_inner();
        assert_eq!(
            attempts,
            [vec![1, 2, 3], vec![1], vec![2], vec![2], vec![3], vec![3]]
        );
    }

    #[tokio::test]
    async fn a_lone_report_that_fails_is_tried_twice_at_most() {
        let db = Flaky {
            attempts: RefCell::default(),
        };
        let answers = record_group(&[report(3)], |r| std::future::ready(db.attempt(&r))).await;
        assert!(answers[0].is_err());
        assert_eq!(db.attempts.into_inner(), [vec![3], vec![3]]);
    }

    #[tokio::test]
    async fn a_group_that_succeeds_is_attempted_once() {
        let db = Flaky {
            attempts: RefCell::default(),
        };
        let answers = record_group(&[report(1)], |r| std::future::ready(db.attempt(&r))).await;
        assert_eq!(answers[0].as_ref().unwrap().len(), 1);
        assert_eq!(db.attempts.into_inner(), [vec![1]]);
    }
}
