//! The calls neocloud makes to Stripe (async-stripe, core API only): a customer per
//! tenant, attaching a default payment method, and one off-session PaymentIntent per
//! finalized invoice. Every call carries an idempotency key derived from our own ids, so
//! repeating it (after a crash, a timeout or a retry) creates nothing new at Stripe.

use std::collections::HashMap;

use stripe::{
    AttachPaymentMethod, Client, CreateCustomer, CreatePaymentIntent, Currency, Customer,
    CustomerId, CustomerInvoiceSettings, PaymentIntent, PaymentIntentOffSession, PaymentMethod,
    PaymentMethodId, RequestStrategy, StripeError, UpdateCustomer,
};
use uuid::Uuid;

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
            StripeError::Stripe(request)
                if request.http_status < 500 && request.http_status != 429 =>
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
    pub async fn create_customer(&self, tenant: Uuid, name: &str) -> Result<String, GatewayError> {
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

    /// Attaches a payment method to the customer and makes it the default.
    pub async fn set_default_payment_method(
        &self,
        customer: &str,
        payment_method: &str,
    ) -> Result<(), GatewayError> {
        let customer_id: CustomerId = customer
            .parse()
            .map_err(|_| GatewayError::Refused("not a customer id".into()))?;
        let method: PaymentMethodId = payment_method
            .parse()
            .map_err(|_| GatewayError::Refused("not a payment method id".into()))?;
        PaymentMethod::attach(
            &self.idempotent(format!("neocloud-attach-{customer}-{payment_method}")),
            &method,
            AttachPaymentMethod {
                customer: customer_id.clone(),
            },
        )
        .await?;
        Customer::update(
            &self.client,
            &customer_id,
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

    /// Charges a finalized invoice: one off-session, confirmed PaymentIntent for its total
    /// in minor units, carrying our invoice id and number, under the outbox row's
    /// idempotency key (the invoice id; a retry after a refusal gets a key of its own).
    #[allow(clippy::too_many_arguments)]
    pub async fn charge_invoice(
        &self,
        idempotency_key: &str,
        invoice: Uuid,
        number: &str,
        tenant: Uuid,
        customer: &str,
        payment_method: &str,
        amount_minor: i64,
        currency: &str,
    ) -> Result<Charge, GatewayError> {
        let currency: Currency = currency
            .to_ascii_lowercase()
            .parse()
            .map_err(|_| GatewayError::Refused(format!("Stripe does not take {currency}")))?;
        let metadata = HashMap::from([
            ("invoice_id".to_owned(), invoice.to_string()),
            ("invoice_number".to_owned(), number.to_owned()),
            ("tenant_id".to_owned(), tenant.to_string()),
        ]);
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
}
