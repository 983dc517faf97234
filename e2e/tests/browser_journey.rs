//! The portal and the console in a real browser: `neocloud demo` as a separate process,
//! driven in Debian's Chromium by Playwright (`e2e/browser/journeys.mjs`, which also runs
//! axe-core on every page and keeps a screenshot of each). The tenant journey, the
//! operator journey (signing in through a real OpenID Connect provider,
//! `e2e/browser/oidc-provider.mjs`) and the member kept out of the console are the script's; this test
//! starts the demo (taking payments through `localstripe`, whose Stripe.js the portal
//! loads to add a card), hands the script the demo's URL and keys, and fails with its output.
//!
//! Needs `chromium` and `e2e/browser/node_modules` (`scripts/test-deps.sh` installs both);
//! missing, the test is skipped, unless `NEOCLOUD_REQUIRE_BROWSER=1` (CI), which fails it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use neocloud_e2e::Demo;
use neocloud_e2e::localstripe::{self, LocalStripe};

const CHROMIUM: &str = "/usr/bin/chromium";
const OIDC_SECRET: &str = "console-client-secret";

/// The operators' identity provider (`oidc-provider.mjs`), redirecting to `app_url`; it
/// prints to `log`.
fn identity_provider(app_url: &str, log: &Path) -> (Child, String) {
    let port = neocloud_e2e::free_port();
    let out = std::fs::File::create(log).expect("log file");
    let child = Command::new("node")
        .arg(browser_dir().join("oidc-provider.mjs"))
        .env("OIDC_PORT", port.to_string())
        .env("OIDC_CLIENT_SECRET", OIDC_SECRET)
        .env(
            "OIDC_REDIRECT_URI",
            format!("{app_url}/v1/session/oidc/callback"),
        )
        .env("OIDC_POST_LOGOUT_URI", format!("{app_url}/console"))
        .stdout(out.try_clone().expect("log"))
        .stderr(out)
        .spawn()
        .expect("node");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains("oidc-provider ready")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the identity provider did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    (child, format!("http://127.0.0.1:{port}"))
}

/// `aiosmtpd` (`scripts/test-deps.sh` installs it) on a free port, keeping mail in
/// `dir/maildir`; its `smtp://` URL.
fn mail_server(dir: &Path) -> (Child, String) {
    let port = neocloud_e2e::free_port();
    let child = Command::new("python3")
        .args(["-m", "aiosmtpd", "-n", "-l"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["-c", "aiosmtpd.handlers.Mailbox"])
        .arg(dir.join("maildir"))
        .spawn()
        .expect("aiosmtpd: run scripts/test-deps.sh");
    (child, format!("smtp://127.0.0.1:{port}"))
}

/// Kills a helper process when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("browser")
}

/// Whether the browser and the script's packages are here; a skip is only allowed when
/// the environment does not require them.
fn browser_available() -> bool {
    let present = Path::new(CHROMIUM).exists()
        && browser_dir().join("node_modules/playwright-core").exists()
        && Command::new("node").arg("--version").output().is_ok();
    assert!(
        present || std::env::var("NEOCLOUD_REQUIRE_BROWSER").as_deref() != Ok("1"),
        "chromium, node and e2e/browser/node_modules are required: run scripts/test-deps.sh"
    );
    if !present {
        eprintln!("no chromium or playwright-core: skipping the browser journeys");
    }
    present
}

/// Where screenshots go: `NEOCLOUD_SCREENSHOTS` (CI keeps it), else a temporary folder.
fn screenshot_dir(scratch: &Path) -> PathBuf {
    std::env::var_os("NEOCLOUD_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch.join("screenshots"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn portal_and_console_in_chromium() {
    if !browser_available() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let port = neocloud_e2e::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let (idp, issuer) = identity_provider(&url, &dir.path().join("oidc-provider.log"));
    let _idp = Reaped(idp);
    let database = format!("sqlite://{}?mode=rwc", dir.path().join("demo.db").display());
    // Cards are added through Stripe.js, here the emulator's, served by the emulator.
    let Some(stripe) = LocalStripe::start().await else {
        return;
    };
    // Mail goes to a real SMTP server, which keeps it in a maildir the script reads.
    let (smtp, smtp_url) = mail_server(dir.path());
    let _smtp = Reaped(smtp);
    let stripe_api = format!("http://{}", stripe.addr);
    let stripe_js = format!("{stripe_api}/js.stripe.com/v3/");
    let env = [
        ("NEOCLOUD_STRIPE_SECRET_KEY", localstripe::KEY),
        ("NEOCLOUD_STRIPE_API_BASE", stripe_api.as_str()),
        ("NEOCLOUD_STRIPE_PUBLISHABLE_KEY", "pk_test_e2e"),
        ("NEOCLOUD_STRIPE_JS_URL", stripe_js.as_str()),
        ("NEOCLOUD_MAIL__SMTP_URL", smtp_url.as_str()),
        ("NEOCLOUD_MAIL__FROM", "Acme Cloud <no-reply@cloud.example>"),
        ("NEOCLOUD_MAIL__PUBLIC_URL", url.as_str()),
        ("NEOCLOUD_OIDC__ISSUER", issuer.as_str()),
        ("NEOCLOUD_OIDC__CLIENT_ID", "neocloud-console"),
        ("NEOCLOUD_OIDC__CLIENT_SECRET", OIDC_SECRET),
        ("NEOCLOUD_OIDC__PUBLIC_URL", url.as_str()),
        ("NEOCLOUD_OIDC__OPERATOR_EMAILS", "ops@example.com"),
    ];
    let demo = Demo::start_on(
        dir.path(),
        &database,
        &format!("127.0.0.1:{port}"),
        &[],
        &env,
    )
    .await;
    let credentials = dir.path().join("credentials.json");
    let output = Command::new("node")
        .arg(browser_dir().join("journeys.mjs"))
        .env("NEOCLOUD_URL", &demo.url)
        .env("NEOCLOUD_CREDENTIALS", &credentials)
        .env("NEOCLOUD_SCREENSHOTS", screenshot_dir(dir.path()))
        .env("NEOCLOUD_MAILDIR", dir.path().join("maildir"))
        .env("CHROMIUM", CHROMIUM)
        .output()
        .expect("run node");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "the browser journeys failed:\n{printed}"
    );
    for journey in ["tenant", "operator", "member", "provider"] {
        assert!(
            printed.contains(&format!("journey {journey}: ok")),
            "{journey} did not finish:\n{printed}"
        );
    }
}
