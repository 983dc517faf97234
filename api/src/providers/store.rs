//! SQL for providers (the only writer of `providers`) and what a provider may read of
//! the fleet: its own nodes, their GPUs and the allocations running on them. Every read
//! of a provider's fleet filters by the provider.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{
    allocation, allocation_gpu, gpu, gpu_event, node, node_reliability, provider,
    provider_agreement,
};
use neocloud_schema::ids::{AllocationId, NodeId, ProviderId};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set, sea_query::Expr,
};
use uuid::Uuid;

use super::terms::Terms;

/// A provider to insert, checked.
#[derive(Debug, Clone)]
pub struct NewProvider {
    pub name: String,
    pub legal_name: String,
    pub country: String,
    pub currency: String,
    pub payout_method: &'static str,
    pub payout_account: Option<String>,
}

pub(crate) async fn insert<C: ConnectionTrait>(
    conn: &C,
    new: NewProvider,
    now: DateTime<Utc>,
) -> Result<provider::Model, DbErr> {
    provider::ActiveModel {
        id: Set(ProviderId::new()),
        name: Set(new.name),
        created_at: Set(now),
        legal_name: Set(new.legal_name),
        country: Set(new.country),
        currency: Set(new.currency),
        payout_method: Set(new.payout_method.to_owned()),
        payout_account: Set(new.payout_account),
        statement_held: Set(None),
        second_factor_required: Set(false),
    }
    .insert(conn)
    .await
}

/// Records why the provider's next statement is held (`None`: nothing holds it).
pub(crate) async fn set_statement_held<C: ConnectionTrait>(
    conn: &C,
    provider: ProviderId,
    held: Option<String>,
) -> Result<(), DbErr> {
    provider::Entity::update_many()
        .col_expr(provider::Column::StatementHeld, Expr::value(held))
        .filter(provider::Column::Id.eq(provider))
        .exec(conn)
        .await
        .map(drop)
}

pub(crate) async fn set_second_factor_required<C: ConnectionTrait>(
    conn: &C,
    provider: &provider::Model,
    required: bool,
) -> Result<provider::Model, DbErr> {
    let mut active: provider::ActiveModel = provider.clone().into();
    active.second_factor_required = Set(required);
    active.update(conn).await
}

/// Replaces the provider's legal and payout details (its name stays).
pub(crate) async fn update_details<C: ConnectionTrait>(
    conn: &C,
    found: provider::Model,
    new: NewProvider,
) -> Result<provider::Model, DbErr> {
    let mut active: provider::ActiveModel = found.into();
    active.legal_name = Set(new.legal_name);
    active.country = Set(new.country);
    active.currency = Set(new.currency);
    active.payout_method = Set(new.payout_method.to_owned());
    active.payout_account = Set(new.payout_account);
    active.update(conn).await
}

/// The provider named `name`, created on first use with only its name (as node
/// registration names them); its id.
pub(crate) async fn id_by_name<C: ConnectionTrait>(
    conn: &C,
    name: &str,
    default_currency: &str,
) -> Result<ProviderId, DbErr> {
    if let Some(found) = find_by_name(conn, name).await? {
        return Ok(found.id);
    }
    let new = NewProvider {
        name: name.to_owned(),
        legal_name: name.to_owned(),
        country: String::new(),
        currency: default_currency.to_owned(),
        payout_method: "manual",
        payout_account: None,
    };
    Ok(insert(conn, new, Utc::now()).await?.id)
}

pub(crate) async fn find_by_name<C: ConnectionTrait>(
    conn: &C,
    name: &str,
) -> Result<Option<provider::Model>, DbErr> {
    provider::Entity::find()
        .filter(provider::Column::Name.eq(name))
        .one(conn)
        .await
}

pub(crate) async fn find<C: ConnectionTrait>(
    conn: &C,
    id: ProviderId,
) -> Result<Option<provider::Model>, DbErr> {
    provider::Entity::find_by_id(id).one(conn).await
}

pub(crate) async fn list<C: ConnectionTrait>(conn: &C) -> Result<Vec<provider::Model>, DbErr> {
    provider::Entity::find()
        .order_by_asc(provider::Column::Name)
        .all(conn)
        .await
}

/// A provider's node as the provider sees it.
#[derive(Debug, Clone)]
pub struct OwnNode {
    pub node: node::Model,
    pub gpus: Vec<gpu::Model>,
    /// Which GPU each allocation running on it holds.
    pub held: Vec<allocation_gpu::Model>,
    /// XID and ECC events of the last `EVENT_DAYS` days, newest first, at most
    /// `EVENTS_PER_NODE`.
    pub events: Vec<gpu_event::Model>,
    pub reliability: Option<node_reliability::Model>,
}

impl OwnNode {
    fn default_for(node: node::Model) -> OwnNode {
        OwnNode {
            node,
            gpus: Vec::new(),
            held: Vec::new(),
            events: Vec::new(),
            reliability: None,
        }
    }
}

