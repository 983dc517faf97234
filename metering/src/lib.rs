//! neocloud-metering: the metering pipeline — ingest with exactly-once batch ids, minute
//! buckets per allocation, rating against plan versions, invoicing and Stripe sync.
//!
//! Nothing here yet: the metering, rating and payments issues fill this crate.
