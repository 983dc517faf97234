//! Placement invariants checked with proptest.
