//! The one place where failures become wire errors: every error the API can return has a
//! stable UPPER_SNAKE code (GraphQL `extensions.code`, REST `{"error": {"code", "message"}}`)
//! and an HTTP status, both from the table in [`error_codes!`].

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use neocloud_metering::invoicing::InvoicingError;
use neocloud_metering::payments::gateway::GatewayError;
use serde_json::json;

/// Declares the error codes: variant, wire code, HTTP status.
macro_rules! error_codes {
    ($($variant:ident => $code:literal, $status:ident;)+) => {
        /// A stable error code a client can switch on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Code {
            $($variant,)+
        }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)+
                }
            }

            pub fn status(self) -> StatusCode {
                match self {
                    $(Code::$variant => StatusCode::$status,)+
                }
            }
        }
    };
}

error_codes! {
    Unauthenticated => "UNAUTHENTICATED", UNAUTHORIZED;
    SecondFactorRequired => "SECOND_FACTOR_REQUIRED", UNAUTHORIZED;
    SecondFactorSetupRequired => "SECOND_FACTOR_SETUP_REQUIRED", FORBIDDEN;
    Forbidden => "FORBIDDEN", FORBIDDEN;
    NotFound => "NOT_FOUND", NOT_FOUND;
    InvalidInput => "INVALID_INPUT", BAD_REQUEST;
    InvalidQuery => "INVALID_QUERY", BAD_REQUEST;
    AlreadyExists => "ALREADY_EXISTS", CONFLICT;
    QuotaExceeded => "QUOTA_EXCEEDED", CONFLICT;
    InsufficientCapacity => "INSUFFICIENT_CAPACITY", CONFLICT;
    IdempotencyConflict => "IDEMPOTENCY_CONFLICT", CONFLICT;
    InvalidState => "INVALID_STATE", CONFLICT;
    BudgetExceeded => "BUDGET_EXCEEDED", CONFLICT;
    PayloadTooLarge => "PAYLOAD_TOO_LARGE", PAYLOAD_TOO_LARGE;
    UnsupportedEncoding => "UNSUPPORTED_ENCODING", UNSUPPORTED_MEDIA_TYPE;
    RateLimited => "RATE_LIMITED", TOO_MANY_REQUESTS;
    Unavailable => "UNAVAILABLE", SERVICE_UNAVAILABLE;
    Internal => "INTERNAL", INTERNAL_SERVER_ERROR;
}

/// An error of the API layer. Operating errors carry what the client may see; database
/// and other internal failures are logged in full and shown only as `INTERNAL`.
///
/// It deliberately does not implement `Display`: async-graphql converts any `Display`
/// type into an error without a code, so `?` in a resolver must go through the
/// `From<ApiError>` below, which sets `extensions.code`.
#[derive(Debug)]
pub enum ApiError {
    Unauthenticated {
        message: String,
    },
    /// The password was right; the user also needs a one-time or recovery code.
    SecondFactorRequired,
    /// The user's tenant requires a second factor and the user has none yet: until it is
    /// set up, the session may only set one up.
    SecondFactorSetupRequired,
    Forbidden {
        message: String,
    },
    NotFound {
        what: String,
    },
    InvalidInput {
        field: String,
        message: String,
    },
    AlreadyExists {
        what: String,
    },
    RateLimited,
    QuotaExceeded {
        message: String,
    },
    /// Nothing fits now; `alternatives` are orders that would (JSON objects).
    InsufficientCapacity {
        message: String,
        alternatives: Vec<serde_json::Value>,
    },
    IdempotencyConflict {
        message: String,
    },
    /// The tenant's hard-capped monthly budget is spent.
    BudgetExceeded {
        message: String,
    },
    /// The object is not in a state that allows the operation (e.g. voiding a paid invoice).
    InvalidState {
        message: String,
    },
    Unavailable {
        message: String,
    },
    Database {
        source: sea_orm::DbErr,
    },
    Internal {
        message: String,
    },
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(source: sea_orm::DbErr) -> Self {
        ApiError::Database { source }
    }
}

impl From<InvoicingError> for ApiError {
    fn from(e: InvoicingError) -> Self {
        match e {
            InvoicingError::NotFound(what) => ApiError::not_found(what),
            InvoicingError::Conflict(message) => ApiError::InvalidState { message },
            InvoicingError::Invalid { field, message } => ApiError::invalid(field, message),
            InvoicingError::Database(source) => ApiError::Database { source },
            InvoicingError::Tax(e) => ApiError::InvalidState {
                message: e.to_string(),
            },
            InvoicingError::Rate(e) => ApiError::Internal {
                message: format!("rating failed: {e}"),
            },
        }
    }
}

impl From<GatewayError> for ApiError {
    fn from(e: GatewayError) -> Self {
        match e {
            GatewayError::Refused(reason) => ApiError::invalid("paymentMethodId", reason),
            GatewayError::Transient(reason) => ApiError::Unavailable {
                message: format!("the payment provider did not answer: {reason}"),
            },
        }
    }
}

impl From<neocloud_metering::MeteringError> for ApiError {
    fn from(err: neocloud_metering::MeteringError) -> Self {
        use neocloud_metering::MeteringError;
        match err {
            MeteringError::Invalid(invalid) => ApiError::InvalidInput {
                field: invalid.field,
                message: invalid.message,
            },
            MeteringError::Forbidden { message } => ApiError::Forbidden { message },
            MeteringError::Database(source) => ApiError::Database { source },
        }
    }
}

