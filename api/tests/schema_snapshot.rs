//! The served GraphQL schema is a contract: it must equal the checked-in
//! `schema/graphql/schema.graphql`. After an intended change, regenerate it with
//! `cargo run -p neocloud-api --bin neocloud -- schema > schema/graphql/schema.graphql`.

#[test]
fn the_served_schema_matches_the_checked_in_file() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schema/graphql/schema.graphql"
    );
    let checked_in = std::fs::read_to_string(path).expect("schema/graphql/schema.graphql exists");
    let served = neocloud_api::graphql::sdl();
    assert!(
        checked_in == served,
        "the served schema differs from schema/graphql/schema.graphql; regenerate it with \
         `cargo run -p neocloud-api --bin neocloud -- schema > schema/graphql/schema.graphql` \
         and review the diff"
    );
}
