//! The calls neocloud makes to Stripe (async-stripe, core API only): a customer per
//! tenant, attaching a default payment method, one off-session PaymentIntent per
//! finalized invoice or top-up, Stripe-hosted invoices for customers who pay by transfer,
//! Connect transfers paying providers, and reading Stripe's event log to catch up on
//! missed webhooks. Every call that creates
//! something carries an idempotency key derived from our own ids, so repeating it (after
//! a crash, a timeout or a retry) creates nothing new at Stripe.

use std::collections::HashMap;

use neocloud_schema::ids::TenantId;
use serde::Serialize;
use serde_json::Value;
use stripe::{
    AttachPaymentMethod, Client, CreateCustomer, CreatePaymentIntent, Currency, Customer,
    CustomerId, CustomerInvoiceSettings, PaymentIntent, PaymentIntentOffSession, PaymentMethod,
    PaymentMethodId, RangeQuery, RequestStrategy, StripeError, UpdateCustomer,
};

/// Most pages of events read in one catch-up (100 events a page).
const MAX_EVENT_PAGES: usize = 50;

/// What went wrong talking to Stripe.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// Stripe refused the request (a declined card, a bad id): retrying the same request
    /// will not help.
    #[error("Stripe refused: {0}")]
    Refused(String),
    /// Network trouble, a timeout or a Stripe server error: worth retrying.
    #[error("Stripe unreachable: {0}")]
    Transient(String),
}

impl From<StripeError> for GatewayError {
    fn from(e: StripeError) -> Self {
        match e {
            // 409: another request with the same idempotency key is in flight (another
            // worker's); 429: rate limited. Both pass.
            StripeError::Stripe(request)
                if request.http_status < 500 && !matches!(request.http_status, 409 | 429) =>
            {
                GatewayError::Refused(
                    request
                        .message
                        .clone()
                        .unwrap_or_else(|| format!("HTTP {}", request.http_status)),
                )
            }
            other => GatewayError::Transient(other.to_string()),
        }
    }
}

/// A configured Stripe account.
#[derive(Clone)]
pub struct Gateway {
    client: Client,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The client holds the secret key: never print it.
        f.write_str("Gateway")
    }
}

/// The PaymentIntent a charge created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    pub id: String,
}

impl Gateway {
    /// `api_base`: Stripe's own when `None` (a localstripe URL in tests); it must be an
    /// absolute http(s) URL (settings check it before this is called).
    pub fn new(secret_key: &str, api_base: Option<&str>) -> Gateway {
        let client = match api_base {
            Some(base) => Client::from_url(base, secret_key),
            None => Client::new(secret_key),
        };
        Gateway { client }
    }

    fn idempotent(&self, key: String) -> Client {
        self.client
            .clone()
            .with_strategy(RequestStrategy::Idempotent(key))
    }

    /// Creates the tenant's customer (once: the key is the tenant's id).
    pub async fn create_customer(
        &self,
        tenant: TenantId,
        name: &str,
    ) -> Result<String, GatewayError> {
        let metadata = HashMap::from([("tenant_id".to_owned(), tenant.to_string())]);
        let customer = Customer::create(
            &self.idempotent(format!("neocloud-customer-{tenant}")),
            CreateCustomer {
                name: Some(name),
                metadata: Some(metadata),
                ..CreateCustomer::new()
            },
        )
        .await?;
        Ok(customer.id.to_string())
    }

    /// The customer's id and `payment_method` as Stripe has it; refused when it is attached
    /// to another customer.
    async fn method_of(
        &self,
        customer: &str,
        payment_method: &str,
    ) -> Result<(CustomerId, PaymentMethodId, Value), GatewayError> {
        let customer_id: CustomerId = customer
            .parse()
            .map_err(|_| GatewayError::Refused("not a customer id".into()))?;
        let method: PaymentMethodId = payment_method
            .parse()
            .map_err(|_| GatewayError::Refused("not a payment method id".into()))?;
        let found: Value = self
            .client
            .get(&format!("/payment_methods/{payment_method}"))
            .await?;
        if found["customer"]
            .as_str()
            .is_some_and(|owner| owner != customer)
        {
            return Err(GatewayError::Refused(
                "the payment method belongs to another customer".into(),
            ));
        }
        Ok((customer_id, method, found))
    }

    /// Makes `payment_method` the customer's default for invoices; an empty one unsets it
    /// (Stripe's convention for clearing a field).
    async fn set_invoice_default(
        &self,
        customer: &CustomerId,
        payment_method: &str,
    ) -> Result<(), GatewayError> {
        Customer::update(
            &self.client,
            customer,
            UpdateCustomer {
                invoice_settings: Some(CustomerInvoiceSettings {
                    default_payment_method: Some(payment_method.to_owned()),
                    ..Default::default()
                }),
                ..UpdateCustomer::new()
            },
        )
        .await?;
        Ok(())
    }

