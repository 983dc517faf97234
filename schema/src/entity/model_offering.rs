//! A model an operator sells per token in a region (Model-as-a-Service): the metered SKUs
//! its input, output and cached input tokens (and, optionally, each request) bill as, and
//! the most tokens one request may report. Offerings are never edited; prices change
//! through plans.

use crate::ids::{ModelOfferingId, SkuId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "model_offerings")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: ModelOfferingId,
    /// The model as the gateway names it in `data.model` (`llama-3.1-70b-instruct`).
    pub name: String,
    pub region: String,
    pub input_sku_id: SkuId,
    pub output_sku_id: SkuId,
    pub cached_sku_id: Option<SkuId>,
    pub request_sku_id: Option<SkuId>,
    pub max_tokens_per_request: i64,
    pub description: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
