//! `neocloud`: the server binary. `serve` runs the API; `demo` seeds and serves a complete
//! marketplace on the embedded defaults; `migrate` brings a database up to date; `admin`
//! bootstraps operator access; `schema` prints the GraphQL schema.

// No panics on values from outside, no `as` cast where a checked conversion exists, and
// no function longer than `too-many-lines-threshold` (clippy.toml).
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless,
    clippy::too_many_lines
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        clippy::cast_lossless,
        clippy::too_many_lines
    )
)]

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use neocloud_api::settings::{LogFormat, Overrides, Role, Settings};
use neocloud_api::startup::Application;
use neocloud_api::{audit, auth, db, demo, graphql, nats, telemetry};

/// How long a stopping demo waits for its simulated agents to close their windows.
const AGENTS_STOP: std::time::Duration = std::time::Duration::from_secs(15);

#[derive(Debug, Parser)]
#[command(
    name = "neocloud",
    version,
    about = "Sell GPUs as a service: ordering, placement, metering, billing."
)]
struct Cli {
    /// A TOML settings file (also NEOCLOUD_CONFIG).
    #[arg(long, global = true, env = "NEOCLOUD_CONFIG")]
    config: Option<PathBuf>,
    /// Log format (also NEOCLOUD_LOG_FORMAT).
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Args)]
struct DatabaseArg {
    /// `sqlite://FILE?mode=rwc` or `postgres://…` (also NEOCLOUD_DATABASE_URL).
    #[arg(long)]
    database_url: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the API, ingest and workers.
    Serve {
        #[command(flatten)]
        database: DatabaseArg,
        /// Address to listen on (also NEOCLOUD_LISTEN; default 127.0.0.1:8080).
        #[arg(long)]
        listen: Option<String>,
        /// What this process runs: all, api, ingest (JetStream workers) or worker
        /// (background jobs) (also NEOCLOUD_ROLE; default all).
        #[arg(long, value_enum)]
        role: Option<Role>,
    },
    /// Migrate, seed a demo fleet, plans and tenants, and serve.
    Demo {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        listen: Option<String>,
        /// Write the generated keys as JSON to this file.
        #[arg(long)]
        credentials_out: Option<PathBuf>,
        /// Leave sampling to external agents (`neocloud-agent run`) with the agent tokens.
        #[arg(long)]
        no_agents: bool,
    },
    /// Apply pending database migrations.
    Migrate {
        #[command(flatten)]
        database: DatabaseArg,
    },
    /// Operator bootstrap.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Print the GraphQL schema (SDL).
    Schema,
    /// Print the event catalog as JSON Schema (`GET /v1/events/schema`).
    EventSchema,
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Create an operator key and print it (shown once).
    CreateOperatorKey {
        #[command(flatten)]
        database: DatabaseArg,
        /// A note to tell keys apart.
        #[arg(long, default_value = "created by neocloud admin")]
        label: String,
    },
    /// Prove the audit log's hash chains (global and per tenant); exits 1 where one
    /// breaks. The head it prints is the anchor to record elsewhere and pass next time.
    VerifyAudit {
        #[command(flatten)]
        database: DatabaseArg,
        /// A place and hash recorded earlier (`SEQ:HASH`, repeatable): the entry must still
        /// be there as it was (proves the tail was not cut).
        #[arg(long = "anchor")]
        anchors: Vec<String>,
    },
    /// Print sealed audit entries after a place as JSON lines, with their chain places and
    /// hashes (for a SIEM: run it with the last place it received).
    ExportAudit {
        #[command(flatten)]
        database: DatabaseArg,
        /// The last place already exported (0: from the start).
        #[arg(long, default_value_t = 0)]
        after: i64,
    },
    /// Make a new NATS trust chain (operator, system account and usage account, each with a
    /// signing key): writes nats-server.conf (its resolver keeps accounts in --out/jwt),
    /// neocloud-nats.toml and operator.nk into --out.
    NatsBootstrap {
        /// A directory to write into (created; existing files are not overwritten).
        #[arg(long)]
        out: PathBuf,
    },
}

fn load(cli: &Cli, database_url: Option<&str>, listen: Option<&str>) -> anyhow::Result<Settings> {
    load_as(cli, database_url, listen, None)
}

