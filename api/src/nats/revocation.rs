//! Cutting nodes off NATS at once. The revoked NATS users that have not expired
//! (`auth::nats_users`) are the usage account's revocation list: neocloud re-signs the
//! account with them (the operator's signing key) and hands it to nats-server's full
//! resolver through the system account (`$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE`);
//! nats-server then refuses those users and closes their connections.
//!
//! Every process that runs jobs reads the list each second and hands it over when it
//! changed, and every [`REFRESH`] regardless (a nats-server restarted from an older
//! account directory, or an older list another replica handed over in the same second),
//! so any number of replicas may run it. It also forgets users that expired a day ago.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use async_nats::ConnectOptions;
use neocloud_schema::clock::SharedClock;
use sea_orm::DatabaseConnection;

use super::credentials::AccountIssuer;
use crate::auth::nats_users;
use crate::settings::NatsSettings;

/// How often the list is handed over even when it did not change.
const REFRESH: Duration = Duration::from_secs(60);
/// How long nats-server has to connect and answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Starts the revocation job where the server mints node credentials: it hands the list
/// over where `nats.operator_signing_seed` and the system account's keys are set, and
/// prunes expired users either way.
pub fn spawn(
    db: DatabaseConnection,
    clock: SharedClock,
    settings: &NatsSettings,
) -> anyhow::Result<()> {
    if super::authority(settings)?.is_none() {
        return Ok(());
    }
    let handover = match super::issuer(settings)? {
        Some(issuer) => Some(Handover {
            issuer,
            url: settings.url.clone().context("revoking needs nats.url")?,
        }),
        None => None,
    };
    tokio::spawn(run(db, clock, handover));
    Ok(())
}

/// Where the list goes.
struct Handover {
    issuer: AccountIssuer,
    url: String,
}

async fn run(db: DatabaseConnection, clock: SharedClock, handover: Option<Handover>) {
    let mut last: Option<(BTreeMap<String, i64>, Instant)> = None;
    let mut pruned = Instant::now() - REFRESH;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let now = clock.now();
        if pruned.elapsed() >= REFRESH {
            pruned = Instant::now();
            if let Err(err) = nats_users::prune(&db, now - chrono::TimeDelta::days(1)).await {
                tracing::warn!(%err, "Forgetting expired NATS users failed.");
            }
        }
        let Some(handover) = &handover else { continue };
        let revoked = match nats_users::revoked(&db, now).await {
            Ok(revoked) => revoked,
            Err(err) => {
                tracing::warn!(%err, "Reading the NATS revocation list failed.");
                continue;
            }
        };
        let due = last
            .as_ref()
            .is_none_or(|(list, at)| *list != revoked || at.elapsed() >= REFRESH);
        if !due {
            continue;
        }
        match handover.hand_over(&revoked, now.timestamp()).await {
            Ok(()) => {
                tracing::debug!(users = revoked.len(), "NATS revocation list handed over.");
                last = Some((revoked, Instant::now()));
            }
            Err(err) => {
                tracing::warn!(error = %format!("{err:#}"), "Handing the NATS revocation list over failed; retrying.");
                tokio::time::sleep(TIMEOUT).await;
            }
        }
    }
}

impl Handover {
    /// Hands the usage account with `revoked` to nats-server, as a system-account user
    /// minted for this one connection.
    async fn hand_over(&self, revoked: &BTreeMap<String, i64>, now: i64) -> anyhow::Result<()> {
        let creds = self.issuer.system_credentials(now, 300)?;
        let jwt = self.issuer.account_jwt(revoked, now)?;
        let client = ConnectOptions::with_credentials(&creds)?
            .name("neocloud account issuer")
            .connection_timeout(TIMEOUT)
            .connect(self.url.as_str())
            .await
            .with_context(|| format!("connecting to NATS at {}", self.url))?;
        let subject = format!("$SYS.REQ.ACCOUNT.{}.CLAIMS.UPDATE", self.issuer.account());
        let reply = tokio::time::timeout(TIMEOUT, client.request(subject, jwt.into()))
            .await
            .context("nats-server did not answer")??;
        let answer: serde_json::Value =
            serde_json::from_slice(&reply.payload).context("nats-server's answer")?;
        if let Some(error) = answer.get("error") {
            anyhow::bail!("nats-server refused the account: {error}");
        }
        Ok(())
    }
}