    /// Attaches a payment method to the customer (unless a SetupIntent already did) and
    /// makes it the default; answers what the customer recognises it by (`Visa •••• 4242,
    /// expires 12/2030`). A method attached to another customer is refused.
    pub async fn set_default_payment_method(
        &self,
        customer: &str,
        payment_method: &str,
    ) -> Result<Option<String>, GatewayError> {
        let (customer_id, method, found) = self.method_of(customer, payment_method).await?;
        if found["customer"].is_null() {
            PaymentMethod::attach(
                &self.idempotent(format!("neocloud-attach-{customer}-{payment_method}")),
                &method,
                AttachPaymentMethod {
                    customer: customer_id.clone(),
                },
            )
            .await?;
        }
        self.set_invoice_default(&customer_id, payment_method)
            .await?;
        Ok(method_label(&found))
    }

    /// Removes the customer's `payment_method`: no longer its default at Stripe, then
    /// detached from it. One already detached is left alone (a repeat after a failure
    /// does the rest); one attached to another customer is refused.
    pub async fn remove_payment_method(
        &self,
        customer: &str,
        payment_method: &str,
    ) -> Result<(), GatewayError> {
        let (customer_id, _, found) = self.method_of(customer, payment_method).await?;
        self.set_invoice_default(&customer_id, "").await?;
        if found["customer"].is_string() {
            let _: Value = self
                .client
                .post(&format!("/payment_methods/{payment_method}/detach"))
                .await?;
        }
        Ok(())
    }

    /// Starts collecting a card for the customer: a SetupIntent for off-session charges,
    /// which the portal confirms in the browser with Stripe.js.
    pub async fn start_card_setup(
        &self,
        customer: &str,
        tenant: TenantId,
    ) -> Result<CardSetup, GatewayError> {
        let intent: Value = self
            .client
            .post_form(
                "/setup_intents",
                NewSetupIntent {
                    customer,
                    usage: "off_session",
                    metadata: HashMap::from([("tenant_id", tenant.to_string())]),
                },
            )
            .await?;
        let client_secret = intent["client_secret"]
            .as_str()
            .ok_or_else(|| {
                GatewayError::Transient("Stripe answered without a client secret".into())
            })?
            .to_owned();
        Ok(CardSetup {
            id: object_id(&intent, "seti_")?,
            client_secret,
        })
    }

