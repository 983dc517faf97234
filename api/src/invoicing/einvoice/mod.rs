//! E-invoices (EN 16931, the European standard for the semantic content of an invoice):
//! a finalized invoice or credit note is first read into a [`Document`] holding the
//! standard's business terms (BT-n), checked for what the standard requires, then written
//! as UBL 2.1 following Peppol BIS Billing 3.0 ([`ubl`]) or as UN/CEFACT CII in the
//! Factur-X EN 16931 profile ([`cii`]), which a Factur-X PDF embeds.
//!
//! The document is read from what the invoice froze at finalization (its parties, lines
//! and taxes), never from current settings, so an e-invoice of an old invoice is the
//! invoice as issued.

pub mod cii;
pub mod ubl;
mod xml;

use chrono::{NaiveDate, TimeDelta};
use neocloud_metering::parties::{Buyer, Parties, Seller, iban};
use neocloud_metering::tax::TaxCategory;
use neocloud_schema::money::minor_unit_digits_of;
use neocloud_schema::vocabulary::{InvoiceStatus, LineKind};
use rust_decimal::Decimal;

use super::InvoiceView;
use super::credit_notes::CreditNoteView;

/// Invoice (380) or credit note (381), UNTDID 1001.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Invoice,
    CreditNote,
}

impl Kind {
    pub fn type_code(self) -> &'static str {
        match self {
            Kind::Invoice => "380",
            Kind::CreditNote => "381",
        }
    }
}

/// A party's address (BG-5, BG-8).
#[derive(Debug, Clone, Default)]
pub struct Address {
    /// Up to three street lines (BT-35..BT-162, BT-50..BT-163).
    pub lines: Vec<String>,
    pub city: Option<String>,
    pub postal_code: Option<String>,
    /// ISO 3166-1 alpha-2 (BT-40, BT-55).
    pub country: String,
}

/// Seller (BG-4) or buyer (BG-7).
#[derive(Debug, Clone, Default)]
pub struct Party {
    /// Legal name (BT-27, BT-44).
    pub name: String,
    pub address: Address,
    /// VAT identifier with its country prefix (BT-31, BT-48).
    pub vat_id: Option<String>,
    /// Legal registration (BT-30, BT-47): a company register number, or a buyer's tax id
    /// outside the EU (which is not a VAT identifier).
    pub registration: Option<String>,
    /// Electronic address (BT-34, BT-49) and contact e-mail (BT-43, BT-58).
    pub email: Option<String>,
}

/// One line (BG-25).
#[derive(Debug, Clone)]
pub struct DocLine {
    pub id: String,
    /// Item name (BT-153).
    pub name: String,
    /// Seller's item identifier (BT-155): the SKU.
    pub sku: Option<String>,
    /// Invoiced quantity (BT-129), negative for a line that takes money off.
    pub quantity: Decimal,
    /// UN/ECE Recommendation 20 unit (BT-130).
    pub unit_code: &'static str,
    /// Item net price (BT-146), never negative.
    pub price: Decimal,
    /// Line net amount (BT-131).
    pub amount: Decimal,
    pub category: Category,
    pub percent: Decimal,
}

/// A VAT category code (UNCL 5305) as EN 16931 uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// S: standard rate.
    Standard,
    /// AE: reverse charge.
    ReverseCharge,
    /// G: export outside the EU.
    Export,
}

impl Category {
    pub fn code(self) -> &'static str {
        match self {
            Category::Standard => "S",
            Category::ReverseCharge => "AE",
            Category::Export => "G",
        }
    }

    /// The VATEX exemption reason code (BT-121) a zero-rated category needs.
    pub fn exemption_code(self) -> Option<&'static str> {
        match self {
            Category::Standard => None,
            Category::ReverseCharge => Some("VATEX-EU-AE"),
            Category::Export => Some("VATEX-EU-G"),
        }
    }

    fn of(category: TaxCategory) -> Category {
        match category {
            TaxCategory::Standard => Category::Standard,
            TaxCategory::ReverseCharge => Category::ReverseCharge,
            TaxCategory::Export => Category::Export,
        }
    }

    fn parse(text: &str) -> Option<Category> {
        match text {
            "standard" => Some(Category::Standard),
            "reverse_charge" => Some(Category::ReverseCharge),
            "export" => Some(Category::Export),
            _ => None,
        }
    }
}

