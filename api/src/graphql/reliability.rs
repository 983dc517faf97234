//! `Reliability`: a node's (or provider's) reliability and the figures behind it.

use async_graphql::{Context, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::node_reliability;
use rust_decimal::Decimal;

use crate::fleet::reliability;

/// Basis points as a fraction with four decimals (`9950` → `0.9950`).
pub fn fraction(bp: i32) -> String {
    Decimal::new(i64::from(bp), 4).to_string()
}

/// A node's reliability over its window: the last 30 days, or since its agent first
/// reported (docs/providers.md, "Reliability").
pub struct Reliability(pub node_reliability::Model);

#[Object]
impl Reliability {
    /// Availability × GPU health (0 to 1, four decimals, rounded down); null while the
    /// window is empty.
    async fn score(&self) -> Option<String> {
        self.0.score_bp.map(fraction)
    }

    /// The share of the window some agent report covered (0 to 1, four decimals).
    async fn availability(&self) -> String {
        let window = self.seconds();
        let bp = if window > 0 {
            self.0.covered_seconds.clamp(0, window) * 10_000 / window
        } else {
            0
        };
        fraction(i32::try_from(bp).unwrap_or(0))
    }

    async fn window_start(&self) -> DateTime<Utc> {
        self.0.window_start
    }

    async fn window_end(&self) -> DateTime<Utc> {
        self.0.window_end
    }

    async fn window_seconds(&self) -> i64 {
        self.seconds()
    }

    /// Seconds of the window some agent report covered.
    async fn covered_seconds(&self) -> i64 {
        self.0.covered_seconds
    }

    async fn gpu_count(&self) -> i32 {
        self.0.gpu_count
    }

    /// GPU-seconds of the window its GPUs spent failed.
    async fn failed_gpu_seconds(&self) -> i64 {
        self.0.failed_gpu_seconds
    }

    /// XID and ECC events of the last 30 days that fail a GPU.
    async fn faults(&self) -> i32 {
        self.0.faults
    }

    /// XID events of the last 30 days that degrade a GPU.
    async fn degradations(&self) -> i32 {
        self.0.degradations
    }

    /// Allocations a GPU failure hit in the window.
    async fn preemptions_by_fault(&self) -> i32 {
        self.0.preemptions_by_fault
    }

    async fn computed_at(&self) -> DateTime<Utc> {
        self.0.computed_at
    }

    /// The hours of the window its agents did not fully cover, newest first (at most
    /// 100): where availability was lost.
    async fn coverage_gaps(&self, ctx: &Context<'_>) -> Result<Vec<CoverageGap>> {
        let db = super::db(ctx)?;
        Ok(reliability::gaps(db, &self.0)
            .await?
            .into_iter()
            .map(|g| CoverageGap {
                hour_start: g.hour_start,
                missing_seconds: g.missing_seconds,
            })
            .collect())
    }
}

impl Reliability {
    fn seconds(&self) -> i64 {
        (self.0.window_end - self.0.window_start)
            .num_seconds()
            .max(0)
    }
}

/// An hour no agent report fully covered.
#[derive(SimpleObject)]
pub struct CoverageGap {
    pub hour_start: DateTime<Utc>,
    pub missing_seconds: i64,
}
