//! Meters: `meters` (every user), `meterUsage` (a tenant's own; operators name one),
//! `createMeter` (operator). Usage events arrive at `POST /v1/events`.

use std::collections::HashMap;

use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_metering::meters::quantity::MeterQuantity;
use neocloud_metering::meters::{Condition, NewMeter};
use neocloud_schema::entity::{meter, sku};
use uuid::Uuid;

use super::scalars::{parse_id, tenant_arg, to_id};
use crate::meters;

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::MeterAggregation",
    name = "MeterAggregation"
)]
pub enum GqlMeterAggregation {
    /// The sum of the values.
    Sum,
    /// How many events there were (no value path).
    Count,
    /// The largest value.
    Max,
    /// How many distinct values there were.
    UniqueCount,
    /// The value of the latest event by its time (the larger at equal times).
    Latest,
}

#[derive(InputObject)]
pub struct CreateMeterInput {
    /// The meter's key (a slug); an existing key gets its next version.
    pub key: String,
    /// The CloudEvents `type` it counts.
    pub event_type: String,
    /// A dotted path into the event's `data` (`tokens.input`); none for COUNT.
    pub value_path: Option<String>,
    pub aggregation: GqlMeterAggregation,
    /// Up to four dotted paths into `data` whose values group the usage.
    #[graphql(default)]
    pub group_by: Vec<String>,
    /// Up to four conditions, all of which an event must meet to be counted (others of
    /// the type are left to other meters, not refused).
    #[graphql(default)]
    pub filter: Vec<MeterCondition>,
    /// The most one event may carry (exact decimal; default 1000000000000); an event
    /// above it is refused.
    pub max_value: Option<String>,
    /// The METERED SKU its quantity is billed as.
    pub sku_id: ID,
    pub description: Option<String>,
}

/// The meter counts an event only if its value at `path` (as text) is one of `values`.
#[derive(InputObject, SimpleObject, Clone)]
#[graphql(input_name = "MeterConditionInput")]
pub struct MeterCondition {
    /// A dotted path into the event's `data`.
    pub path: String,
    /// 1 to 16 values, each at most 128 bytes.
    pub values: Vec<String>,
}

#[derive(SimpleObject)]
pub struct Meter {
    pub id: ID,
    pub key: String,
    pub version: i32,
    pub event_type: String,
    pub value_path: Option<String>,
    pub aggregation: GqlMeterAggregation,
    pub group_by: Vec<String>,
    /// What an event must meet to be counted (empty: every event of the type).
    pub filter: Vec<MeterCondition>,
    pub max_value: String,
    pub sku_id: ID,
    /// The unit of its SKU: what its quantities count.
    pub unit: String,
    pub description: String,
    pub created_at: DateTime<Utc>,
}

fn meter_of(m: meter::Model, units: &HashMap<Uuid, String>) -> Meter {
    Meter {
        id: to_id(m.id),
        unit: units.get(&m.sku_id.into()).cloned().unwrap_or_default(),
        group_by: serde_json::from_value(m.group_by).unwrap_or_default(),
        filter: m
            .filter
            .and_then(|f| serde_json::from_value::<Vec<Condition>>(f).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|c| MeterCondition {
                path: c.path,
                values: c.values,
            })
            .collect(),
        key: m.key,
        version: m.version,
        event_type: m.event_type,
        value_path: m.value_path,
        aggregation: m.aggregation.into(),
        max_value: m.max_value.normalize().to_string(),
        sku_id: to_id(m.sku_id),
        description: m.description,
        created_at: m.created_at,
    }
}

/// The units of the SKUs `meters` rate as, in one read.
async fn units_of(ctx: &Context<'_>, meters: &[&meter::Model]) -> Result<HashMap<Uuid, String>> {
    let ids: Vec<Uuid> = meters.iter().map(|m| m.sku_id.into()).collect();
    let skus: Vec<sku::Model> = crate::catalog::store::find_many(super::db(ctx)?, &ids)
        .await
        .map_err(crate::error::ApiError::from)?;
    Ok(skus.into_iter().map(|s| (s.id.into(), s.unit())).collect())
}

#[derive(SimpleObject)]
pub struct MeterUsage {
    pub meter_id: ID,
    pub meter_key: String,
    pub meter_version: i32,
    /// The group's values, in the meter's `groupBy` order (empty: not in the event).
    pub group: Vec<String>,
    /// The quantity, aggregated as the meter says (exact decimal), in `unit`.
    pub quantity: String,
    pub unit: String,
    /// How many events it counted.
    pub events: i64,
}

#[derive(Default)]
pub struct MeterQuery;

#[Object]
impl MeterQuery {
    /// Every version of every meter (published to every user).
    async fn meters(&self, ctx: &Context<'_>) -> Result<Vec<Meter>> {
        let rows = meters::list(super::db(ctx)?, super::principal(ctx)?).await?;
        let units = units_of(ctx, &rows.iter().collect::<Vec<_>>()).await?;
        Ok(rows.into_iter().map(|m| meter_of(m, &units)).collect())
    }

    /// What the meters counted for the tenant in `[from, to)` (by event time), per meter
    /// version and group.
    async fn meter_usage(
        &self,
        ctx: &Context<'_>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        tenant_id: Option<ID>,
    ) -> Result<Vec<MeterUsage>> {
        let rows: Vec<MeterQuantity> = meters::usage(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            (from, to),
        )
        .await?;
        let units = units_of(ctx, &rows.iter().map(|r| &r.meter).collect::<Vec<_>>()).await?;
        Ok(rows
            .into_iter()
            .map(|r| MeterUsage {
                meter_id: to_id(r.meter.id),
                unit: units
                    .get(&r.meter.sku_id.into())
                    .cloned()
                    .unwrap_or_default(),
                meter_key: r.meter.key,
                meter_version: r.meter.version,
                group: r.group,
                quantity: r.quantity.normalize().to_string(),
                events: r.events,
            })
            .collect())
    }
}

#[derive(SimpleObject)]
pub struct CreateMeterPayload {
    pub meter: Meter,
}

#[derive(Default)]
pub struct MeterMutation;

#[Object]
impl MeterMutation {
    /// A new meter, or the next version of the meter under the key (operator). Events
    /// are counted by the version current when they arrive.
    async fn create_meter(
        &self,
        ctx: &Context<'_>,
        input: CreateMeterInput,
    ) -> Result<CreateMeterPayload> {
        let new = NewMeter {
            sku: parse_id("skuId", &input.sku_id)?,
            key: input.key,
            event_type: input.event_type,
            value_path: input.value_path,
            aggregation: input.aggregation.into(),
            group_by: input.group_by,
            filter: input
                .filter
                .into_iter()
                .map(|c| Condition {
                    path: c.path,
                    values: c.values,
                })
                .collect(),
            max_value: input.max_value,
            description: input.description,
        };
        let created = meters::create(
            super::db(ctx)?,
            super::principal(ctx)?,
            &new,
            super::now(ctx)?,
        )
        .await?;
        let units = units_of(ctx, &[&created]).await?;
        Ok(CreateMeterPayload {
            meter: meter_of(created, &units),
        })
    }
}