/// The VAT breakdown of one category and rate (BG-23).
#[derive(Debug, Clone)]
pub struct Breakdown {
    pub category: Category,
    pub percent: Decimal,
    /// BT-116.
    pub taxable: Decimal,
    /// BT-117.
    pub tax: Decimal,
    /// Exemption reason text (BT-120): the note the invoice carries.
    pub reason: Option<String>,
}

/// Document totals (BG-22).
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Sum of line net amounts (BT-106) = total without VAT (BT-109).
    pub lines: Decimal,
    /// BT-110.
    pub tax: Decimal,
    /// BT-112.
    pub with_tax: Decimal,
    /// Paid in advance (BT-113): the credits applied.
    pub prepaid: Decimal,
    /// Amount due for payment (BT-115).
    pub payable: Decimal,
}

/// An invoice or credit note as EN 16931 sees it.
#[derive(Debug, Clone)]
pub struct Document {
    pub kind: Kind,
    /// BT-1.
    pub number: String,
    /// BT-2.
    pub issued: NaiveDate,
    /// BT-9.
    pub due: Option<NaiveDate>,
    /// Payment terms (BT-20).
    pub terms: Option<String>,
    /// BT-5.
    pub currency: String,
    /// Minor-unit digits of the currency: how amounts are written.
    pub digits: u32,
    /// BT-22.
    pub notes: Vec<String>,
    /// BT-10: the tenant id, which the buyer's accounts payable can route on.
    pub buyer_reference: String,
    /// Purchase order (BT-13).
    pub order_reference: Option<String>,
    /// The invoice a credit note corrects (BT-25, BT-26).
    pub preceding: Option<(String, NaiveDate)>,
    /// Invoicing period (BT-73, BT-74), both days included.
    pub period: Option<(NaiveDate, NaiveDate)>,
    pub seller: Party,
    pub buyer: Party,
    /// The seller's IBAN (BT-84) for a credit transfer (code 58); else code 1.
    pub iban: Option<String>,
    pub lines: Vec<DocLine>,
    pub breakdown: Vec<Breakdown>,
    pub totals: Totals,
}

/// The e-invoice formats (`ubl`, `cii`, `facturx`) an invoice can be exported as, and
/// what keeps it from the others.
pub fn availability(view: &InvoiceView) -> (Vec<&'static str>, Vec<String>) {
    match Document::of_invoice(view) {
        Err(why) => (Vec::new(), vec![why.0]),
        Ok(doc) => match ubl::peppol_gap(&doc) {
            Some(why) => (vec!["facturx", "cii"], vec![why.0]),
            None => (vec!["facturx", "ubl", "cii"], Vec::new()),
        },
    }
}

/// Why an invoice cannot be written as an e-invoice: what is missing, in words an
/// operator or a tenant admin can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Missing(pub String);

fn missing<T>(what: impl Into<String>) -> Result<T, Missing> {
    Err(Missing(what.into()))
}