fn load_as(
    cli: &Cli,
    database_url: Option<&str>,
    listen: Option<&str>,
    role: Option<Role>,
) -> anyhow::Result<Settings> {
    let overrides = Overrides {
        database_url: database_url.map(str::to_owned),
        listen: listen.map(str::to_owned),
        log_format: cli.log_format,
        role,
    };
    Ok(Settings::load(cli.config.as_deref(), &overrides)?)
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    if let Err(err) = run(cli).await {
        eprintln!("neocloud: {err:#}");
        std::process::exit(1);
    }
}

/// `neocloud demo`: seeds the embedded marketplace, prints how to reach it, runs one
/// simulated agent per node (unless `no_agents`) and serves until stopped.
async fn run_demo(
    settings: Settings,
    credentials_out: Option<&std::path::Path>,
    no_agents: bool,
) -> anyhow::Result<()> {
    let db = db::connect(&settings.database_url)
        .await
        .context("cannot open the database")?;
    db::migrate(&db)
        .await
        .context("cannot migrate the database")?;
    let app =
        Application::build_with_db(settings, db.clone(), neocloud_schema::clock::system()).await?;
    let url = format!("http://127.0.0.1:{}", app.port());
    let credentials = demo::seed(&db, &url)
        .await
        .map_err(|e| anyhow::anyhow!("seeding the demo failed: {}", e.message()))?;
    if let Some(path) = credentials_out {
        demo::write_credentials(path, &credentials)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    print_credentials(&credentials, credentials_out);
    let (stop_agents, agents_stopped) = tokio::sync::watch::channel(false);
    let agents = if no_agents {
        Vec::new()
    } else {
        start_agents(&url, &credentials, &agents_stopped)?
    };
    app.run_until_stopped().await?;
    // Agents close their open windows into their spools; the process waits for them (a
    // bounded time) rather than cancelling them mid-stop.
    let _ = stop_agents.send(true);
    let all_stopped = async {
        for agent in agents {
            let _ = agent.await;
        }
    };
    if tokio::time::timeout(AGENTS_STOP, all_stopped)
        .await
        .is_err()
    {
        tracing::warn!(
            "Simulated agents did not stop in time; their spools keep what they sampled."
        );
    }
    Ok(())
}

fn print_credentials(credentials: &demo::Credentials, written_to: Option<&std::path::Path>) {
    println!("neocloud demo is running.");
    println!(
        "  portal:        {}/portal (sign in with a tenant key)",
        credentials.url
    );
    println!(
        "  console:       {}/console (the operator key)",
        credentials.url
    );
    println!("  GraphiQL:      {}", credentials.graphiql);
    println!("  operator key:  {}", credentials.operator_key);
    for tenant in &credentials.tenants {
        println!("  tenant {:<16} {}", tenant.name, tenant.key);
    }
    for provider in &credentials.providers {
        println!("  provider {:<14} {}", provider.name, provider.key);
    }
    println!(
        "  agent tokens:  {} nodes{}",
        credentials.agents.len(),
        written_to.map_or(String::new(), |p| format!(" (in {})", p.display()))
    );
}

/// One simulated agent per demo node, spooling under `./neocloud-demo-spool`.
fn start_agents(
    url: &str,
    credentials: &demo::Credentials,
    shutdown: &tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let spool_root = std::env::current_dir()?.join("neocloud-demo-spool");
    let mut agents = Vec::new();
    for (seed, agent) in (0u64..).zip(&credentials.agents) {
        let simulated = neocloud_agent::SimulatedAgent::new(
            url,
            &agent.token,
            seed,
            spool_root.join(&agent.node),
        );
        let node = agent.node.clone();
        let shutdown = shutdown.clone();
        agents.push(tokio::spawn(async move {
            if let Err(err) = simulated.run(shutdown).await {
                tracing::warn!(%node, error = %err, "Simulated agent stopped.");
            }
        }));
    }
    println!(
        "  simulated agents: one per node, spooling under {}",
        spool_root.display()
    );
    Ok(agents)
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match &cli.command {
        Command::Schema => {
            print!("{}", graphql::sdl());
            Ok(())
        }
        Command::EventSchema => {
            let doc = neocloud_metering::events::catalog::document();
            println!("{}", serde_json::to_string_pretty(&doc)?);
            Ok(())
        }
        Command::Serve {
            database,
            listen,
            role,
        } => {
            let settings = load_as(
                &cli,
                database.database_url.as_deref(),
                listen.as_deref(),
                *role,
            )?;
            let _telemetry = telemetry::init(settings.log_format, &settings.log_filter)?;
            let role = settings.role;
            let app = Application::build(settings).await?;
            tracing::info!(port = app.port(), ?role, "Serving.");
            app.run_until_stopped().await?;
            Ok(())
        }
        Command::Demo {
            database,
            listen,
            credentials_out,
            no_agents,
        } => {
            let settings = load(&cli, database.database_url.as_deref(), listen.as_deref())?;
            let _telemetry = telemetry::init(settings.log_format, &settings.log_filter)?;
            run_demo(settings, credentials_out.as_deref(), *no_agents).await
        }
        Command::Migrate { database } => {
            let settings = load(&cli, database.database_url.as_deref(), None)?;
            let _telemetry = telemetry::init(settings.log_format, &settings.log_filter)?;
            let db = db::connect(&settings.database_url).await?;
            db::migrate(&db).await?;
            tracing::info!("Database is up to date.");
            Ok(())
        }
        Command::Admin { command } => admin(&cli, command).await,
    }
}

/// `neocloud admin …`.
async fn admin(cli: &Cli, command: &AdminCommand) -> anyhow::Result<()> {
    match command {
        AdminCommand::CreateOperatorKey { database, label } => {
            let settings = load(cli, database.database_url.as_deref(), None)?;
            let db = db::connect(&settings.database_url).await?;
            db::migrate(&db).await?;
            let minted = auth::bootstrap_operator_key(&db, label)
                .await
                .map_err(|e| anyhow::anyhow!("{}", e.message()))?;
            println!("{}", minted.secret);
            Ok(())
        }
        AdminCommand::NatsBootstrap { out } => nats_bootstrap(out),
        AdminCommand::VerifyAudit { database, anchors } => {
            let settings = load(cli, database.database_url.as_deref(), None)?;
            let db = db::connect(&settings.database_url).await?;
            verify_audit(&db, anchors).await
        }
        AdminCommand::ExportAudit { database, after } => {
            let settings = load(cli, database.database_url.as_deref(), None)?;
            let db = db::connect(&settings.database_url).await?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            audit::chain::export(&db, *after, &mut out).await?;
            Ok(())
        }
    }
}

/// `neocloud admin verify-audit`: what the chains hold, each break, and failure if any.
async fn verify_audit(db: &sea_orm::DatabaseConnection, anchors: &[String]) -> anyhow::Result<()> {
    let anchors = anchors
        .iter()
        .map(|a| {
            let (seq, hash) = a.split_once(':').context("an anchor is SEQ:HASH")?;
            Ok((
                seq.parse::<i64>().context("an anchor's SEQ")?,
                hash.to_owned(),
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let found = audit::chain::verify(db, &anchors).await?;
    print!("{}", audit::chain::describe(&found));
    anyhow::ensure!(found.holds(), "the audit log's chain is broken");
    Ok(())
}

/// `neocloud admin nats-bootstrap --out DIR`: the nats-server configuration, neocloud's
/// settings (with the account signing seed) and the operator's seed, the secrets readable
/// by the owner only.
fn nats_bootstrap(out: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let resolver_dir = std::fs::canonicalize(out)?.join("jwt");
    let chain = nats::credentials::bootstrap(chrono::Utc::now().timestamp(), &resolver_dir)?;
    let settings = format!(
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\naccount = \"{}\"\naccount_signing_seed = \"{}\"\n\
         operator_signing_seed = \"{}\"\nsystem_account = \"{}\"\nsystem_signing_seed = \"{}\"\n",
        chain.account,
        chain.account_signing_seed,
        chain.operator_signing_seed,
        chain.system_account,
        chain.system_signing_seed
    );
    let operator = format!("{}\n", chain.operator_seed);
    for (name, text, mode) in [
        ("nats-server.conf", chain.server_config.as_str(), 0o644),
        ("neocloud-nats.toml", settings.as_str(), 0o600),
        ("operator.nk", operator.as_str(), 0o600),
    ] {
        let path = out.join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
