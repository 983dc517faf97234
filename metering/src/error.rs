//! Metering errors: what the HTTP edge maps to 400, 403 and 500.

use neocloud_schema::ingest::InvalidBatch;

#[derive(Debug, thiserror::Error)]
pub enum MeteringError {
    /// The batch breaks the contract; nothing of it was stored.
    #[error("{0}")]
    Invalid(#[from] InvalidBatch),
    /// The batch speaks for another node or devices not on this node.
    #[error("{message}")]
    Forbidden { message: String },
    #[error("database: {0}")]
    Database(#[from] sea_orm::DbErr),
}

impl MeteringError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        MeteringError::Invalid(InvalidBatch {
            field: field.into(),
            message: message.into(),
        })
    }
}
