//! How a provider is paid, checked field by field: `manual` (the operator pays outside
//! neocloud), `stripe_connect` (a connected account, `acct_…`), `sepa_credit_transfer`
//! (an IBAN with valid check digits, and a BIC).

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
    if !iban_valid(&iban) {
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

/// ISO 13616: two letters, two check digits, up to 30 alphanumerics; the number formed
/// by moving the first four characters to the end (letters as 10–35) is 1 modulo 97.
fn iban_valid(iban: &str) -> bool {
    let b = iban.as_bytes();
    let shaped = (15..=34).contains(&b.len())
        && b[..2].iter().all(u8::is_ascii_uppercase)
        && b[2..4].iter().all(u8::is_ascii_digit)
        && b[4..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if !shaped {
        return false;
    }
    let mut rest = 0u32;
    for &c in b[4..].iter().chain(&b[..4]) {
        let value = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else {
            u32::from(c - b'A') + 10
        };
        rest = if value >= 10 {
            (rest * 100 + value) % 97
        } else {
            (rest * 10 + value) % 97
        };
    }
    rest == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibans_are_checked_by_their_check_digits() {
        assert!(iban_valid("DE89370400440532013000"));
        assert!(iban_valid("FR1420041010050500013M02606"));
        assert!(!iban_valid("DE89370400440532013001"));
        assert!(!iban_valid("DE8937040044"));
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
