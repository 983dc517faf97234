//! neocloud-migrations