    /// What a SetupIntent (`seti_…`) came to.
    pub async fn card_setup(&self, id: &str) -> Result<SetupOutcome, GatewayError> {
        if !id.starts_with("seti_") || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(GatewayError::Refused("not a SetupIntent id".into()));
        }
        let intent: Value = self.client.get(&format!("/setup_intents/{id}")).await?;
        let text = |field: &str| intent[field].as_str().map(str::to_owned);
        Ok(SetupOutcome {
            customer: text("customer"),
            succeeded: intent["status"].as_str() == Some("succeeded"),
            payment_method: text("payment_method"),
        })
    }

    /// Charges the customer's default payment method: one off-session, confirmed
    /// PaymentIntent for `amount_minor`, carrying `metadata` (our ids and the key), under
    /// the outbox row's idempotency key.
    pub async fn charge(
        &self,
        idempotency_key: &str,
        customer: &str,
        payment_method: &str,
        amount_minor: i64,
        currency: &str,
        metadata: HashMap<String, String>,
    ) -> Result<Charge, GatewayError> {
        let currency = stripe_currency(currency)?;
        let mut params = CreatePaymentIntent::new(amount_minor, currency);
        params.customer = Some(
            customer
                .parse()
                .map_err(|_| GatewayError::Refused("not a customer id".into()))?,
        );
        params.payment_method = Some(
            payment_method
                .parse()
                .map_err(|_| GatewayError::Refused("not a payment method id".into()))?,
        );
        params.confirm = Some(true);
        params.off_session = Some(PaymentIntentOffSession::Exists(true));
        params.metadata = Some(metadata);
        let intent =
            PaymentIntent::create(&self.idempotent(idempotency_key.to_owned()), params).await?;
        Ok(Charge {
            id: intent.id.to_string(),
        })
    }

    /// Sends a Stripe-hosted invoice (`send_invoice` collection): a draft invoice carrying
    /// `metadata`, one invoice item per line (keyed by the line's id), then finalized and
    /// sent. Each step has a key of its own derived from `idempotency_key` or the line, so
    /// repeating the whole sequence after a crash creates nothing twice.
    pub async fn send_invoice(
        &self,
        idempotency_key: &str,
        invoice: &HostedInvoice<'_>,
    ) -> Result<Hosted, GatewayError> {
        let currency = stripe_currency(invoice.currency)?.to_string();
        let draft: Value = self
            .idempotent(format!("{idempotency_key}-invoice"))
            .post_form(
                "/invoices",
                NewInvoice {
                    customer: invoice.customer,
                    collection_method: "send_invoice",
                    days_until_due: invoice.days_until_due,
                    auto_advance: false,
                    pending_invoice_items_behavior: "exclude",
                    currency: &currency,
                    description: invoice.description,
                    metadata: &invoice.metadata,
                },
            )
            .await?;
        let id = object_id(&draft, "in_")?;
        for item in &invoice.items {
            let _: Value = self
                .idempotent(format!("neocloud-invoice-line-{}", item.line))
                .post_form(
                    "/invoiceitems",
                    NewInvoiceItem {
                        customer: invoice.customer,
                        invoice: &id,
                        amount: item.amount_minor,
                        currency: &currency,
                        description: &item.description,
                        metadata: HashMap::from([
                            (
                                "invoice_id",
                                invoice
                                    .metadata
                                    .get("invoice_id")
                                    .cloned()
                                    .unwrap_or_default(),
                            ),
                            ("line_id", item.line.to_string()),
                        ]),
                    },
                )
                .await?;
        }
        let _: Value = self
            .idempotent(format!("{idempotency_key}-finalize"))
            .post_form(
                &format!("/invoices/{id}/finalize"),
                [("auto_advance", "false")],
            )
            .await?;
        let sent: Value = self
            .idempotent(format!("{idempotency_key}-send"))
            .post(&format!("/invoices/{id}/send"))
            .await?;
        Ok(Hosted {
            id,
            url: sent["hosted_invoice_url"].as_str().map(str::to_owned),
        })
    }

    /// Voids a hosted invoice (`in_…`) so that it can no longer be paid.
    pub async fn void_invoice(
        &self,
        idempotency_key: &str,
        hosted: &str,
    ) -> Result<(), GatewayError> {
        if !hosted.starts_with("in_")
            || !hosted
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(GatewayError::Refused("not an invoice id".into()));
        }
        let _: Value = self
            .idempotent(idempotency_key.to_owned())
            .post(&format!("/invoices/{hosted}/void"))
            .await?;
        Ok(())
    }

    /// Refunds `amount_minor` of a PaymentIntent (`pi_…`), carrying `metadata`, under the
    /// outbox row's idempotency key; the refund's id.
    pub async fn refund(
        &self,
        idempotency_key: &str,
        payment_intent: &str,
        amount_minor: i64,
        metadata: HashMap<String, String>,
    ) -> Result<String, GatewayError> {
        if !payment_intent.starts_with("pi_") {
            return Err(GatewayError::Refused("not a PaymentIntent id".into()));
        }
        let refund: Value = self
            .idempotent(idempotency_key.to_owned())
            .post_form(
                "/refunds",
                NewRefund {
                    payment_intent,
                    amount: amount_minor,
                    metadata,
                },
            )
            .await?;
        object_id(&refund, "re_")
    }

    /// A Stripe Connect transfer of `amount_minor` to the connected account `destination`
    /// (`acct_…`), carrying `metadata`, under the payout's idempotency key; its id. A
    /// repeat with the same key (after a crash or a lost answer) is Stripe's first transfer.
    pub async fn transfer(
        &self,
        idempotency_key: &str,
        amount_minor: i64,
        currency: &str,
        destination: &str,
        metadata: HashMap<String, String>,
    ) -> Result<String, GatewayError> {
        if !destination.starts_with("acct_") {
            return Err(GatewayError::Refused("not a connected account id".into()));
        }
        let currency = stripe_currency(currency)?.to_string();
        let transfer: Value = self
            .idempotent(idempotency_key.to_owned())
            .post_form(
                "/transfers",
                NewTransfer {
                    amount: amount_minor,
                    currency: &currency,
                    destination,
                    transfer_group: metadata.get("payout").cloned().unwrap_or_default(),
                    metadata,
                },
            )
            .await?;
        object_id(&transfer, "tr_")
    }

    /// The id of a transfer already made in `transfer_group` for the payout `payout_id`
    /// (its metadata), if Stripe has one: how a retry finds a transfer whose answer was
    /// lost, whether or not Stripe still remembers the idempotency key (24 hours).
    pub async fn find_transfer(
        &self,
        transfer_group: &str,
        payout_id: &str,
    ) -> Result<Option<String>, GatewayError> {
        let page: Value = self
            .client
            .get_query(
                "/transfers",
                TransfersPage {
                    transfer_group,
                    limit: 100,
                },
            )
            .await?;
        let data = page["data"].as_array().cloned().unwrap_or_default();
        data.iter()
            .find(|t| t["metadata"]["payout_id"].as_str() == Some(payout_id))
            .map(|t| object_id(t, "tr_"))
            .transpose()
    }

    /// Stripe's events created at or after `since` (unix seconds), oldest first, as JSON.
    pub async fn list_events(&self, since: i64) -> Result<Vec<Value>, GatewayError> {
        let mut events = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_EVENT_PAGES {
            let page: Value = self
                .client
                .get_query(
                    "/events",
                    EventsPage {
                        created: RangeQuery::gte(since),
                        limit: 100,
                        starting_after: after.as_deref(),
                    },
                )
                .await?;
            let data = page["data"].as_array().cloned().unwrap_or_default();
            after = data
                .last()
                .and_then(|e| e["id"].as_str())
                .map(str::to_owned);
            events.extend(data);
            if !page["has_more"].as_bool().unwrap_or(false) || after.is_none() {
                break;
            }
        }
        // Stripe lists newest first.
        events.sort_by_key(|e| e["created"].as_i64().unwrap_or_default());
        Ok(events)
    }
}

