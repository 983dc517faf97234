//! How a provider is paid, checked field by field: `manual` (the operator pays outside
//! neocloud), `stripe_connect` (a connected account, `acct_…`), `sepa_credit_transfer`
//! (an IBAN with valid check digits, and a BIC).

use neocloud_metering::parties::iban;

use crate::error::{ApiError, ApiResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayoutMethod {
    Manual,
    StripeConnect,
    SepaCreditTransfer,
}

impl PayoutMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            PayoutMethod::Manual => "manual",
            PayoutMethod::StripeConnect => "stripe_connect",
            PayoutMethod::SepaCreditTransfer => "sepa_credit_transfer",
        }
    }

    pub fn parse(stored: &str) -> Option<PayoutMethod> {
        [
            PayoutMethod::Manual,
            PayoutMethod::StripeConnect,
            PayoutMethod::SepaCreditTransfer,
        ]
        .into_iter()
        .find(|m| m.as_str() == stored)
    }
}

/// The account `method` pays to, as stored: none for `manual`, the connected account id,
/// or `IBAN BIC` (compact, upper case).
pub fn account(method: PayoutMethod, given: Option<&str>) -> ApiResult<Option<String>> {
    let given = given.map(str::trim).filter(|s| !s.is_empty());
    match (method, given) {
        (PayoutMethod::Manual, None) => Ok(None),
        (PayoutMethod::Manual, Some(_)) => Err(ApiError::invalid(
            "payoutAccount",
            "manual payouts take no account",
        )),
        (PayoutMethod::StripeConnect, Some(id)) if connected_account(id) => Ok(Some(id.to_owned())),
        (PayoutMethod::StripeConnect, _) => Err(ApiError::invalid(
            "payoutAccount",
            "a Stripe connected account id, e.g. acct_1A2b3C4d5E6f7G8h",
        )),
        (PayoutMethod::SepaCreditTransfer, Some(text)) => sepa(text).map(Some),
        (PayoutMethod::SepaCreditTransfer, None) => Err(ApiError::invalid(
            "payoutAccount",
            "an IBAN and a BIC, e.g. DE89370400440532013000 COBADEFFXXX",
        )),
    }
}

fn connected_account(id: &str) -> bool {
    id.strip_prefix("acct_").is_some_and(|rest| {
        (8..=32).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

fn sepa(text: &str) -> ApiResult<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some((bic, iban_parts)) = words.split_last() else {
        return Err(ApiError::invalid("payoutAccount", "an IBAN and a BIC"));
    };
    let iban: String = iban_parts.concat().to_ascii_uppercase();
    if !iban::valid(&iban) {
        return Err(ApiError::invalid(
            "payoutAccount",
            "the IBAN's length, characters or check digits are wrong",
        ));
    }
    let bic = bic.to_ascii_uppercase();
    let bic_ok = matches!(bic.len(), 8 | 11)
        && bic[..6].bytes().all(|b| b.is_ascii_uppercase())
        && bic[6..].bytes().all(|b| b.is_ascii_alphanumeric());
    if !bic_ok {
        return Err(ApiError::invalid(
            "payoutAccount",
            "the BIC must be 8 or 11 characters, e.g. COBADEFFXXX",
        ));
    }
    Ok(format!("{iban} {bic}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sepa_account_is_an_iban_and_a_bic() {
        assert_eq!(
            sepa("de89 3704 0044 0532 0130 00 cobadeffxxx").ok(),
            Some("DE89370400440532013000 COBADEFFXXX".to_owned())
        );
        assert!(sepa("DE89370400440532013000 COBA").is_err());
    }

    #[test]
    fn each_method_takes_its_own_account() {
        let m = PayoutMethod::StripeConnect;
        assert!(account(m, Some("acct_1A2b3C4d5E6f7G8h")).is_ok());
        assert!(account(m, Some("cus_1A2b3C4d5E6f7G8h")).is_err());
        assert!(account(m, None).is_err());
        assert_eq!(account(PayoutMethod::Manual, None).ok(), Some(None));
        assert!(account(PayoutMethod::Manual, Some("acct_x")).is_err());
        for m in ["manual", "stripe_connect", "sepa_credit_transfer"] {
            assert_eq!(PayoutMethod::parse(m).map(PayoutMethod::as_str), Some(m));
        }
    }
}
