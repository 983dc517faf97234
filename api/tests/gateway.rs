//! The reference inference gateway in `examples/gateway` run as an operator would, in
//! front of an OpenAI-compatible model server (a fake one here, with fixed usage): it
//! lets customers in by their keys, relays answers (streamed ones as they come) and
//! reports one usage event per request, which the meters count per model, API key and
//! label and the invoice bills. Usage it could not report is spooled and re-sent by the
//! next start, counted once however often it is re-sent; a stop reports what is queued.

mod support;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use serde_json::{Value, json};
use support::{Backend, Killed, TestApp, lines_of};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const GATEWAY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/gateway/gateway.py"
);
const UPSTREAM_KEY: &str = "upstream-secret";
const GROUP_BY: [&str; 3] = ["model", "api_key", "label"];

// ---- The fake model server -------------------------------------------------------

/// One request the fake model server got.
#[derive(Debug, Clone)]
struct Asked {
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// Its non-streamed answer, with the usage a model server counts.
fn completion(model: &str) -> Value {
    json!({"id": "cmpl-1", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello, team A."}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42,
                  "prompt_tokens_details": {"cached_tokens": 4}}})
}

/// Its streamed answer, event by event: three content deltas, the usage chunk only when
/// the request asked for it, then `[DONE]`. The usage is not what the deltas suggest (a
/// delta may hold several tokens), so only the upstream's own count matches it.
fn stream_events(model: &str, include_usage: bool) -> Vec<String> {
    let chunk = |choices: Value| {
        json!({"id": "chunk-1", "object": "chat.completion.chunk", "model": model,
               "choices": choices})
    };
    let mut events: Vec<String> = ["Hel", "lo, ", "world"]
        .iter()
        .map(|c| {
            format!(
                "data: {}\n\n",
                chunk(json!([{"index": 0, "delta": {"content": c}}]))
            )
        })
        .collect();
    if include_usage {
        let mut last = chunk(json!([]));
        last["usage"] = json!({"prompt_tokens": 21, "completion_tokens": 17, "total_tokens": 38});
        events.push(format!("data: {last}\n\n"));
    }
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// Reads one HTTP/1.1 request: its path, `authorization` and JSON body.
async fn read_request(socket: &mut TcpStream) -> Option<Asked> {
    let r = support::receiver::read_request(socket).await?;
    Some(Asked {
        authorization: r.headers.get("authorization").cloned(),
        body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        path: r.path,
    })
}

/// Answers one connection: the models, a completion, or a stream sent chunk by chunk
/// with a pause between them, as a model server generates.
async fn answer(mut socket: TcpStream, asked: Arc<Mutex<Vec<Asked>>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    asked.lock().expect("lock").push(request.clone());
    let model = request.body["model"].as_str().unwrap_or("").to_owned();
    if request.body["stream"] != json!(true) {
        let body = if request.path == "/v1/models" {
            json!({"object": "list", "data": [{"id": "llama-3-70b", "object": "model"}]})
        } else {
            completion(&model)
        }
        .to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = socket.write_all((head + &body).as_bytes()).await;
        return;
    }
    let include_usage = request.body["stream_options"]["include_usage"] == json!(true);
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let _ = socket.write_all(head.as_bytes()).await;
    for event in stream_events(&model, include_usage) {
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        let _ = socket.write_all(chunk.as_bytes()).await;
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
}

/// The fake model server's base URL, and what it was asked.
async fn model_server() -> (String, Arc<Mutex<Vec<Asked>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket, log.clone()));
        }
    });
    (url, asked)
}

// ---- The gateway process ---------------------------------------------------------

