//! neocloud-scheduler: the topology-aware placement engine. Pure: no I/O, no database.
//! The api loads fleet state, asks for a placement, and commits the answer.
