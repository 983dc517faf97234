//! neocloud-e2e
