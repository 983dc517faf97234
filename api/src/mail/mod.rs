//! Mail to people: invitations and password-reset links. A mail is queued in the
//! transaction that issues its link (`mail_outbox`, [`store`]), so it exists if and only
//! if the link does, and a worker ([`worker`]) sends it over SMTP, retrying a mail server
//! that is down. Without `mail.smtp_url` nothing is queued and admins hand links over.
//!
//! A body holds a one-time link: it is cleared once the mail is sent or given up, and
//! never logged.

pub mod store;
pub mod worker;

use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use neocloud_schema::entity::mail;
use secrecy::ExposeSecret;

use crate::settings::MailSettings;

/// What a mail is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Invitation,
    PasswordReset,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Invitation => "invitation",
            Kind::PasswordReset => "password_reset",
        }
    }
}

/// A mail's words.
#[derive(Debug, Clone)]
pub struct Letter {
    pub kind: Kind,
    pub subject: String,
    pub body: String,
}

/// Why a mail was not sent.
#[derive(Debug)]
pub enum Failure {
    /// The server refused it for good (a 5xx answer, an address it cannot take).
    Permanent(String),
    /// Worth trying again later (the server is down, a 4xx answer).
    Transient(String),
}

/// The configured mail server, sender and the address links point to.
pub struct Mailer {
    from: Mailbox,
    public_url: String,
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The transport holds the server's password: never print it.
        write!(f, "Mailer({})", self.from)
    }
}

/// A web app people sign in to, which the links of mails open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum App {
    /// A tenant's people.
    Portal,
    /// A hardware provider's people.
    ProviderConsole,
}

impl App {
    pub fn path(self) -> &'static str {
        match self {
            App::Portal => "/portal",
            App::ProviderConsole => "/provider",
        }
    }

    fn name(self) -> &'static str {
        match self {
            App::Portal => "cloud portal",
            App::ProviderConsole => "provider console",
        }
    }
}

impl Mailer {
    /// The mailer of `settings`, or none without `smtp_url`; a message naming what is
    /// wrong with them otherwise.
    pub fn from_settings(settings: &MailSettings) -> Result<Option<Mailer>, String> {
        let Some(url) = &settings.smtp_url else {
            return Ok(None);
        };
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose_secret())
            .map_err(|e| format!("smtp_url: not an smtp:// or smtps:// URL ({e})"))?
            .build();
        let from = settings.from.parse::<Mailbox>().map_err(|e| {
            format!("from: not a mail address like `Cloud <no-reply@cloud.example>` ({e})")
        })?;
        let public_url = settings.public_url.trim_end_matches('/').to_owned();
        let ok = reqwest::Url::parse(&public_url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
        if !ok {
            return Err("public_url: the http(s) address people open the portal at".into());
        }
        Ok(Some(Mailer {
            from,
            public_url,
            transport,
        }))
    }

    /// The link of `app` that accepts `token` (an invitation or a reset).
    fn link(&self, app: App, token: &str) -> String {
        format!("{}{}/invitation#{token}", self.public_url, app.path())
    }

    /// An invitation to `app` of `owner` (a tenant or a provider) with `role`.
    pub fn invitation(&self, app: App, owner: &str, role: &str, token: &str) -> Letter {
        let place = app.name();
        Letter {
            kind: Kind::Invitation,
            subject: format!("You are invited to {owner}"),
            body: format!(
                "Hello,\n\nyou are invited to the {place} of {owner}, as {role}.\n\n\
                 Choose your password here (the link works once, for 7 days):\n\n{}\n\n\
                 If you did not expect this, ignore this mail.\n",
                self.link(app, token)
            ),
        }
    }

    /// A link to set a new password.
    pub fn password_reset(&self, app: App, token: &str) -> Letter {
        Letter {
            kind: Kind::PasswordReset,
            subject: "Set a new password".into(),
            body: format!(
                "Hello,\n\nsomeone asked to set a new password for this address.\n\n\
                 Set it here (the link works once, for 24 hours):\n\n{}\n\n\
                 If it was not you, ignore this mail: your password stays as it is.\n",
                self.link(app, token)
            ),
        }
    }

    /// Sends one queued mail.
    pub async fn send(&self, queued: &mail::Model) -> Result<(), Failure> {
        let to = queued
            .recipient
            .parse::<Mailbox>()
            .map_err(|e| Failure::Permanent(format!("not a mail address: {e}")))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(queued.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(queued.body.clone().unwrap_or_default())
            .map_err(|e| Failure::Permanent(e.to_string()))?;
        match self.transport.send(message).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_permanent() => Err(Failure::Permanent(e.to_string())),
            Err(e) => Err(Failure::Transient(e.to_string())),
        }
    }
}
