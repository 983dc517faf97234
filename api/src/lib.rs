//! neocloud-api
