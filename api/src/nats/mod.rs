//! neocloud on NATS JetStream, the production transport of usage: agents publish each
//! batch to their node's subject of stream `USAGE` (`neocloud_schema::usage_stream`),
//! `ingest` processes consume it into the same journal as `POST /v1/ingest`
//! ([`consumer`]), and the server mints each node's credential ([`credentials`]). This is
//! an edge like `http/`: it parses and hands over; the rules stay in metering.

pub mod consumer;
pub mod credentials;
pub mod revocation;

use std::sync::Arc;

use anyhow::Context;
use async_nats::ConnectOptions;
use secrecy::ExposeSecret;

use crate::settings::NatsSettings;
use credentials::{AccountIssuer, Authority};

/// Connects as neocloud itself: with the configured credentials file, else a credential
/// minted by the configured account signing key, else without credentials (a NATS that
/// trusts its network, as in development). Reconnects on its own for ever.
pub async fn connect(settings: &NatsSettings, now: i64) -> anyhow::Result<async_nats::Client> {
    let url = settings
        .url
        .as_deref()
        .context("nats.url is not set (NEOCLOUD_NATS__URL)")?;
    let options = match (&settings.credentials, authority(settings)?) {
        (Some(path), _) => ConnectOptions::with_credentials_file(path)
            .await
            .with_context(|| format!("reading nats.credentials {}", path.display()))?,
        (None, Some(authority)) => {
            ConnectOptions::with_credentials(&authority.service_credentials("neocloud", now)?)?
        }
        (None, None) => ConnectOptions::new(),
    };
    let client = options
        .name("neocloud")
        .retry_on_initial_connect()
        .event_callback(|event| async move {
            if matches!(event, async_nats::Event::Connected) {
                tracing::info!("Connected to NATS.");
            } else {
                tracing::warn!(%event, "NATS connection event.");
            }
        })
        .connect(url)
        .await
        .with_context(|| format!("connecting to NATS at {url}"))?;
    Ok(client)
}

/// The minting authority, when `nats.account` and `nats.account_signing_seed` are set.
pub fn authority(settings: &NatsSettings) -> anyhow::Result<Option<Arc<Authority>>> {
    match (&settings.account, &settings.account_signing_seed) {
        (Some(account), Some(seed)) => {
            let lifetime = i64::from(settings.credential_hours) * 3600;
            let authority = Authority::new(account, seed.expose_secret())?;
            Ok(Some(Arc::new(authority.expiring_after(lifetime))))
        }
        (None, None) => Ok(None),
        _ => anyhow::bail!("nats.account and nats.account_signing_seed go together"),
    }
}

/// The account issuer, when `nats.operator_signing_seed`, `nats.system_account` and
/// `nats.system_signing_seed` are set (with the minting authority).
pub fn issuer(settings: &NatsSettings) -> anyhow::Result<Option<AccountIssuer>> {
    let keys = (
        &settings.operator_signing_seed,
        &settings.system_account,
        &settings.system_signing_seed,
    );
    let (Some(operator), Some(system), Some(system_seed)) = keys else {
        anyhow::ensure!(
            keys.0.is_none() && keys.1.is_none() && keys.2.is_none(),
            "nats.operator_signing_seed, nats.system_account and nats.system_signing_seed go together"
        );
        return Ok(None);
    };
    let authority = authority(settings)?
        .context("revoking needs nats.account and nats.account_signing_seed")?;
    let issuer = AccountIssuer::new(
        &authority,
        operator.expose_secret(),
        system,
        system_seed.expose_secret(),
    )?;
    Ok(Some(issuer))
}
