//! Storage volumes: `volumes` / `volume` (a tenant's own; operators any), `createVolume`,
//! `resizeVolume`, `deleteVolume` (tenant admins and members), `markVolumeReady` /
//! `markVolumeFailed` (operator: what the storage reports).

use async_graphql::connection::Connection;
use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};

use super::access::GqlAccessState;
use super::ordering::{Label, label_map, labels_of};
use super::scalars::{GqlStorageClass, connection, parse_id, tenant_arg, to_id};
use crate::pagination::Page;
use crate::volumes::{self, NewVolume, VolumeView};

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::VolumeStatus",
    name = "VolumeStatus"
)]
pub enum GqlVolumeStatus {
    /// Held and billed.
    Active,
    /// Gone; billing stopped at `deletedAt`.
    Deleted,
}

pub struct Volume(VolumeView);

#[Object]
impl Volume {
    async fn id(&self) -> ID {
        to_id(self.0.volume.id)
    }

    async fn tenant_id(&self) -> ID {
        to_id(self.0.volume.tenant_id)
    }

    async fn name(&self) -> &str {
        &self.0.volume.name
    }

    async fn storage_class(&self) -> GqlStorageClass {
        self.0.storage_class.into()
    }

    async fn region(&self) -> &str {
        &self.0.volume.region
    }

    /// The size now, in GB; billed per GB-hour held.
    async fn size_gb(&self) -> i64 {
        self.0.volume.size_gb
    }

    /// The VOLUME SKU it is billed as.
    async fn sku_id(&self) -> ID {
        to_id(self.0.volume.sku_id)
    }

    async fn sku_name(&self) -> &str {
        &self.0.sku_name
    }

    async fn status(&self) -> GqlVolumeStatus {
        self.0.volume.status.into()
    }

    /// Whether the operator's storage has created it: PENDING, READY, or FAILED (deleted,
    /// and none of it billed).
    async fn state(&self) -> GqlAccessState {
        self.0.volume.access_state.into()
    }

    /// Why the storage could not create it.
    async fn failure(&self) -> Option<&str> {
        self.0.volume.access_reason.as_deref()
    }

    async fn labels(&self) -> Vec<Label> {
        labels_of(&self.0.volume.labels)
    }

    /// Billing started here.
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.volume.created_at
    }

    /// Billing stopped here.
    async fn deleted_at(&self) -> Option<DateTime<Utc>> {
        self.0.volume.deleted_at
    }

    /// GB-hours it held in `[from, to)` up to now (each size × the time at it, to the
    /// millisecond), as its invoice lines bill them; at most 93 days.
    async fn gb_hours(
        &self,
        ctx: &Context<'_>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<String> {
        let (db, actor, now) = (super::db(ctx)?, super::principal(ctx)?, super::now(ctx)?);
        let hours = volumes::gb_hours(db, actor, &self.0.volume, (from, to), now).await?;
        Ok(hours.to_string())
    }
}

#[derive(InputObject)]
pub struct CreateVolumeInput {
    /// The tenant's name for it (a slug), unique among its live volumes.
    pub name: String,
    /// 1 to 65536 GB for BLOCK, 1 to 1048576 for OBJECT.
    pub size_gb: i64,
    pub storage_class: GqlStorageClass,
    /// Where: a region with a VOLUME SKU of the class (see `catalog`).
    pub region: String,
    #[graphql(default)]
    pub labels: Vec<Label>,
    /// Operators: the tenant it is for.
    pub tenant_id: Option<ID>,
}

#[derive(SimpleObject)]
pub struct VolumePayload {
    pub volume: Volume,
}

#[derive(Default)]
pub struct VolumeQuery;

#[Object]
impl VolumeQuery {
    /// The caller's volumes, oldest first (operators: every tenant's, or `tenantId`'s);
    /// deleted ones with `includeDeleted`.
    #[graphql(complexity = "first.unwrap_or(20).max(0) as usize * child_complexity")]
    async fn volumes(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        #[graphql(default)] include_deleted: bool,
        tenant_id: Option<ID>,
    ) -> Result<Connection<String, Volume>> {
        let page = Page::from_args(first, after.as_deref(), super::page_limit(ctx))?;
        let result = volumes::list(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            include_deleted,
            page,
        )
        .await?;
        Ok(connection(result, |v| v.volume.id.into(), Volume))
    }

    async fn volume(&self, ctx: &Context<'_>, id: ID) -> Result<Volume> {
        let id = parse_id("id", &id)?;
        let view = volumes::get(super::db(ctx)?, super::principal(ctx)?, id).await?;
        Ok(Volume(view))
    }
}

#[derive(Default)]
pub struct VolumeMutation;

#[Object]
impl VolumeMutation {
    /// A new volume, billed per GB-hour from now, within the storage quotas; refused
    /// while a hard-capped budget is spent.
    async fn create_volume(
        &self,
        ctx: &Context<'_>,
        input: CreateVolumeInput,
    ) -> Result<VolumePayload> {
        let new = NewVolume {
            tenant: tenant_arg(input.tenant_id)?,
            name: input.name,
            size_gb: input.size_gb,
            storage_class: input.storage_class.into(),
            region: input.region,
            labels: label_map(input.labels)?,
        };
        let view = volumes::create(
            super::db(ctx)?,
            super::principal(ctx)?,
            new,
            super::now(ctx)?,
        )
        .await?;
        Ok(VolumePayload {
            volume: Volume(view),
        })
    }

    /// The volume at `sizeGb` from now (a BLOCK volume only grows).
    async fn resize_volume(
        &self,
        ctx: &Context<'_>,
        id: ID,
        size_gb: i64,
    ) -> Result<VolumePayload> {
        let id = parse_id("id", &id)?;
        let (db, actor, now) = (super::db(ctx)?, super::principal(ctx)?, super::now(ctx)?);
        let view = volumes::resize(db, actor, id, size_gb, now).await?;
        Ok(VolumePayload {
            volume: Volume(view),
        })
    }

    /// Deletes the volume: billing stops now and the storage is told to delete its data.
    async fn delete_volume(&self, ctx: &Context<'_>, id: ID) -> Result<VolumePayload> {
        let id = parse_id("id", &id)?;
        let (db, actor, now) = (super::db(ctx)?, super::principal(ctx)?, super::now(ctx)?);
        let view = volumes::delete(db, actor, id, now).await?;
        Ok(VolumePayload {
            volume: Volume(view),
        })
    }

    /// The storage created the volume (operator).
    async fn mark_volume_ready(&self, ctx: &Context<'_>, id: ID) -> Result<VolumePayload> {
        let id = parse_id("id", &id)?;
        let (db, actor, now) = (super::db(ctx)?, super::principal(ctx)?, super::now(ctx)?);
        let view = volumes::mark(db, actor, id, None, now).await?;
        Ok(VolumePayload {
            volume: Volume(view),
        })
    }

    /// The storage could not create the volume (operator): it is deleted, and none of it
    /// is billed.
    async fn mark_volume_failed(
        &self,
        ctx: &Context<'_>,
        id: ID,
        reason: String,
    ) -> Result<VolumePayload> {
        let id = parse_id("id", &id)?;
        let (db, actor, now) = (super::db(ctx)?, super::principal(ctx)?, super::now(ctx)?);
        let view = volumes::mark(db, actor, id, Some(reason), now).await?;
        Ok(VolumePayload {
            volume: Volume(view),
        })
    }
}
