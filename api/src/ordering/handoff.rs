//! The provisioning hand-off, reported back by the operator's provisioner (an operator
//! key): `markAllocationReady` with where the customer connects, which the customer sees
//! as `Allocation.access` and in `allocation.ready`; or `markAllocationFailed`, which
//! ends the allocation where it started, so none of it is billed, and says why in
//! `allocation.ended` (reason `provisioning_failed`).
//!
//! Reporting ready again with other endpoints replaces them (an address moved); with the
//! same ones it changes nothing. A failed allocation stays failed; a ready one is not
//! failed afterwards (it was handed over: it is released, and billed as it ran).

use std::net::IpAddr;

use neocloud_schema::entity::allocation;
use neocloud_schema::vocabulary::{AccessState, AllocationStatus};
use sea_orm::DatabaseConnection;
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use super::{Ordering, events, store};
use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// Most endpoints one allocation reports.
pub const MAX_ENDPOINTS: usize = 8;
pub const MAX_FAILURE_CHARS: usize = 500;
const MAX_KIND_CHARS: usize = 32;
const MAX_USERNAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 200;

/// Where a customer connects to an allocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessEndpoint {
    /// What is served there, e.g. `ssh`, `https`, `jupyter`.
    pub kind: String,
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    pub description: Option<String>,
}