impl Document {
    /// Reads a finalized invoice.
    pub fn of_invoice(view: &InvoiceView) -> Result<Document, Missing> {
        let invoice = &view.invoice;
        if matches!(invoice.status, InvoiceStatus::Draft | InvoiceStatus::Void) {
            return missing(format!(
                "an e-invoice is issued for a finalized invoice; this one is {}",
                invoice.status
            ));
        }
        let (Some(number), Some(finalized)) = (&invoice.number, invoice.finalized_at) else {
            return missing("the invoice has no number");
        };
        let (seller, buyer) = parties(invoice.parties.as_ref())?;
        let digits = minor_unit_digits_of(&invoice.currency);
        let lines = view
            .lines
            .iter()
            .filter(|l| l.kind != LineKind::Credit)
            .enumerate()
            .map(|(i, l)| invoice_line(i + 1, l))
            .collect::<Result<Vec<_>, _>>()?;
        let breakdown = breakdown(view.taxes.iter().map(|t| {
            let category = Category::of(t.category);
            (category, t.percent, t.taxable, t.tax, t.note.clone())
        }));
        let mut notes: Vec<String> = view.taxes.iter().filter_map(|t| t.note.clone()).collect();
        notes.dedup();
        let days = invoice.due_at.map(|due| (due - finalized).num_days());
        let period_end = invoice.period_end - TimeDelta::seconds(1);
        let document = Document {
            kind: Kind::Invoice,
            number: number.clone(),
            issued: finalized.date_naive(),
            due: invoice.due_at.map(|d| d.date_naive()),
            terms: days.map(|d| match d {
                0 => "Due on receipt".to_owned(),
                d => format!("Net {d} days"),
            }),
            currency: invoice.currency.clone(),
            digits,
            notes,
            buyer_reference: invoice.tenant_id.to_string(),
            order_reference: buyer.po_number.clone(),
            preceding: None,
            period: Some((invoice.period_start.date_naive(), period_end.date_naive())),
            iban: iban::find_in(&seller.bank),
            seller: seller_party(&seller),
            buyer: buyer_party(&buyer),
            totals: Totals {
                lines: view.subtotal,
                tax: view.tax,
                with_tax: view.subtotal + view.tax,
                prepaid: view.credits,
                payable: view.total,
            },
            lines,
            breakdown,
        };
        document.check()?;
        Ok(document)
    }

    /// Reads a credit note: one line per credited line, at quantity 1.
    pub fn of_credit_note(view: &CreditNoteView) -> Result<Document, Missing> {
        let note = &view.note;
        let invoice = &view.invoice;
        let (seller, buyer) = parties(invoice.parties.as_ref())?;
        let Some(number) = &invoice.number else {
            return missing("the credited invoice has no number");
        };
        let lines = view
            .lines
            .iter()
            .map(credit_note_line)
            .collect::<Result<Vec<_>, _>>()?;
        let breakdown = breakdown(credit_note_rates(view).into_iter());
        let mut notes = vec![format!("Credit note for invoice {number}: {}", note.reason)];
        notes.extend(breakdown.iter().filter_map(|b| b.reason.clone()));
        notes.dedup();
        let (subtotal, tax, total) = (note.subtotal.get(), note.tax.get(), note.total.get());
        let document = Document {
            kind: Kind::CreditNote,
            number: note.number.clone(),
            issued: note.issued_at.date_naive(),
            due: None,
            terms: None,
            currency: note.currency.clone(),
            digits: minor_unit_digits_of(&note.currency),
            notes,
            buyer_reference: invoice.tenant_id.to_string(),
            order_reference: buyer.po_number.clone(),
            preceding: invoice
                .finalized_at
                .map(|at| (number.clone(), at.date_naive())),
            period: None,
            iban: None,
            seller: seller_party(&seller),
            buyer: buyer_party(&buyer),
            totals: Totals {
                lines: subtotal,
                tax,
                with_tax: total,
                prepaid: Decimal::ZERO,
                payable: total,
            },
            lines,
            breakdown,
        };
        document.check()?;
        Ok(document)
    }

    /// What EN 16931 requires that the invoice may lack: a seller VAT id for any VAT
    /// category here (BR-S-02, BR-AE-02, BR-G-02), a buyer VAT id for a reverse charge
    /// (BR-AE-02), lines adding up (BR-CO-10) and totals that agree (BR-CO-15, BR-CO-16).
    fn check(&self) -> Result<(), Missing> {
        if self.lines.is_empty() {
            return missing("an e-invoice needs at least one line (BR-16)");
        }
        if self.seller.vat_id.is_none() {
            return missing("the seller's VAT id is not set (billing.seller_vat_id)");
        }
        let reverse = self
            .breakdown
            .iter()
            .any(|b| b.category == Category::ReverseCharge);
        if reverse && self.buyer.vat_id.is_none() {
            return missing("a reverse-charged invoice needs the buyer's VAT id");
        }
        let sum: Decimal = self.lines.iter().map(|l| l.amount).sum();
        let taxes: Decimal = self.breakdown.iter().map(|b| b.tax).sum();
        let t = &self.totals;
        if sum != t.lines || taxes != t.tax || t.with_tax != t.lines + t.tax {
            return missing("the invoice's lines and totals do not add up");
        }
        if t.payable != t.with_tax - t.prepaid {
            return missing("the invoice's amount due does not add up");
        }
        Ok(())
    }

