//! Users (`portalUsers`, `inviteUser`, `removeUser`, the second factor): the people of a
//! tenant who sign in to the portal, and of a provider who sign in to the provider
//! console, with an email and a password (`auth::users`). Each call is about the caller's
//! own tenant or provider; an operator names one (`tenantId` or `providerId`).

use async_graphql::{Context, Enum, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::portal_user;

use super::scalars::{GqlRole, parse_id, provider_arg, tenant_arg, to_id};
use crate::auth::users::{self, Owner};

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum PortalUserState {
    /// Invited; no password set yet.
    Invited,
    Active,
    /// Removed (or erased): cannot sign in.
    Removed,
}

/// A person who signs in to the portal (a tenant's) or the provider console (a
/// provider's).
#[derive(SimpleObject)]
pub struct PortalUser {
    pub id: ID,
    pub email: String,
    pub role: GqlRole,
    pub state: PortalUserState,
    /// Until when a pending invitation can be accepted.
    pub invitation_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub last_sign_in_at: Option<DateTime<Utc>>,
    /// Locked after too many wrong passwords, until then.
    pub locked_until: Option<DateTime<Utc>>,
    /// Since when signing in also needs a one-time code; null: a password alone.
    pub second_factor_since: Option<DateTime<Utc>>,
}

/// A second factor being set up: the secret for the authenticator app, as text, as the
/// `otpauth://` URI, and as a QR code of that URI for the app to scan.
#[derive(SimpleObject)]
pub struct SecondFactorSetup {
    pub secret: String,
    pub uri: String,
    /// An SVG image (black on white, with its quiet zone) of `uri` as a QR code.
    pub qr_code_svg: String,
}

impl From<portal_user::Model> for PortalUser {
    fn from(u: portal_user::Model) -> Self {
        let state = match (u.disabled_at, &u.password_hash) {
            (Some(_), _) => PortalUserState::Removed,
            (None, None) => PortalUserState::Invited,
            (None, Some(_)) => PortalUserState::Active,
        };
        PortalUser {
            id: to_id(u.id),
            email: u.email,
            role: u.role.into(),
            state,
            invitation_expires_at: u.invitation_expires_at,
            created_at: u.created_at,
            last_sign_in_at: u.last_sign_in_at,
            locked_until: u.locked_until,
            second_factor_since: u.totp_enabled_at,
        }
    }
}

/// An invitation, with its token (shown once): the person opens
/// `/portal/invitation#<token>` (`/provider/invitation#<token>` for a provider's user)
/// and chooses a password.
#[derive(SimpleObject)]
pub struct InviteUserPayload {
    pub user: PortalUser,
    pub invitation_token: String,
    /// The path that accepts it (append it to the deployment's address).
    pub invitation_path: String,
    /// Whether the link was also mailed to the person (a mail server is configured).
    pub emailed: bool,
}

impl From<users::Invited> for InviteUserPayload {
    fn from(invited: users::Invited) -> Self {
        let app = Owner::of(&invited.user).map_or(crate::mail::App::Portal, Owner::app);
        InviteUserPayload {
            invitation_path: format!("{}/invitation#{}", app.path(), invited.token),
            invitation_token: invited.token,
            emailed: invited.emailed,
            user: invited.user.into(),
        }
    }
}

/// Whose users a call is about (`Owner::acting`).
fn owner(ctx: &Context<'_>, tenant_id: Option<ID>, provider_id: Option<ID>) -> Result<Owner> {
    let actor = super::principal(ctx)?;
    Ok(Owner::acting(
        actor,
        tenant_arg(tenant_id)?,
        provider_arg(provider_id)?,
    )?)
}

fn mailer<'a>(ctx: &'a Context<'_>) -> Option<&'a crate::mail::Mailer> {
    ctx.data_opt::<Option<std::sync::Arc<crate::mail::Mailer>>>()
        .and_then(|m| m.as_deref())
}

#[derive(Default)]
pub struct UserQuery;

#[Object]
impl UserQuery {
    /// The users of the caller's tenant or provider, oldest first (operators name the
    /// tenant or the provider).
    async fn portal_users(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
        provider_id: Option<ID>,
    ) -> Result<Vec<PortalUser>> {
        let owner = owner(ctx, tenant_id, provider_id)?;
        let list = users::list(super::db(ctx)?, owner).await?;
        Ok(list.into_iter().map(Into::into).collect())
    }
}

#[derive(Default)]
pub struct UserMutation;

#[Object]
impl UserMutation {
    /// Invites a person to the portal with a tenant role the caller may grant, or to
    /// the provider console as a `PROVIDER` (a provider for its own people, an operator
    /// naming `providerId`). The token is valid for 7 days and shown once; inviting a
    /// pending email again replaces it. Where a mail server is configured the link is
    /// also mailed to the person.
    async fn invite_user(
        &self,
        ctx: &Context<'_>,
        email: String,
        role: GqlRole,
        tenant_id: Option<ID>,
        provider_id: Option<ID>,
    ) -> Result<InviteUserPayload> {
        let owner = owner(ctx, tenant_id, provider_id)?;
        let (db, actor) = (super::db(ctx)?, super::principal(ctx)?);
        let invited = users::invite(db, actor, mailer(ctx), &email, role.into(), owner).await?;
        Ok(invited.into())
    }

    /// A one-time link (valid 24 hours, shown once) with which an active user of a role
    /// the caller may grant sets a new password; the old one works until then, and the
    /// user's sessions end when it is used. Mailed to the user where a mail server is
    /// configured.
    async fn reset_password(
        &self,
        ctx: &Context<'_>,
        id: ID,
        tenant_id: Option<ID>,
        provider_id: Option<ID>,
    ) -> Result<InviteUserPayload> {
        let id = parse_id("id", &id)?;
        let owner = owner(ctx, tenant_id, provider_id)?;
        let (db, actor) = (super::db(ctx)?, super::principal(ctx)?);
        let issued = users::issue_password_reset(db, actor, mailer(ctx), id, owner).await?;
        Ok(issued.into())
    }

    /// Starts setting up the caller's second factor (a portal user signed in with its
    /// password): a new authenticator secret, on once `confirmSecondFactor` gets a code.
    async fn start_second_factor(&self, ctx: &Context<'_>) -> Result<SecondFactorSetup> {
        let actor = super::setting_up_sign_in(ctx)?;
        let setup = users::second_factor::start(super::db(ctx)?, actor).await?;
        Ok(SecondFactorSetup {
            secret: setup.secret,
            uri: setup.uri,
            qr_code_svg: setup.qr_code_svg,
        })
    }

    /// Turns the caller's second factor on with a current code of the new secret; returns
    /// ten single-use recovery codes, shown once.
    async fn confirm_second_factor(&self, ctx: &Context<'_>, code: String) -> Result<Vec<String>> {
        let codes = users::second_factor::confirm(
            super::db(ctx)?,
            super::setting_up_sign_in(ctx)?,
            &code,
            super::now(ctx)?,
        )
        .await?;
        Ok(codes)
    }

    /// Turns the caller's second factor off, with a current or recovery code.
    async fn disable_second_factor(&self, ctx: &Context<'_>, code: String) -> Result<bool> {
        users::second_factor::disable(
            super::db(ctx)?,
            super::principal(ctx)?,
            &code,
            super::now(ctx)?,
        )
        .await?;
        Ok(true)
    }

    /// Whether every portal user of the tenant must have a second factor (tenant admin,
    /// or operator naming the tenant). Once on, a user without one signs in to a session
    /// that may only set one up (`SECOND_FACTOR_SETUP_REQUIRED` for anything else), and
    /// no one turns theirs off. A portal user turns it on only with its own second factor
    /// on. Audited.
    async fn require_second_factor(
        &self,
        ctx: &Context<'_>,
        required: bool,
        tenant_id: Option<ID>,
    ) -> Result<super::tenants::Tenant> {
        let (db, actor) = (super::db(ctx)?, super::principal(ctx)?);
        let tenant = actor.acting_tenant(tenant_arg(tenant_id)?)?;
        users::second_factor::require(db, actor, Owner::Tenant(tenant), required).await?;
        let found = crate::tenancy::store::find(db, tenant).await?;
        Ok(super::tenants::Tenant(found.ok_or_else(|| {
            crate::error::ApiError::not_found("tenant")
        })?))
    }

    /// Whether every user of the provider must have a second factor (the provider, or an
    /// operator naming it), as `requireSecondFactor` for a tenant. Audited.
    async fn require_provider_second_factor(
        &self,
        ctx: &Context<'_>,
        required: bool,
        provider_id: Option<ID>,
    ) -> Result<super::providers::Provider> {
        let (db, actor) = (super::db(ctx)?, super::principal(ctx)?);
        let provider = actor.acting_provider(provider_arg(provider_id)?)?;
        users::second_factor::require(db, actor, Owner::Provider(provider), required).await?;
        let found = crate::providers::store::find(db, provider).await?;
        Ok(super::providers::Provider(found.ok_or_else(|| {
            crate::error::ApiError::not_found("provider")
        })?))
    }

    /// Turns a user's second factor off (a lost phone): for an admin who may manage the
    /// user's role; the user sets it up again.
    async fn reset_second_factor(
        &self,
        ctx: &Context<'_>,
        id: ID,
        tenant_id: Option<ID>,
        provider_id: Option<ID>,
    ) -> Result<PortalUser> {
        let id = parse_id("id", &id)?;
        let owner = owner(ctx, tenant_id, provider_id)?;
        let (db, actor) = (super::db(ctx)?, super::principal(ctx)?);
        let user = users::second_factor::reset(db, actor, id, owner).await?;
        Ok(user.into())
    }

    /// Removes a user: it cannot sign in again and its sessions end.
    async fn remove_user(
        &self,
        ctx: &Context<'_>,
        id: ID,
        tenant_id: Option<ID>,
        provider_id: Option<ID>,
    ) -> Result<PortalUser> {
        let id = parse_id("id", &id)?;
        let owner = owner(ctx, tenant_id, provider_id)?;
        let (db, actor) = (super::db(ctx)?, super::principal(ctx)?);
        let user = users::remove(db, actor, id, owner).await?;
        Ok(user.into())
    }
}
