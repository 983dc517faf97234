//! The parties of an invoice: the operator as seller (from its settings) and the tenant
//! as buyer (its billing profile), each frozen onto an invoice as it is finalized, so a
//! later change of address or VAT id never changes an issued invoice.

pub mod iban;
pub mod store;
pub mod vat_id;

use serde::{Deserialize, Serialize};

pub use vat_id::{VatCheck, VatError};

/// The operator's legal identity, printed as the seller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seller {
    pub legal_name: String,
    pub address_lines: Vec<String>,
    pub country: String,
    pub vat_id: String,
    pub registration: String,
    pub email: String,
    /// Where transfers go (IBAN, BIC, bank), as one line.
    pub bank: String,
}

/// A tenant's billing profile as given (checked by [`Buyer::parse`]).
#[derive(Debug, Clone, Default)]
pub struct BuyerInput {
    pub legal_name: String,
    pub address_lines: Vec<String>,
    pub postal_code: String,
    pub city: String,
    pub country: String,
    pub vat_id: Option<String>,
    pub po_number: Option<String>,
    pub billing_email: Option<String>,
}

/// A checked billing profile, as stored and as frozen on invoices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buyer {
    pub legal_name: String,
    pub address_lines: Vec<String>,
    pub postal_code: String,
    pub city: String,
    pub country: String,
    pub vat_id: Option<String>,
    pub vat_id_status: Option<String>,
    pub po_number: Option<String>,
    pub billing_email: Option<String>,
}

/// A field of a profile that was refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub field: &'static str,
    pub reason: String,
}

fn refuse(field: &'static str, reason: impl Into<String>) -> Refused {
    Refused {
        field,
        reason: reason.into(),
    }
}

/// Trimmed text of 1 to `max` characters, without control characters.
fn text(field: &'static str, value: &str, max: usize) -> Result<String, Refused> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > max {
        return Err(refuse(field, format!("1 to {max} characters")));
    }
    if value.chars().any(char::is_control) {
        return Err(refuse(field, "no control characters"));
    }
    Ok(value.to_owned())
}

fn optional(
    field: &'static str,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>, Refused> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        Some(v) => text(field, v, max).map(Some),
        None => Ok(None),
    }
}

/// What a VAT id (or a tax id outside the EU) is checked to, for `country`.
fn tax_id(country: &str, given: &str) -> Result<(String, &'static str), Refused> {
    let compact = vat_id::compact(given);
    let Some(prefix) = vat_id::prefix_of(country) else {
        // Outside the EU: kept as given, unchecked.
        return Ok((text("vatId", given, 40)?, "not_checked"));
    };
    if !compact.starts_with(prefix) {
        return Err(refuse(
            "vatId",
            format!("a VAT id of {country} starts with {prefix}"),
        ));
    }
    match vat_id::check(&compact) {
        Ok(VatCheck::CheckDigitsValid) => Ok((compact, "check_digits_valid")),
        Ok(VatCheck::FormatValid) => Ok((compact, "format_valid")),
        Err(err) => Err(refuse("vatId", err.to_string())),
    }
}

impl Buyer {
    /// Checks every field; the first refused one is named.
    pub fn parse(input: &BuyerInput) -> Result<Buyer, Refused> {
        let country = input.country.trim().to_ascii_uppercase();
        if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(refuse("country", "an ISO 3166-1 alpha-2 code, e.g. DE"));
        }
        if input.address_lines.is_empty() || input.address_lines.len() > 4 {
            return Err(refuse("addressLines", "1 to 4 lines"));
        }
        let address_lines = input
            .address_lines
            .iter()
            .map(|l| text("addressLines", l, 100))
            .collect::<Result<Vec<_>, _>>()?;
        let (vat_id, vat_id_status) = match input.vat_id.as_deref().map(str::trim) {
            Some(v) if !v.is_empty() => {
                let (id, status) = tax_id(&country, v)?;
                (Some(id), Some(status.to_owned()))
            }
            _ => (None, None),
        };
        let billing_email = optional("billingEmail", input.billing_email.as_deref(), 254)?;
        if billing_email
            .as_deref()
            .is_some_and(|e| !e.contains('@') || e.contains(char::is_whitespace))
        {
            return Err(refuse("billingEmail", "an email address"));
        }
        Ok(Buyer {
            legal_name: text("legalName", &input.legal_name, 200)?,
            address_lines,
            postal_code: text("postalCode", &input.postal_code, 20)?,
            city: text("city", &input.city, 100)?,
            country,
            vat_id,
            vat_id_status,
            po_number: optional("poNumber", input.po_number.as_deref(), 60)?,
            billing_email,
        })
    }
}

/// Both parties as an invoice freezes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parties {
    pub seller: Seller,
    /// `None` when the tenant had no billing profile when the invoice was finalized.
    pub buyer: Option<Buyer>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> BuyerInput {
        BuyerInput {
            legal_name: "Acme Research GmbH".into(),
            address_lines: vec!["Invalidenstraße 1".into()],
            postal_code: "10115".into(),
            city: "Berlin".into(),
            country: "de".into(),
            vat_id: Some("DE 136 695 976".into()),
            po_number: None,
            billing_email: Some("ap@acme.example".into()),
        }
    }

    #[test]
    fn a_german_profile_keeps_its_vat_id_compacted_and_checked() {
        let buyer = Buyer::parse(&input()).expect("valid");
        assert_eq!(buyer.country, "DE");
        assert_eq!(buyer.vat_id.as_deref(), Some("DE136695976"));
        assert_eq!(buyer.vat_id_status.as_deref(), Some("check_digits_valid"));
    }

    #[test]
    fn each_bad_field_is_named() {
        type Change = fn(&mut BuyerInput);
        let cases: [(Change, &str); 6] = [
            (|i| i.vat_id = Some("DE136695978".into()), "vatId"),
            (|i| i.vat_id = Some("FR61954506077".into()), "vatId"),
            (|i| i.country = "Germany".into(), "country"),
            (|i| i.address_lines = vec![], "addressLines"),
            (|i| i.legal_name = " ".into(), "legalName"),
            (
                |i| i.billing_email = Some("not an email".into()),
                "billingEmail",
            ),
        ];
        for (change, field) in cases {
            let mut i = input();
            change(&mut i);
            assert_eq!(Buyer::parse(&i).map_err(|r| r.field), Err(field));
        }
    }

    #[test]
    fn outside_the_eu_a_tax_id_is_kept_unchecked() {
        let mut i = input();
        i.country = "US".into();
        i.vat_id = Some("12-3456789".into());
        let buyer = Buyer::parse(&i).expect("valid");
        assert_eq!(buyer.vat_id.as_deref(), Some("12-3456789"));
        assert_eq!(buyer.vat_id_status.as_deref(), Some("not_checked"));
    }
}