struct Gateway {
    process: Killed,
    url: String,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

/// Starts `gateway.py` with `args` (after `--listen` and `--upstream`) and waits for it
/// to say where it listens.
fn gateway(upstream: &str, args: &[&str]) -> Gateway {
    let mut child = Command::new("python3")
        .args([
            "-u",
            GATEWAY,
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            upstream,
        ])
        .args(args)
        .env("UPSTREAM_API_KEY", UPSTREAM_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs the reference gateway");
    let stdout = lines_of(child.stdout.take().expect("stdout"));
    let stderr = lines_of(child.stderr.take().expect("stderr"));
    let process = Killed(child);
    let first = stdout
        .recv_timeout(Duration::from_secs(30))
        .expect("the gateway says where it listens");
    let url = first
        .strip_prefix("listening on ")
        .expect(&first)
        .trim_end_matches('/')
        .to_owned();
    Gateway {
        process,
        url,
        stdout,
        stderr,
    }
}

/// Waits (at most 30 s) for `reported:` lines answering for `events` events; returns
/// the (accepted, duplicate, invalid) they add up to.
async fn reported(gw: &Gateway, events: u64) -> (u64, u64, u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut total, mut printed) = ((0, 0, 0), String::new());
    while total.0 + total.1 + total.2 < events {
        assert!(
            Instant::now() < deadline,
            "the gateway reported {total:?} of {events} events:\n{printed}"
        );
        let Ok(line) = gw.stdout.try_recv() else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        printed.push_str(&line);
        printed.push('\n');
        let Some(counts) = line.strip_prefix("reported: ") else {
            continue;
        };
        let n: Vec<u64> = counts
            .split(", ")
            .map(|c| {
                c.split(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect(&line)
            })
            .collect();
        total = (total.0 + n[0], total.1 + n[1], total.2 + n[2]);
    }
    total
}

/// Waits (at most 30 s) for a line on the gateway's stderr containing `text`.
async fn logged(gw: &Gateway, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut printed = String::new();
    loop {
        match gw.stderr.try_recv() {
            Ok(line) if line.contains(text) => return line,
            Ok(line) => printed.push_str(&(line + "\n")),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
        assert!(
            Instant::now() < deadline,
            "the gateway never logged {text:?}:\n{printed}"
        );
    }
}

// ---- neocloud's side -------------------------------------------------------------

/// A metered SKU per token at `price` and a meter summing `path` of `model.request`
/// events into it, grouped by model, API key and label.
async fn token_meter(app: &TestApp, key: &str, path: &str, price: &str) {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($n: String!, $p: String!) { createSku(input: {name: $n, form: METERED, unit: \"token\", serviceCategory: AI_AND_MACHINE_LEARNING, region: \"eu-west\", listPricePerHour: $p, currency: \"USD\"}) { sku { id } } }",
            json!({"n": format!("model-{key}"), "p": price}),
        )
        .await;
    let sku = r["data"]["createSku"]["sku"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("createSku failed: {r}"));
    let meter = json!({"key": key, "eventType": "model.request", "valuePath": path,
                       "aggregation": "SUM", "groupBy": GROUP_BY, "skuId": sku});
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($i: CreateMeterInput!) { createMeter(input: $i) { meter { key } } }",
            json!({"i": meter}),
        )
        .await;
    assert_eq!(r["data"]["createMeter"]["meter"]["key"], key, "{r}");
}

/// An operator-wide usage reporter key, as a gateway for every tenant holds.
async fn reporter_key(app: &TestApp) -> String {
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createApiKey(role: USAGE_REPORTER) { apiKey } }",
            json!({}),
        )
        .await;
    r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .unwrap_or_else(|| panic!("createApiKey failed: {r}"))
        .to_owned()
}

/// The tenant's meter usage of the last and next hour: (meter, group, quantity, events).
/// The hour is the wall clock's: the gateway times its events by it.
async fn usage(app: &TestApp, key: &str) -> BTreeSet<(String, Vec<String>, String, i64)> {
    let now = Utc::now();
    let r = app
        .gql(
            Some(key),
            "query($f: DateTime!, $t: DateTime!) { meterUsage(from: $f, to: $t) { meterKey group quantity events } }",
            json!({"f": (now - TimeDelta::hours(1)).to_rfc3339(), "t": (now + TimeDelta::hours(1)).to_rfc3339()}),
        )
        .await;
    let rows = r["data"]["meterUsage"]
        .as_array()
        .unwrap_or_else(|| panic!("meterUsage failed: {r}"));
    rows.iter()
        .map(|u| {
            let group = serde_json::from_value(u["group"].clone()).expect("group");
            let text = |f: &str| u[f].as_str().expect(f).to_owned();
            (
                text("meterKey"),
                group,
                text("quantity"),
                u["events"].as_i64().expect("events"),
            )
        })
        .collect()
}

fn row(meter: &str, group: [&str; 3], quantity: &str) -> (String, Vec<String>, String, i64) {
    (
        meter.to_owned(),
        group.map(str::to_owned).to_vec(),
        quantity.to_owned(),
        1,
    )
}

fn keys_file(dir: &tempfile::TempDir, keys: &Value) -> String {
    let path = dir.path().join("keys.json");
    std::fs::write(&path, keys.to_string()).expect("write the keys file");
    path.to_str().expect("a UTF-8 path").to_owned()
}

fn chat(gw: &Gateway, key: &str, body: Value) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", gw.url))
        .bearer_auth(key)
        .json(&body)
}

/// Sends a streamed request; returns the body as the client got it, and in how many reads.
async fn stream_of(request: reqwest::RequestBuilder) -> (String, usize) {
    let mut res = request.send().await.expect("request");
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let (mut body, mut reads) = (Vec::new(), 0);
    while let Some(piece) = res.chunk().await.expect("the stream") {
        body.extend_from_slice(&piece);
        reads += 1;
    }
    (String::from_utf8(body).expect("UTF-8"), reads)
}

fn ask(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "Say hello to the team"}]})
}

