//! `viewer`: who the key in use belongs to.

use async_graphql::{Context, ID, Object, Result};

use super::scalars::{GqlRole, to_id};
use super::tenants::Tenant;
use crate::auth::Principal;
use crate::tenancy;

pub struct Viewer(Principal);

#[Object]
impl Viewer {
    async fn role(&self) -> GqlRole {
        self.0.role.into()
    }

    /// The id of the API key in use.
    async fn api_key_id(&self) -> ID {
        to_id(self.0.key_id)
    }

    /// The email of the person signed in: a portal user, or an operator who signed in
    /// through single sign-on; null when the caller is a key and nothing more.
    async fn email(&self, ctx: &Context<'_>) -> Result<Option<String>> {
        Ok(crate::auth::person_of(super::db(ctx)?, self.0.key_id).await?)
    }

    /// The caller's tenant; null for operators and agents.
    async fn tenant(&self, ctx: &Context<'_>) -> Result<Option<Tenant>> {
        let db = super::db(ctx)?;
        Ok(tenancy::own_tenant(db, &self.0).await?.map(Tenant))
    }
}

#[derive(Default)]
pub struct ViewerQuery;

#[Object]
impl ViewerQuery {
    /// The caller.
    async fn viewer(&self, ctx: &Context<'_>) -> Result<Viewer> {
        Ok(Viewer(super::principal(ctx)?.clone()))
    }
}
