//! The core tables: tenancy and keys, the fleet and its topology, the catalog, plans and
//! their versions, quotas, orders and allocations, and the audit log.

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Providers {
    Table,
    Id,
    Name,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
    Name,
    Currency,
    Status,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    Prefix,
    SecretHash,
    Role,
    TenantId,
    NodeId,
    Label,
    CreatedBy,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum Nodes {
    Table,
    Id,
    ProviderId,
    Hostname,
    Region,
    Zone,
    Rack,
    NvlinkDomain,
    GpuModel,
    GpuCount,
    MigEnabled,
    SharedGpus,
    CpuMilli,
    MemoryMib,
    State,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Gpus {
    Table,
    Id,
    NodeId,
    Uuid,
    Index,
    Model,
    MemoryMib,
    MigEnabled,
    Health,
    HealthChangedAt,
}

#[derive(DeriveIden)]
enum Skus {
    Table,
    Id,
    Name,
    GpuModel,
    Form,
    MigProfile,
    MilliGpu,
    MemoryMib,
    Region,
    ListPricePerHour,
    Currency,
    Active,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Plans {
    Table,
    Id,
    Name,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PlanVersions {
    Table,
    Id,
    PlanId,
    Version,
    Currency,
    EffectiveFrom,
    MinimumBillableSeconds,
    CommitmentMonthlyMinimum,
    CommitmentDiscountPct,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PlanRates {
    Table,
    Id,
    PlanVersionId,
    SkuId,
    Metric,
    TiersMode,
    UnitPrice,
    SpotUnitPrice,
    Tiers,
    PackageSize,
    PackagePrice,
}

#[derive(DeriveIden)]
enum TenantPlans {
    Table,
    Id,
    TenantId,
    PlanVersionId,
    EffectiveFrom,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Quotas {
    Table,
    Id,
    TenantId,
    Scope,
    ScopeValue,
    MaxValue,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Orders {
    Table,
    Id,
    TenantId,
    SkuId,
    Count,
    Class,
    TopologyLevel,
    TopologyRequired,
    Exclusive,
    MaxPricePerHour,
    Labels,
    IdempotencyKey,
    RequestHash,
    Status,
    CreatedBy,
    CreatedAt,
    EndedAt,
}

#[derive(DeriveIden)]
enum Allocations {
    Table,
    Id,
    OrderId,
    TenantId,
    SkuId,
    NodeId,
    Class,
    Status,
    MigProfile,
    MigStartSlot,
    MilliGpu,
    Labels,
    StartedAt,
    PreemptAt,
    EndedAt,
}

#[derive(DeriveIden)]
enum AllocationGpus {
    Table,
    AllocationId,
    GpuId,
    TenantId,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    At,
    ActorKeyId,
    ActorRole,
    TenantId,
    Action,
    ObjectType,
    ObjectId,
    Before,
    After,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create_providers(manager).await?;
        create_tenants(manager).await?;
        create_nodes(manager).await?;
        create_api_keys(manager).await?;
        create_gpus(manager).await?;
        create_skus(manager).await?;
        create_plans(manager).await?;
        create_plan_versions(manager).await?;
        create_plan_rates(manager).await?;
        create_tenant_plans(manager).await?;
        create_quotas(manager).await?;
        create_orders(manager).await?;
        create_allocations(manager).await?;
        create_allocation_gpus(manager).await?;
        create_audit_log(manager).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            AuditLog::Table.into_iden(),
            AllocationGpus::Table.into_iden(),
            Allocations::Table.into_iden(),
            Orders::Table.into_iden(),
            Quotas::Table.into_iden(),
            TenantPlans::Table.into_iden(),
            PlanRates::Table.into_iden(),
            PlanVersions::Table.into_iden(),
            Plans::Table.into_iden(),
            Skus::Table.into_iden(),
            Gpus::Table.into_iden(),
            ApiKeys::Table.into_iden(),
            Nodes::Table.into_iden(),
            Tenants::Table.into_iden(),
            Providers::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}

async fn create_providers(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Providers::Table)
                .col(pk_uuid(Providers::Id))
                .col(string_uniq(Providers::Name))
                .col(timestamp_with_time_zone(Providers::CreatedAt))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_tenants(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Tenants::Table)
                .col(pk_uuid(Tenants::Id))
                .col(string_uniq(Tenants::Name))
                .col(string_len(Tenants::Currency, 3))
                .col(string(Tenants::Status))
                .col(timestamp_with_time_zone(Tenants::CreatedAt))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_nodes(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Nodes::Table)
                .col(pk_uuid(Nodes::Id))
                .col(uuid(Nodes::ProviderId))
                .col(string_uniq(Nodes::Hostname))
                .col(string(Nodes::Region))
                .col(string(Nodes::Zone))
                .col(string(Nodes::Rack))
                .col(string(Nodes::NvlinkDomain))
                .col(string(Nodes::GpuModel))
                .col(integer(Nodes::GpuCount))
                .col(boolean(Nodes::MigEnabled))
                .col(boolean(Nodes::SharedGpus))
                .col(big_integer(Nodes::CpuMilli))
                .col(big_integer(Nodes::MemoryMib))
                .col(string(Nodes::State))
                .col(timestamp_with_time_zone(Nodes::CreatedAt))
                .foreign_key(&mut fk(
                    Nodes::Table,
                    Nodes::ProviderId,
                    Providers::Table,
                    Providers::Id,
                ))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_api_keys(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(ApiKeys::Table)
                .col(pk_uuid(ApiKeys::Id))
                .col(string_uniq(ApiKeys::Prefix))
                .col(string(ApiKeys::SecretHash))
                .col(string(ApiKeys::Role))
                .col(uuid_null(ApiKeys::TenantId))
                .col(uuid_null(ApiKeys::NodeId))
                .col(string(ApiKeys::Label))
                .col(uuid_null(ApiKeys::CreatedBy))
                .col(timestamp_with_time_zone(ApiKeys::CreatedAt))
                .col(timestamp_with_time_zone_null(ApiKeys::LastUsedAt))
                .col(timestamp_with_time_zone_null(ApiKeys::RevokedAt))
                .foreign_key(&mut fk(
                    ApiKeys::Table,
                    ApiKeys::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .foreign_key(&mut fk(
                    ApiKeys::Table,
                    ApiKeys::NodeId,
                    Nodes::Table,
                    Nodes::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_api_keys_tenant",
            ApiKeys::Table,
            vec![ApiKeys::TenantId.into_iden()],
            false,
        ))
        .await?;
    Ok(())
}

async fn create_gpus(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Gpus::Table)
                .col(pk_uuid(Gpus::Id))
                .col(uuid(Gpus::NodeId))
                .col(string_uniq(Gpus::Uuid))
                .col(integer(Gpus::Index))
                .col(string(Gpus::Model))
                .col(big_integer(Gpus::MemoryMib))
                .col(boolean(Gpus::MigEnabled))
                .col(string(Gpus::Health))
                .col(timestamp_with_time_zone(Gpus::HealthChangedAt))
                .foreign_key(&mut fk(Gpus::Table, Gpus::NodeId, Nodes::Table, Nodes::Id))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_gpus_node_index",
            Gpus::Table,
            vec![Gpus::NodeId.into_iden(), Gpus::Index.into_iden()],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_skus(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Skus::Table)
                .col(pk_uuid(Skus::Id))
                .col(string_uniq(Skus::Name))
                .col(string(Skus::GpuModel))
                .col(string(Skus::Form))
                .col(string_null(Skus::MigProfile))
                .col(integer_null(Skus::MilliGpu))
                .col(big_integer_null(Skus::MemoryMib))
                .col(string(Skus::Region))
                .col(string(Skus::ListPricePerHour))
                .col(string_len(Skus::Currency, 3))
                .col(boolean(Skus::Active))
                .col(timestamp_with_time_zone(Skus::CreatedAt))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_plans(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Plans::Table)
                .col(pk_uuid(Plans::Id))
                .col(string_uniq(Plans::Name))
                .col(timestamp_with_time_zone(Plans::CreatedAt))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_plan_versions(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(PlanVersions::Table)
                .col(pk_uuid(PlanVersions::Id))
                .col(uuid(PlanVersions::PlanId))
                .col(integer(PlanVersions::Version))
                .col(string_len(PlanVersions::Currency, 3))
                .col(timestamp_with_time_zone(PlanVersions::EffectiveFrom))
                .col(big_integer(PlanVersions::MinimumBillableSeconds))
                .col(string_null(PlanVersions::CommitmentMonthlyMinimum))
                .col(string_null(PlanVersions::CommitmentDiscountPct))
                .col(timestamp_with_time_zone(PlanVersions::CreatedAt))
                .foreign_key(&mut fk(
                    PlanVersions::Table,
                    PlanVersions::PlanId,
                    Plans::Table,
                    Plans::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_plan_versions_plan_version",
            PlanVersions::Table,
            vec![
                PlanVersions::PlanId.into_iden(),
                PlanVersions::Version.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_plan_rates(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(PlanRates::Table)
                .col(pk_uuid(PlanRates::Id))
                .col(uuid(PlanRates::PlanVersionId))
                .col(uuid(PlanRates::SkuId))
                .col(string(PlanRates::Metric))
                .col(string(PlanRates::TiersMode))
                .col(string_null(PlanRates::UnitPrice))
                .col(string_null(PlanRates::SpotUnitPrice))
                .col(json_binary_null(PlanRates::Tiers))
                .col(string_null(PlanRates::PackageSize))
                .col(string_null(PlanRates::PackagePrice))
                .foreign_key(&mut fk(
                    PlanRates::Table,
                    PlanRates::PlanVersionId,
                    PlanVersions::Table,
                    PlanVersions::Id,
                ))
                .foreign_key(&mut fk(
                    PlanRates::Table,
                    PlanRates::SkuId,
                    Skus::Table,
                    Skus::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_plan_rates_version_sku_metric",
            PlanRates::Table,
            vec![
                PlanRates::PlanVersionId.into_iden(),
                PlanRates::SkuId.into_iden(),
                PlanRates::Metric.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_tenant_plans(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(TenantPlans::Table)
                .col(pk_uuid(TenantPlans::Id))
                .col(uuid(TenantPlans::TenantId))
                .col(uuid(TenantPlans::PlanVersionId))
                .col(timestamp_with_time_zone(TenantPlans::EffectiveFrom))
                .col(timestamp_with_time_zone(TenantPlans::CreatedAt))
                .foreign_key(&mut fk(
                    TenantPlans::Table,
                    TenantPlans::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .foreign_key(&mut fk(
                    TenantPlans::Table,
                    TenantPlans::PlanVersionId,
                    PlanVersions::Table,
                    PlanVersions::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_tenant_plans_tenant",
            TenantPlans::Table,
            vec![
                TenantPlans::TenantId.into_iden(),
                TenantPlans::EffectiveFrom.into_iden(),
            ],
            false,
        ))
        .await?;
    Ok(())
}

async fn create_quotas(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Quotas::Table)
                .col(pk_uuid(Quotas::Id))
                .col(uuid(Quotas::TenantId))
                .col(string(Quotas::Scope))
                .col(string(Quotas::ScopeValue))
                .col(big_integer(Quotas::MaxValue))
                .col(timestamp_with_time_zone(Quotas::UpdatedAt))
                .foreign_key(&mut fk(
                    Quotas::Table,
                    Quotas::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_quotas_tenant_scope",
            Quotas::Table,
            vec![
                Quotas::TenantId.into_iden(),
                Quotas::Scope.into_iden(),
                Quotas::ScopeValue.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_orders(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Orders::Table)
                .col(pk_uuid(Orders::Id))
                .col(uuid(Orders::TenantId))
                .col(uuid(Orders::SkuId))
                .col(integer(Orders::Count))
                .col(string(Orders::Class))
                .col(string(Orders::TopologyLevel))
                .col(boolean(Orders::TopologyRequired))
                .col(boolean(Orders::Exclusive))
                .col(string_null(Orders::MaxPricePerHour))
                .col(json_binary(Orders::Labels))
                .col(string(Orders::IdempotencyKey))
                .col(string(Orders::RequestHash))
                .col(string(Orders::Status))
                .col(uuid_null(Orders::CreatedBy))
                .col(timestamp_with_time_zone(Orders::CreatedAt))
                .col(timestamp_with_time_zone_null(Orders::EndedAt))
                .foreign_key(&mut fk(
                    Orders::Table,
                    Orders::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .foreign_key(&mut fk(Orders::Table, Orders::SkuId, Skus::Table, Skus::Id))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_orders_tenant_idempotency",
            Orders::Table,
            vec![
                Orders::TenantId.into_iden(),
                Orders::IdempotencyKey.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_allocations(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Allocations::Table)
                .col(pk_uuid(Allocations::Id))
                .col(uuid(Allocations::OrderId))
                .col(uuid(Allocations::TenantId))
                .col(uuid(Allocations::SkuId))
                .col(uuid(Allocations::NodeId))
                .col(string(Allocations::Class))
                .col(string(Allocations::Status))
                .col(string_null(Allocations::MigProfile))
                .col(integer_null(Allocations::MigStartSlot))
                .col(integer_null(Allocations::MilliGpu))
                .col(json_binary(Allocations::Labels))
                .col(timestamp_with_time_zone(Allocations::StartedAt))
                .col(timestamp_with_time_zone_null(Allocations::PreemptAt))
                .col(timestamp_with_time_zone_null(Allocations::EndedAt))
                .foreign_key(&mut fk(
                    Allocations::Table,
                    Allocations::OrderId,
                    Orders::Table,
                    Orders::Id,
                ))
                .foreign_key(&mut fk(
                    Allocations::Table,
                    Allocations::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .foreign_key(&mut fk(
                    Allocations::Table,
                    Allocations::NodeId,
                    Nodes::Table,
                    Nodes::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_allocations_tenant_status",
            Allocations::Table,
            vec![
                Allocations::TenantId.into_iden(),
                Allocations::Status.into_iden(),
            ],
            false,
        ))
        .await?;
    manager
        .create_index(index(
            "idx_allocations_node",
            Allocations::Table,
            vec![
                Allocations::NodeId.into_iden(),
                Allocations::Status.into_iden(),
            ],
            false,
        ))
        .await?;
    Ok(())
}

async fn create_allocation_gpus(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(AllocationGpus::Table)
                .col(uuid(AllocationGpus::AllocationId))
                .col(uuid(AllocationGpus::GpuId))
                .col(uuid(AllocationGpus::TenantId))
                .primary_key(
                    Index::create()
                        .col(AllocationGpus::AllocationId)
                        .col(AllocationGpus::GpuId),
                )
                .foreign_key(&mut fk(
                    AllocationGpus::Table,
                    AllocationGpus::AllocationId,
                    Allocations::Table,
                    Allocations::Id,
                ))
                .foreign_key(&mut fk(
                    AllocationGpus::Table,
                    AllocationGpus::GpuId,
                    Gpus::Table,
                    Gpus::Id,
                ))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_audit_log(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(AuditLog::Table)
                .col(pk_uuid(AuditLog::Id))
                .col(timestamp_with_time_zone(AuditLog::At))
                .col(uuid_null(AuditLog::ActorKeyId))
                .col(string(AuditLog::ActorRole))
                .col(uuid_null(AuditLog::TenantId))
                .col(string(AuditLog::Action))
                .col(string(AuditLog::ObjectType))
                .col(string(AuditLog::ObjectId))
                .col(json_binary_null(AuditLog::Before))
                .col(json_binary_null(AuditLog::After))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_audit_log_tenant_at",
            AuditLog::Table,
            vec![AuditLog::TenantId.into_iden(), AuditLog::At.into_iden()],
            false,
        ))
        .await?;
    Ok(())
}