// ---- The journeys ----------------------------------------------------------------

/// Two tenants' keys through one gateway: a non-streamed request labelled by its `user`,
/// a streamed one labelled by `X-Label`, another tenant's streamed one that asks for its
/// usage, and an unknown key. The meters hold exactly what the model server counted, per
/// tenant, model, key and label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_gateway_reports_each_request_as_the_model_server_counted_it() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("sqlite");
    token_meter(&app, "input-tokens", "input_tokens", "0.01").await;
    token_meter(&app, "output-tokens", "output_tokens", "0.03").await;
    token_meter(&app, "cached-tokens", "cached_tokens", "0.005").await;
    let (acme, acme_admin) = app.create_tenant("acme").await;
    let (globex, globex_admin) = app.create_tenant("globex").await;
    let reporter = reporter_key(&app).await;
    let (upstream, asked) = model_server().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let keys = keys_file(
        &dir,
        &json!({
            "sk-acme-prod": {"tenant": acme, "name": "prod-key"},
            "sk-globex-ci": {"tenant": globex, "name": "ci"},
        }),
    );
    let gw = gateway(
        &upstream,
        &[
            "--api",
            &app.url,
            "--reporter-key",
            &reporter,
            "--keys",
            &keys,
        ],
    );

    // Non-streamed: the model server's answer, unchanged.
    let mut body = ask("llama-3-70b");
    body["user"] = json!("team-a");
    let res = chat(&gw, "sk-acme-prod", body)
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        completion("llama-3-70b")
    );

    // Streamed: relayed as it comes (in several reads), byte for byte as the model
    // server would have sent it: the usage chunk the gateway asked for only reaches a
    // client that asked for it too.
    let mut body = ask("qwen-2.5-7b");
    body["stream"] = json!(true);
    let res = chat(&gw, "sk-acme-prod", body).header("x-label", "nightly");
    let (streamed, reads) = stream_of(res).await;
    assert_eq!(streamed, stream_events("qwen-2.5-7b", false).concat());
    assert!(
        reads > 1,
        "the stream arrived in one piece: held back, not relayed"
    );

    // Another tenant's key, streamed with its usage, no label.
    let mut body = ask("llama-3-70b");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let (streamed, _) = stream_of(chat(&gw, "sk-globex-ci", body)).await;
    assert_eq!(streamed, stream_events("llama-3-70b", true).concat());

    // An unknown key, refused as OpenAI does.
    let res = chat(&gw, "sk-nobody", ask("llama-3-70b"))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), 401);
    let refused: Value = res.json().await.expect("JSON");
    assert_eq!(refused["error"]["code"], "invalid_api_key", "{refused}");
    assert!(refused["error"]["message"].is_string(), "{refused}");
    let models: Value = reqwest::Client::new()
        .get(format!("{}/v1/models", gw.url))
        .bearer_auth("sk-acme-prod")
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(models["data"][0]["id"], "llama-3-70b", "{models}");

    // The model server saw the gateway's key, never a customer's; the streamed request
    // asked for its usage; the unknown key never got through.
    let asked = asked.lock().expect("lock").clone();
    let paths: Vec<&str> = asked.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions",
            "/v1/chat/completions",
            "/v1/chat/completions",
            "/v1/models"
        ]
    );
    for a in &asked {
        assert_eq!(
            a.authorization.as_deref(),
            Some("Bearer upstream-secret"),
            "{a:?}"
        );
    }
    for streamed in &asked[1..3] {
        let options = &streamed.body["stream_options"];
        assert_eq!(options["include_usage"], true, "{streamed:?}");
    }
    assert_eq!(
        asked[0].body["user"], "team-a",
        "the request goes on as the customer sent it"
    );

    assert_eq!(reported(&gw, 3).await, (3, 0, 0));
    assert_eq!(
        usage(&app, &acme_admin).await,
        BTreeSet::from([
            row("cached-tokens", ["llama-3-70b", "prod-key", "team-a"], "4"),
            row("cached-tokens", ["qwen-2.5-7b", "prod-key", "nightly"], "0"),
            // 12 prompt tokens, of which 4 read from cache.
            row("input-tokens", ["llama-3-70b", "prod-key", "team-a"], "8"),
            row("input-tokens", ["qwen-2.5-7b", "prod-key", "nightly"], "21"),
            row("output-tokens", ["llama-3-70b", "prod-key", "team-a"], "30"),
            row(
                "output-tokens",
                ["qwen-2.5-7b", "prod-key", "nightly"],
                "17"
            ),
        ])
    );
    assert_eq!(
        usage(&app, &globex_admin).await,
        BTreeSet::from([
            row("cached-tokens", ["llama-3-70b", "ci", ""], "0"),
            row("input-tokens", ["llama-3-70b", "ci", ""], "21"),
            row("output-tokens", ["llama-3-70b", "ci", ""], "17"),
        ])
    );
    assert_eq!(
        metered_lines(&app, &acme_admin).await,
        BTreeSet::from([
            (
                "model-cached-tokens".to_owned(),
                "4".to_owned(),
                "0.02".to_owned()
            ),
            (
                "model-input-tokens".to_owned(),
                "29".to_owned(),
                "0.29".to_owned()
            ),
            (
                "model-output-tokens".to_owned(),
                "47".to_owned(),
                "1.41".to_owned()
            ),
        ])
    );
    // Nothing more comes: the refused key reported nothing.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let late: Vec<String> = gw.stdout.try_iter().collect();
    assert!(late.iter().all(|l| !l.starts_with("reported:")), "{late:?}");
}

