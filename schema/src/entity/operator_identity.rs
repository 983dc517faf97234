//! An operator who signs in to the console through the identity provider: its issuer and
//! subject, the email the provider gave, and the operator key it acts through (whose
//! secret nobody ever sees).

use crate::ids::ApiKeyId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "operator_identities")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub issuer: String,
    pub subject: String,
    pub email: String,
    pub api_key_id: ApiKeyId,
    pub created_at: DateTimeUtc,
    pub last_sign_in_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