/// How far back a provider sees its nodes' health events.
pub const EVENT_DAYS: i64 = 30;
/// The most events shown per node.
pub const EVENTS_PER_NODE: usize = 20;
/// The most events read for all of a provider's nodes at once.
const EVENTS_READ: u64 = 5_000;

/// The provider's nodes, by hostname, with their GPUs and what runs on them.
pub(crate) async fn nodes_of<C: ConnectionTrait>(
    conn: &C,
    provider: ProviderId,
) -> Result<Vec<OwnNode>, DbErr> {
    let nodes = node::Entity::find()
        .filter(node::Column::ProviderId.eq(provider))
        .order_by_asc(node::Column::Hostname)
        .all(conn)
        .await?;
    let ids: Vec<NodeId> = nodes.iter().map(|n| n.id).collect();
    let gpus = gpu::Entity::find()
        .filter(gpu::Column::NodeId.is_in(ids.clone()))
        .order_by_asc(gpu::Column::Index)
        .all(conn)
        .await?;
    let running = allocation::Entity::find()
        .filter(allocation::Column::NodeId.is_in(ids))
        .filter(allocation::Column::EndedAt.is_null())
        .all(conn)
        .await?;
    let held = allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::AllocationId.is_in(running.iter().map(|a| a.id)))
        .all(conn)
        .await?;
    let events = gpu_event::Entity::find()
        .filter(gpu_event::Column::NodeId.is_in(nodes.iter().map(|n| n.id)))
        .filter(gpu_event::Column::At.gte(Utc::now() - chrono::TimeDelta::days(EVENT_DAYS)))
        .order_by_desc(gpu_event::Column::At)
        .limit(EVENTS_READ)
        .all(conn)
        .await?;
    let mut reliability =
        crate::fleet::reliability::of_nodes(conn, nodes.iter().map(|n| n.id)).await?;
    // Which node each running allocation is on: what a held GPU is grouped by.
    let node_of: HashMap<AllocationId, NodeId> =
        running.iter().map(|a| (a.id, a.node_id)).collect();
    let mut own: HashMap<NodeId, OwnNode> = HashMap::new();
    for node in &nodes {
        let mut entry = OwnNode::default_for(node.clone());
        entry.reliability = reliability.remove(&node.id);
        own.insert(node.id, entry);
    }
    for g in gpus {
        if let Some(n) = own.get_mut(&g.node_id) {
            n.gpus.push(g);
        }
    }
    for h in held {
        if let Some(n) = node_of.get(&h.allocation_id).and_then(|id| own.get_mut(id)) {
            n.held.push(h);
        }
    }
    for e in events {
        if let Some(n) = own
            .get_mut(&e.node_id)
            .filter(|n| n.events.len() < EVENTS_PER_NODE)
        {
            n.events.push(e);
        }
    }
    // By hostname, as the nodes were read.
    Ok(nodes
        .iter()
        .filter_map(|node| own.remove(&node.id))
        .collect())
}

/// The provider's agreements, oldest version first.
pub(crate) async fn agreements<C: ConnectionTrait>(
    conn: &C,
    provider: ProviderId,
) -> Result<Vec<provider_agreement::Model>, DbErr> {
    provider_agreement::Entity::find()
        .filter(provider_agreement::Column::ProviderId.eq(provider))
        .order_by_asc(provider_agreement::Column::Version)
        .all(conn)
        .await
}

/// Writes the provider's next version of its agreement.
pub(crate) async fn insert_agreement<C: ConnectionTrait>(
    conn: &C,
    provider: &provider::Model,
    version: i32,
    terms: &Terms,
    created_by: Uuid,
    now: DateTime<Utc>,
) -> Result<provider_agreement::Model, DbErr> {
    provider_agreement::ActiveModel {
        id: Set(Uuid::now_v7()),
        provider_id: Set(provider.id),
        version: Set(version),
        effective_from: Set(terms.effective_from),
        currency: Set(provider.currency.clone()),
        model: Set(terms.model.as_str().to_owned()),
        revenue_share_percent: Set(terms.revenue_share_percent.map(Into::into)),
        fixed_rates: Set(serde_json::to_value(&terms.fixed_rates).unwrap_or_default()),
        platform_fee_percent: Set(terms.platform_fee_percent.into()),
        sla_credits_borne_by: Set(terms.sla_credits_borne_by.as_str().to_owned()),
        payout_schedule: Set("monthly".to_owned()),
        payout_minimum: Set(terms.payout_minimum.into()),
        hold_until_paid: Set(terms.hold_until_paid),
        credit_notes_shared: Set(terms.credit_notes_shared),
        created_at: Set(now),
        created_by: Set(Some(created_by)),
    }
    .insert(conn)
    .await
}