/// The upcoming invoice's metered lines: (SKU, quantity, amount).
async fn metered_lines(app: &TestApp, key: &str) -> BTreeSet<(String, String, String)> {
    let r = app
        .gql(
            Some(key),
            "{ upcomingInvoice { lines { metric sku quantity amount } } }",
            json!({}),
        )
        .await;
    let lines = r["data"]["upcomingInvoice"]["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("no invoice: {r}"));
    lines
        .iter()
        .filter(|l| l["metric"] == "METERED")
        .map(|l| {
            let text = |f: &str| {
                l[f].as_str()
                    .unwrap_or_else(|| panic!("{f}: {l}"))
                    .to_owned()
            };
            (text("sku"), text("quantity"), text("amount"))
        })
        .collect()
}

/// A gateway whose reports are refused (a key neocloud does not know) keeps the event in
/// its spool; the next start re-sends it and it is counted; re-sent once more (as after
/// a lost answer) it is a duplicate, counted once. A stop reports what is queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_gateway_could_not_report_is_re_sent_at_its_next_start_and_counted_once() {
    let app = TestApp::spawn(Backend::Sqlite).await.expect("sqlite");
    token_meter(&app, "input-tokens", "input_tokens", "0.01").await;
    let (acme, admin) = app.create_tenant("acme").await;
    let reporter = reporter_key(&app).await;
    let (upstream, _) = model_server().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let keys = keys_file(
        &dir,
        &json!({"sk-acme-prod": {"tenant": acme, "name": "prod-key"}}),
    );
    let spool = dir.path().join("spool.jsonl");
    let spool_arg = spool.to_str().expect("a UTF-8 path");
    let start = |key: &str| {
        gateway(
            &upstream,
            &[
                "--api",
                &app.url,
                "--reporter-key",
                key,
                "--keys",
                &keys,
                "--spool",
                spool_arg,
            ],
        )
    };
    let mut body = ask("llama-3-70b");
    body["user"] = json!("team-a");

    let first = start("nc_not_a_key");
    let res = chat(&first, "sk-acme-prod", body.clone())
        .send()
        .await
        .expect("request");
    assert_eq!(
        res.status(),
        200,
        "refused reports do not hold the customer up"
    );
    let line = logged(&first, "HTTP 401").await;
    assert!(line.contains("spool"), "{line}");
    let spooled = std::fs::read_to_string(&spool).expect("the spool");
    let events: Vec<Value> = spooled
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event"))
        .collect();
    assert_eq!(events.len(), 1, "{spooled}");
    assert_eq!(
        (&events[0]["type"], &events[0]["subject"]),
        (&json!("model.request"), &json!(acme))
    );
    // 12 prompt tokens, 4 of them cached.
    assert_eq!(events[0]["data"]["input_tokens"], 8, "{spooled}");
    drop(first);
    assert!(usage(&app, &admin).await.is_empty());

    let mut second = start(&reporter);
    assert_eq!(reported(&second, 1).await, (1, 0, 0));
    assert_eq!(
        std::fs::read_to_string(&spool).expect("the spool"),
        "",
        "acknowledged, it leaves the spool"
    );
    let counted = BTreeSet::from([row(
        "input-tokens",
        ["llama-3-70b", "prod-key", "team-a"],
        "8",
    )]);
    assert_eq!(usage(&app, &admin).await, counted);

    // A stop right after a request still reports it, then exits.
    body["user"] = json!("team-b");
    let res = chat(&second, "sk-acme-prod", body)
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), 200);
    let pid = second.process.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    assert_eq!(reported(&second, 1).await, (1, 0, 0));
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = second.process.0.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "the gateway did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
    let mut counted = counted;
    counted.insert(row(
        "input-tokens",
        ["llama-3-70b", "prod-key", "team-b"],
        "8",
    ));
    assert_eq!(usage(&app, &admin).await, counted);

    // The first event sent once more, same id: a duplicate, nothing counted twice.
    std::fs::write(&spool, &spooled).expect("restore the spool");
    let third = start(&reporter);
    assert_eq!(reported(&third, 1).await, (0, 1, 0));
    assert_eq!(usage(&app, &admin).await, counted);
}
