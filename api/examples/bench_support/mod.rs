//! What the benchmark examples share: arguments, a GraphQL call, and the real server on a
//! fresh PostgreSQL database that is dropped afterwards.

pub mod fleet;
pub mod http;

use neocloud_api::settings::Settings;
use neocloud_api::startup::Application;
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};
use serde_json::{Value, json};

/// `--name N` from the command line, or `default`.
pub fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub async fn gql(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    query: &str,
    vars: Value,
) -> Value {
    client
        .post(format!("{url}/graphql"))
        .bearer_auth(key)
        .json(&json!({"query": query, "variables": vars}))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json")
}

/// The server on a new database of the PostgreSQL at `NEOCLOUD_TEST_POSTGRES_URL`.
pub struct BenchServer {
    pub url: String,
    pub db: DatabaseConnection,
    pub operator_key: String,
    admin: DatabaseConnection,
    name: String,
}

impl BenchServer {
    #[allow(dead_code)] // each benchmark starts the server one way
    pub async fn start() -> BenchServer {
        BenchServer::start_with(|_| {}).await
    }

    /// Like `start`, with the settings adjusted first.
    pub async fn start_with(adjust: impl FnOnce(&mut Settings)) -> BenchServer {
        let admin_url = std::env::var("NEOCLOUD_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let admin = Database::connect(&admin_url)
            .await
            .expect("PostgreSQL reachable");
        let name = format!("neocloud_bench_{}", uuid::Uuid::new_v4().simple());
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("create database");
        // The same server and options (`?sslmode=…`), another database.
        let (url, query) = admin_url.split_once('?').unwrap_or((&admin_url, ""));
        let (base, _) = url.rsplit_once('/').expect("database URL");
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        let mut settings = Settings::for_tests(&format!("{base}/{name}{query}"));
        adjust(&mut settings);
        let app = Application::build(settings).await.expect("app");
        let db = app.db().clone();
        let operator_key = neocloud_api::auth::bootstrap_operator_key(&db, "bench")
            .await
            .expect("operator key")
            .secret;
        let url = format!("http://127.0.0.1:{}", app.port());
        tokio::spawn(app.run_until_stopped());
        BenchServer {
            url,
            db,
            operator_key,
            admin,
            name,
        }
    }

    /// A whole-H100 SKU in eu-west and a tenant: returns (SKU id, tenant admin key).
    #[allow(dead_code)] // not every benchmark orders
    pub async fn h100_sku_and_tenant(&self, client: &reqwest::Client) -> (String, String) {
        let r = gql(client, &self.url, &self.operator_key, "mutation { createSku(input: {name: \"h100\", gpuModel: \"H100\", form: WHOLE_GPU, region: \"eu-west\", listPricePerHour: \"2.49\", currency: \"USD\"}) { sku { id } } }", json!({})).await;
        let sku = r["data"]["createSku"]["sku"]["id"]
            .as_str()
            .expect("sku")
            .to_owned();
        let r = gql(
            client,
            &self.url,
            &self.operator_key,
            "mutation { createTenant(input: {name: \"bench\", currency: \"USD\"}) { apiKey } }",
            json!({}),
        )
        .await;
        let key = r["data"]["createTenant"]["apiKey"]
            .as_str()
            .expect("key")
            .to_owned();
        (sku, key)
    }

    /// Registers `nodes` nodes of 8 H100s (racks of 32 nodes).
    #[allow(dead_code)] // not every benchmark registers its nodes this way
    pub async fn register_h100_nodes(&self, client: &reqwest::Client, nodes: usize) {
        for n in 0..nodes {
            let gpus: Vec<Value> = (0..8)
                .map(|i| json!({"uuid": format!("GPU-{n:06}-{i}"), "index": i}))
                .collect();
            let r = gql(
                client,
                &self.url,
                &self.operator_key,
                "mutation($h: String!, $r: String!, $g: [GpuRegistrationInput!]!) { registerNode(input: {hostname: $h, region: \"eu-west\", zone: \"a\", rack: $r, nvlinkDomain: $h, gpuModel: \"H100\", gpus: $g}) { agentToken } }",
                json!({"h": format!("hgx-{n:06}"), "r": format!("r{:03}", n / 32), "g": gpus}),
            )
            .await;
            assert!(r["data"]["registerNode"].is_object(), "{r}");
        }
    }

    /// Drops the benchmark database.
    pub async fn finish(self) {
        drop(self.db);
        let _ = self
            .admin
            .execute_unprepared(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .await;
    }
}