    /// An amount as the standard wants it: the currency's minor-unit digits.
    pub fn money(&self, amount: Decimal) -> String {
        let mut amount = amount.round_dp(self.digits);
        amount.rescale(self.digits);
        amount.to_string()
    }
}

/// A credited line at quantity 1.
fn credit_note_line(
    line: &neocloud_schema::entity::credit_note_line::Model,
) -> Result<DocLine, Missing> {
    let category = line.tax_category.as_deref().and_then(Category::parse);
    let (Some(category), Some(percent)) = (category, line.tax_percent) else {
        return missing(format!("credit note line {} has no tax", line.line_number));
    };
    let amount = line.amount.get();
    Ok(DocLine {
        id: line.line_number.to_string(),
        name: line.description.clone(),
        sku: None,
        quantity: Decimal::ONE,
        unit_code: "C62",
        price: amount,
        amount,
        category,
        percent: percent.get(),
    })
}

/// A credit note's taxes per rate.
fn credit_note_rates(view: &CreditNoteView) -> Vec<Rate> {
    view.rates()
        .iter()
        .filter_map(|[category, percent, net, tax]| {
            let category = Category::parse(category)?;
            Some((
                category,
                percent.parse().ok()?,
                net.parse().ok()?,
                tax.parse().ok()?,
                None,
            ))
        })
        .collect()
}

/// The exemption reason (BT-120) a zero-rated category must give when its note is missing.
fn category_reason(category: Category) -> Option<String> {
    match category {
        Category::Standard => None,
        Category::ReverseCharge => Some("Reverse charge".to_owned()),
        Category::Export => Some("Export outside the EU".to_owned()),
    }
}

/// A rate as an invoice lists it: category, percent, taxable, tax, legal note.
type Rate = (Category, Decimal, Decimal, Decimal, Option<String>);

/// Per category and rate, summed (an invoice lists a rate once per jurisdiction).
fn breakdown(rates: impl Iterator<Item = Rate>) -> Vec<Breakdown> {
    let mut out: Vec<Breakdown> = Vec::new();
    for (category, percent, taxable, tax, note) in rates {
        match out
            .iter_mut()
            .find(|b| b.category == category && b.percent == percent)
        {
            Some(b) => {
                b.taxable += taxable;
                b.tax += tax;
            }
            None => out.push(Breakdown {
                category,
                percent,
                taxable,
                tax,
                reason: (category != Category::Standard)
                    .then(|| note.or_else(|| category_reason(category)))
                    .flatten(),
            }),
        }
    }
    out.sort_by_key(|b| (b.category, b.percent));
    out
}

fn parties(frozen: Option<&serde_json::Value>) -> Result<(Seller, Buyer), Missing> {
    let parties: Option<Parties> = frozen.and_then(|p| serde_json::from_value(p.clone()).ok());
    let Some(parties) = parties else {
        return missing("the invoice was finalized before seller and buyer were frozen on it");
    };
    let Some(buyer) = parties.buyer else {
        return missing(
            "the buyer had no billing profile when the invoice was finalized (setBillingProfile)",
        );
    };
    if parties.seller.country.trim().is_empty() {
        return missing("the seller's country is not set (billing.seller_country)");
    }
    Ok((parties.seller, buyer))
}

fn invoice_line(
    number: usize,
    line: &neocloud_metering::rating::period::Line,
) -> Result<DocLine, Missing> {
    let Some(tax) = &line.tax else {
        return missing(format!(
            "line {number} has no tax: set the seller's country and tax rates"
        ));
    };
    // The price is never negative (BR-27): a line that takes money off is a negative
    // quantity at a positive price.
    let (quantity, price) = if line.unit_price.is_sign_negative() {
        (-line.quantity, -line.unit_price)
    } else {
        (line.quantity, line.unit_price)
    };
    Ok(DocLine {
        id: number.to_string(),
        name: non_empty(&line.description, "Charge"),
        sku: line.sku_name.clone(),
        quantity: quantity.normalize(),
        unit_code: unit_code(&line.unit),
        price: price.normalize(),
        amount: line.amount,
        category: Category::of(tax.category),
        percent: tax.percent,
    })
}