impl AccessEndpoint {
    fn check(&self) -> Result<(), String> {
        let kind_ok = !self.kind.is_empty()
            && self.kind.len() <= MAX_KIND_CHARS
            && self
                .kind
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !kind_ok {
            return Err(format!(
                "kind `{}`: 1 to {MAX_KIND_CHARS} lowercase letters, digits, `-` or `_`",
                self.kind
            ));
        }
        if !is_host(&self.host) {
            return Err(format!(
                "host `{}` is not a host name or IP address",
                self.host
            ));
        }
        if self.port == 0 {
            return Err("port 0 is not a port".into());
        }
        let username_ok = self.username.as_ref().is_none_or(|u| {
            !u.is_empty()
                && u.chars().count() <= MAX_USERNAME_CHARS
                && !u.chars().any(|c| c.is_whitespace() || c.is_control())
        });
        if !username_ok {
            return Err(format!(
                "username: 1 to {MAX_USERNAME_CHARS} characters, no spaces"
            ));
        }
        if self
            .description
            .as_ref()
            .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS)
        {
            return Err(format!(
                "description: at most {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
        Ok(())
    }
}

/// An IP address, or a DNS name of letter-digit-hyphen labels (at most 253 bytes).
fn is_host(host: &str) -> bool {
    if host.parse::<IpAddr>().is_ok() {
        return true;
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

fn checked(endpoints: &[AccessEndpoint]) -> ApiResult<()> {
    if endpoints.is_empty() || endpoints.len() > MAX_ENDPOINTS {
        return Err(ApiError::invalid(
            "endpoints",
            format!("1 to {MAX_ENDPOINTS} endpoints"),
        ));
    }
    for (i, endpoint) in endpoints.iter().enumerate() {
        endpoint
            .check()
            .map_err(|why| ApiError::invalid(format!("endpoints[{i}]"), why))?;
    }
    Ok(())
}

fn ended() -> ApiError {
    ApiError::InvalidState {
        message: "the allocation has ended".into(),
    }
}

fn entry(row: &allocation::Model, action: &'static str, after: serde_json::Value) -> audit::Entry {
    audit::Entry {
        tenant_id: Some(row.tenant_id),
        action,
        object_type: "allocation",
        object_id: row.id.to_string(),
        before: Some(json!({"access_state": row.access_state})),
        after: Some(after),
    }
}

impl Ordering {
    /// `markAllocationReady`.
    #[tracing::instrument(name = "ordering.mark_ready", skip_all, fields(allocation = %id))]
    pub async fn mark_ready(
        &self,
        db: &DatabaseConnection,
        actor: &Principal,
        id: Uuid,
        endpoints: Vec<AccessEndpoint>,
    ) -> ApiResult<allocation::Model> {
        actor.require_operator()?;
        checked(&endpoints)?;
        let now = self.clock.now();
        let txn = crate::db::begin_write(db).await?;
        let row = store::find_allocation(&txn, id, None)
            .await?
            .ok_or_else(|| ApiError::not_found("allocation"))?;
        if row.status == AllocationStatus::Released {
            return Err(ended());
        }
        let endpoints = json!(endpoints);
        if row.access_state == AccessState::Ready && row.access_endpoints == Some(endpoints.clone())
        {
            return Ok(row);
        }
        let after = json!({"access_state": AccessState::Ready, "endpoints": endpoints});
        let ready =
            store::set_access(&txn, &row, AccessState::Ready, Some(endpoints), None, now).await?;
        events::ready(&txn, &ready, now).await?;
        audit::record(&txn, actor, entry(&row, "allocation.ready", after)).await?;
        txn.commit().await?;
        Ok(ready)
    }

    /// `markAllocationFailed`: releases the allocation as if it never ran.
    #[tracing::instrument(name = "ordering.mark_failed", skip_all, fields(allocation = %id))]
    pub async fn mark_failed(
        &self,
        db: &DatabaseConnection,
        actor: &Principal,
        id: Uuid,
        reason: &str,
    ) -> ApiResult<allocation::Model> {
        actor.require_operator()?;
        let reason = reason.trim();
        if reason.is_empty() || reason.chars().count() > MAX_FAILURE_CHARS {
            return Err(ApiError::invalid(
                "reason",
                format!("1 to {MAX_FAILURE_CHARS} characters"),
            ));
        }
        let mut cache = self.cache.lock().await;
        let txn = crate::db::begin_write(db).await?;
        // The fleet's lock before the read: no other replica ends it meanwhile.
        let epoch = Self::current(&mut cache, &txn).await?;
        let row = store::find_allocation(&txn, id, None)
            .await?
            .ok_or_else(|| ApiError::not_found("allocation"))?;
        match (row.access_state, row.status) {
            (AccessState::Failed, _) => return Ok(row),
            (AccessState::Ready, _) => {
                return Err(ApiError::InvalidState {
                    message: "the allocation was reported ready; release it instead".into(),
                });
            }
            (AccessState::Pending, AllocationStatus::Released) => return Err(ended()),
            (AccessState::Pending, _) => {}
        }
        let now = self.clock.now();
        let failed = store::set_access(
            &txn,
            &row,
            AccessState::Failed,
            None,
            Some(reason.to_owned()),
            now,
        )
        .await?;
        let ended = self
            .end_at(&txn, &mut cache, &failed, row.started_at, Some(reason))
            .await?;
        let after = json!({"access_state": AccessState::Failed, "reason": reason});
        audit::record(&txn, actor, entry(&row, "allocation.fail", after)).await?;
        Self::commit(&mut cache, txn, epoch).await?;
        Ok(ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssh(host: &str, port: u16) -> AccessEndpoint {
        AccessEndpoint {
            kind: "ssh".into(),
            host: host.into(),
            port,
            username: Some("ubuntu".into()),
            description: None,
        }
    }

    #[test]
    fn endpoints_name_real_hosts_and_ports() {
        for host in [
            "203.0.113.7",
            "2001:db8::1",
            "gpu-7.example.com",
            "gpu-7.example.com.",
        ] {
            assert!(ssh(host, 22).check().is_ok(), "{host}");
        }
        for host in [
            "",
            "-bad.example",
            "a..b",
            "white space",
            "x/y",
            &"a".repeat(64),
        ] {
            assert!(ssh(host, 22).check().is_err(), "{host}");
        }
        assert!(ssh("203.0.113.7", 0).check().is_err());
        let mut odd = ssh("203.0.113.7", 22);
        odd.kind = "SSH!".into();
        assert!(odd.check().is_err());
        assert!(checked(&[]).is_err());
        assert!(checked(&vec![ssh("h", 1); MAX_ENDPOINTS + 1]).is_err());
    }
}
