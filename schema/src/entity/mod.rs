//! sea-orm entities (feature `db`).