impl ApiError {
    pub fn code(&self) -> Code {
        match self {
            ApiError::Unauthenticated { .. } => Code::Unauthenticated,
            ApiError::SecondFactorRequired => Code::SecondFactorRequired,
            ApiError::SecondFactorSetupRequired => Code::SecondFactorSetupRequired,
            ApiError::Forbidden { .. } => Code::Forbidden,
            ApiError::NotFound { .. } => Code::NotFound,
            ApiError::InvalidInput { .. } => Code::InvalidInput,
            ApiError::AlreadyExists { .. } => Code::AlreadyExists,
            ApiError::QuotaExceeded { .. } => Code::QuotaExceeded,
            ApiError::InsufficientCapacity { .. } => Code::InsufficientCapacity,
            ApiError::IdempotencyConflict { .. } => Code::IdempotencyConflict,
            ApiError::InvalidState { .. } => Code::InvalidState,
            ApiError::BudgetExceeded { .. } => Code::BudgetExceeded,
            ApiError::RateLimited => Code::RateLimited,
            ApiError::Unavailable { .. } => Code::Unavailable,
            ApiError::Database { .. } | ApiError::Internal { .. } => Code::Internal,
        }
    }

    /// What the client is told.
    pub fn message(&self) -> String {
        match self {
            ApiError::Unauthenticated { message }
            | ApiError::Forbidden { message }
            | ApiError::QuotaExceeded { message }
            | ApiError::InsufficientCapacity { message, .. }
            | ApiError::IdempotencyConflict { message }
            | ApiError::InvalidState { message }
            | ApiError::BudgetExceeded { message }
            | ApiError::Unavailable { message } => message.clone(),
            ApiError::NotFound { what } => format!("{what} not found"),
            ApiError::InvalidInput { field, message } => format!("{field}: {message}"),
            ApiError::AlreadyExists { what } => format!("{what} already exists"),
            ApiError::RateLimited => "too many requests for this API key; slow down".into(),
            ApiError::SecondFactorRequired => {
                "send `code` too: a one-time code from the authenticator app, or a recovery code"
                    .into()
            }
            ApiError::SecondFactorSetupRequired => {
                "your organisation requires a second factor: set one up (startSecondFactor, \
                 then confirmSecondFactor) before anything else"
                    .into()
            }
            ApiError::Database { .. } | ApiError::Internal { .. } => "internal error".into(),
        }
    }

    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::InvalidInput {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::Forbidden {
            message: message.into(),
        }
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        ApiError::NotFound { what: what.into() }
    }

    /// A state the code itself rules out (not bad input, not bad data): a panic in debug
    /// builds, so tests stop at it; `INTERNAL` in production, logged.
    pub fn invariant(message: impl Into<String>) -> Self {
        let message = message.into();
        debug_assert!(false, "broken invariant: {message}");
        ApiError::Internal { message }
    }

    /// Logs internal failures (the client sees only `INTERNAL`).
    fn log_if_internal(&self) {
        match self {
            ApiError::Database { source } => {
                tracing::error!(error = %source, "Database operation failed.");
            }
            ApiError::Internal { message } => {
                tracing::error!(%message, "Internal error.");
            }
            _ => {}
        }
    }

    /// The REST answer for this error.
    /// The REST answer: `{"error": {code, message}}`, with `field` for invalid input.
    pub fn to_response(&self) -> HttpResponse {
        self.log_if_internal();
        match self {
            ApiError::InvalidInput { field, .. } => HttpResponse::build(self.code().status())
                .json(json!({
                    "error": {"code": self.code().as_str(), "message": self.message(), "field": field}
                })),
            _ => rest_error(self.code(), &self.message()),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

impl From<ApiError> for async_graphql::Error {
    fn from(err: ApiError) -> Self {
        (&err).into()
    }
}

/// A shared error (one a batched read gave every field that asked) as a GraphQL error.
impl From<&ApiError> for async_graphql::Error {
    fn from(err: &ApiError) -> Self {
        err.log_if_internal();
        let mut gql = async_graphql::Error::new(err.message());
        let mut ext = async_graphql::ErrorExtensionValues::default();
        ext.set("code", err.code().as_str());
        match err {
            ApiError::InvalidInput { field, .. } => ext.set("field", field.as_str()),
            ApiError::InsufficientCapacity { alternatives, .. } => {
                if let Ok(value) =
                    async_graphql::Value::from_json(serde_json::Value::Array(alternatives.clone()))
                {
                    ext.set("alternatives", value);
                }
            }
            _ => {}
        }
        gql.extensions = Some(ext);
        gql
    }
}

/// The REST error body: `{"error": {"code": "...", "message": "..."}}`.
pub fn rest_error(code: Code, message: &str) -> HttpResponse {
    HttpResponse::build(code.status()).json(json!({
        "error": {"code": code.as_str(), "message": message}
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_upper_snake_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            let s = code.as_str();
            assert!(s.chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{s}");
            assert!(seen.insert(s), "duplicate {s}");
        }
    }

    #[test]
    fn internal_errors_hide_their_cause() {
        let err = ApiError::Database {
            source: sea_orm::DbErr::Custom("secret table detail".into()),
        };
        assert_eq!(err.message(), "internal error");
        assert_eq!(err.code(), Code::Internal);
    }
}