fn stripe_currency(currency: &str) -> Result<Currency, GatewayError> {
    currency
        .to_ascii_lowercase()
        .parse()
        .map_err(|_| GatewayError::Refused(format!("Stripe does not take {currency}")))
}

fn object_id(object: &Value, prefix: &str) -> Result<String, GatewayError> {
    object["id"]
        .as_str()
        .filter(|id| id.starts_with(prefix))
        .map(str::to_owned)
        .ok_or_else(|| GatewayError::Transient(format!("Stripe answered without a {prefix}… id")))
}

/// A SetupIntent waiting for the browser: `client_secret` lets Stripe.js confirm it and is
/// never stored.
#[derive(Debug, Clone)]
pub struct CardSetup {
    pub id: String,
    pub client_secret: String,
}

/// What a SetupIntent came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupOutcome {
    pub customer: Option<String>,
    pub succeeded: bool,
    pub payment_method: Option<String>,
}

/// How a customer recognises a payment method, from Stripe's object.
fn method_label(method: &Value) -> Option<String> {
    let kind = method["type"].as_str().unwrap_or_default();
    let details = &method[kind];
    let last4 = details["last4"].as_str()?;
    let brand = details["brand"].as_str().unwrap_or(kind).replace('_', " ");
    // Stripe names brands in lower case (`visa`, `amex`): as printed on the card.
    let mut letters = brand.chars();
    let name: String = letters
        .next()
        .map(|first| first.to_uppercase().chain(letters).collect())
        .unwrap_or_default();
    let label = match (details["exp_month"].as_u64(), details["exp_year"].as_u64()) {
        (Some(month), Some(year)) => format!("{name} •••• {last4}, expires {month:02}/{year}"),
        _ => format!("{name} •••• {last4}"),
    };
    Some(label.chars().take(100).collect())
}

/// A Stripe-hosted invoice to send.
#[derive(Debug)]
pub struct HostedInvoice<'a> {
    pub customer: &'a str,
    pub currency: &'a str,
    pub days_until_due: i32,
    pub description: &'a str,
    pub metadata: HashMap<String, String>,
    pub items: Vec<HostedItem>,
}

/// One of its lines, in minor units (negative for credits and discounts).
#[derive(Debug)]
pub struct HostedItem {
    /// What keys the item: an invoice line's id, or the invoice's id and a tax rate.
    pub line: String,
    pub amount_minor: i64,
    pub description: String,
}

/// The hosted invoice Stripe created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hosted {
    pub id: String,
    /// Where the customer pays it.
    pub url: Option<String>,
}

#[derive(Serialize)]
struct NewSetupIntent<'a> {
    customer: &'a str,
    usage: &'a str,
    metadata: HashMap<&'a str, String>,
}

#[derive(Serialize)]
struct NewInvoice<'a> {
    customer: &'a str,
    collection_method: &'a str,
    days_until_due: i32,
    auto_advance: bool,
    pending_invoice_items_behavior: &'a str,
    currency: &'a str,
    description: &'a str,
    metadata: &'a HashMap<String, String>,
}

#[derive(Serialize)]
struct NewInvoiceItem<'a> {
    customer: &'a str,
    invoice: &'a str,
    amount: i64,
    currency: &'a str,
    description: &'a str,
    metadata: HashMap<&'static str, String>,
}

#[derive(Serialize)]
struct NewRefund<'a> {
    payment_intent: &'a str,
    amount: i64,
    metadata: HashMap<String, String>,
}

#[derive(Serialize)]
struct NewTransfer<'a> {
    amount: i64,
    currency: &'a str,
    destination: &'a str,
    transfer_group: String,
    metadata: HashMap<String, String>,
}

#[derive(Serialize)]
struct TransfersPage<'a> {
    transfer_group: &'a str,
    limit: u64,
}

#[derive(Serialize)]
struct EventsPage<'a> {
    created: RangeQuery<i64>,
    limit: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    starting_after: Option<&'a str>,
}
