//! `GET /v1/events/schema`: the event catalog as JSON Schema (**contract**), the same
//! document as `docs/events.schema.json`. Public, like the GraphQL schema: it describes
//! types, never events.

use actix_web::HttpResponse;

pub async fn catalog() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/schema+json")
        .json(neocloud_metering::events::catalog::document())
}