fn non_empty(text: &str, fallback: &str) -> String {
    match text.trim() {
        "" => fallback.to_owned(),
        t => t.to_owned(),
    }
}

/// The UN/ECE Recommendation 20 code of a line's unit; "C62" (one) for counted units.
/// A size per time ("GB-month") has no code of its own and is counted as C62.
pub fn unit_code(unit: &str) -> &'static str {
    let unit = unit.to_ascii_lowercase();
    let parts: Vec<&str> = unit.split(['-', ' ', '/', '_']).collect();
    if parts.len() > 1
        && parts
            .iter()
            .any(|p| matches!(*p, "gb" | "tb" | "gib" | "tib"))
    {
        return "C62";
    }
    match parts.last().copied().unwrap_or("") {
        "hour" | "hours" | "h" | "hr" => "HUR",
        "minute" | "minutes" | "min" => "MIN",
        "second" | "seconds" | "s" | "sec" => "SEC",
        "day" | "days" => "DAY",
        "month" | "months" => "MON",
        "gb" => "E34",
        "tb" => "E35",
        _ => "C62",
    }
}

/// The seller's street lines, with a last line "55116 Mainz" read as postal code and city.
fn split_address(lines: &[String]) -> (Vec<String>, Option<String>, Option<String>) {
    let mut lines: Vec<String> = lines
        .iter()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    let town = lines.last().and_then(|last| {
        let (code, city) = last.split_once(' ')?;
        (code.bytes().any(|b| b.is_ascii_digit()) && !city.trim().is_empty())
            .then(|| (code.to_owned(), city.trim().to_owned()))
    });
    match town {
        Some((code, city)) if lines.len() > 1 => {
            lines.pop();
            (lines, Some(city), Some(code))
        }
        _ => (lines, None, None),
    }
}

fn some(text: &str) -> Option<String> {
    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
}

fn seller_party(seller: &Seller) -> Party {
    let (lines, city, postal_code) = split_address(&seller.address_lines);
    Party {
        name: seller.legal_name.clone(),
        address: Address {
            lines,
            city,
            postal_code,
            country: seller.country.trim().to_ascii_uppercase(),
        },
        vat_id: some(&seller.vat_id),
        registration: some(&seller.registration),
        email: some(&seller.email),
    }
}

fn buyer_party(buyer: &Buyer) -> Party {
    // A tax id outside the EU is not a VAT identifier (BR-CO-09 wants a country prefix):
    // it is the buyer's legal registration instead.
    let eu_vat = buyer.vat_id_status.as_deref() != Some("not_checked");
    Party {
        name: buyer.legal_name.clone(),
        address: Address {
            lines: buyer.address_lines.clone(),
            city: some(&buyer.city),
            postal_code: some(&buyer.postal_code),
            country: buyer.country.clone(),
        },
        vat_id: buyer.vat_id.clone().filter(|_| eu_vat),
        registration: buyer.vat_id.clone().filter(|_| !eu_vat),
        email: buyer.billing_email.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_map_to_recommendation_20() {
        assert_eq!(unit_code("GPU-hour"), "HUR");
        assert_eq!(unit_code("GB"), "E34");
        assert_eq!(unit_code("GB-month"), "C62");
        assert_eq!(unit_code("month"), "MON");
        assert_eq!(unit_code("request"), "C62");
    }

    #[test]
    fn a_last_address_line_with_a_postal_code_is_the_town() {
        let lines = vec!["Rheinallee 1".to_owned(), "55116 Mainz".to_owned()];
        let (street, city, code) = split_address(&lines);
        assert_eq!(street, ["Rheinallee 1"]);
        assert_eq!(
            (city.as_deref(), code.as_deref()),
            (Some("Mainz"), Some("55116"))
        );
        let (street, city, _) = split_address(&["Main Street 1".to_owned()]);
        assert_eq!((street.len(), city), (1, None));
    }
}
