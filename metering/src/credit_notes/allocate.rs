//! What a credit note credits (pure): a request (the whole invoice, some of its lines, or
//! an amount) turned into net amounts per invoice line and the tax on them, never more
//! than the invoice still holds (docs/invoicing.md, "Credit notes").
//!
//! - Only charge lines are credited (a `CREDIT` line is a payment, not a charge). A line
//!   is credited at most its own amount; a rate at most its taxable amount; a note at most
//!   what is left of the invoice's gross (a discount at another rate lowers it), so an
//!   invoice's credit notes together never exceed its subtotal and tax.
//! - `Full` credits what is left of every charge line, negative ones (discounts, SLA
//!   credits) included, so it reverses the invoice exactly. `Lines` credits listed
//!   positive lines (all that is left of each, or a given amount). `Amount` credits a net
//!   amount over the positive lines in invoice order.
//! - Tax per rate is rounded cumulatively: a note's tax is the tax on everything credited
//!   at that rate so far minus what earlier notes took, so the notes' taxes add up to the
//!   tax on their sum and never exceed the invoice's.

use rust_decimal::Decimal;
use uuid::Uuid;

use crate::tax::{TaxCategory, tax_on};

/// A charge line of the invoice, with what earlier credit notes took of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Creditable {
    pub line: Uuid,
    /// 1-based, as the invoice numbers its lines.
    pub position: u32,
    pub description: String,
    pub amount: Decimal,
    pub credited: Decimal,
    /// (category, percent) when the invoice is taxed.
    pub tax: Option<(TaxCategory, Decimal)>,
}

impl Creditable {
    fn left(&self) -> Decimal {
        self.amount - self.credited
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Full,
    /// (position, amount; `None`: all that is left of the line).
    Lines(Vec<(u32, Option<Decimal>)>),
    Amount(Decimal),
}

/// One line of a credit note: a net amount credited against an invoice line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditLine {
    pub line: Uuid,
    pub position: u32,
    pub description: String,
    pub amount: Decimal,
    pub tax: Option<(TaxCategory, Decimal)>,
}

/// The tax a note credits at one rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateCredit {
    pub tax: Option<(TaxCategory, Decimal)>,
    pub net: Decimal,
    pub tax_amount: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub lines: Vec<CreditLine>,
    pub rates: Vec<RateCredit>,
    pub net: Decimal,
    pub tax: Decimal,
    /// `net + tax`: what the note is worth to the customer.
    pub total: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    #[error("nothing is left to credit on this invoice")]
    NothingLeft,
}

fn invalid(field: &'static str, message: impl Into<String>) -> Refusal {
    Refusal::Invalid {
        field,
        message: message.into(),
    }
}

/// The invoice as a credit note sees it.
pub struct Invoice<'a> {
    pub lines: &'a [Creditable],
    pub minor_digits: u32,
}

impl Invoice<'_> {
    /// What is left at the rate of `tax`: the rate's lines less what was credited of them.
    fn rate_left(&self, tax: Option<(TaxCategory, Decimal)>) -> Decimal {
        self.lines
            .iter()
            .filter(|l| l.tax == tax)
            .map(Creditable::left)
            .sum()
    }

    /// What is left of the invoice's gross: per rate, what is left of its lines and of
    /// the tax on them. A negative line at one rate lowers it, so crediting every other
    /// rate in full could exceed the invoice.
    fn gross_left(&self) -> Decimal {
        let mut rates: Vec<Option<(TaxCategory, Decimal)>> = Vec::new();
        for line in self.lines {
            if !rates.contains(&line.tax) {
                rates.push(line.tax);
            }
        }
        rates
            .into_iter()
            .map(|rate| {
                let (left, credited) = (self.rate_left(rate), self.rate_credited(rate));
                let tax = rate.map_or(Decimal::ZERO, |(_, percent)| {
                    let digits = self.minor_digits;
                    tax_on(left + credited, percent, digits) - tax_on(credited, percent, digits)
                });
                left + tax
            })
            .sum()
    }

    fn rate_credited(&self, tax: Option<(TaxCategory, Decimal)>) -> Decimal {
        self.lines
            .iter()
            .filter(|l| l.tax == tax)
            .map(|l| l.credited)
            .sum()
    }

    /// A money amount: positive, at most the currency's minor digits.
    fn money(&self, field: &'static str, amount: Decimal) -> Result<Decimal, Refusal> {
        if amount <= Decimal::ZERO {
            return Err(invalid(field, "must be positive"));
        }
        if amount.normalize().scale() > self.minor_digits {
            return Err(invalid(
                field,
                format!("at most {} decimal places", self.minor_digits),
            ));
        }
        Ok(amount)
    }
}

/// What `request` credits of `invoice`.
pub fn allocate(invoice: &Invoice<'_>, request: &Request) -> Result<Allocation, Refusal> {
    let lines = match request {
        Request::Full => invoice
            .lines
            .iter()
            .filter(|l| !l.left().is_zero())
            .map(|l| credit(l, l.left()))
            .collect(),
        Request::Lines(asked) => listed(invoice, asked)?,
        Request::Amount(amount) => spread(invoice, invoice.money("amount", *amount)?)?,
    };
    let allocation = totals(invoice, lines);
    if allocation.total <= Decimal::ZERO {
        return Err(Refusal::NothingLeft);
    }
    for rate in &allocation.rates {
        if rate.net > invoice.rate_left(rate.tax) {
            return Err(invalid(
                "lines",
                format!(
                    "at most {} is left to credit at this tax rate (discounts and earlier credit notes count)",
                    invoice.rate_left(rate.tax).max(Decimal::ZERO)
                ),
            ));
        }
    }
    let gross_left = invoice.gross_left();
    if allocation.total > gross_left {
        let field = if matches!(request, Request::Amount(_)) {
            "amount"
        } else {
            "lines"
        };
        return Err(invalid(
            field,
            format!(
                "at most {} (with tax) is left to credit on this invoice",
                gross_left.max(Decimal::ZERO)
            ),
        ));
    }
    Ok(allocation)
}

fn credit(line: &Creditable, amount: Decimal) -> CreditLine {
    CreditLine {
        line: line.line,
        position: line.position,
        description: line.description.clone(),
        amount,
        tax: line.tax,
    }
}

fn listed(
    invoice: &Invoice<'_>,
    asked: &[(u32, Option<Decimal>)],
) -> Result<Vec<CreditLine>, Refusal> {
    // More names than the invoice has lines would repeat one or name none.
    if asked.is_empty() || asked.len() > invoice.lines.len() {
        return Err(invalid(
            "lines",
            format!("name 1 to {} lines of the invoice", invoice.lines.len()),
        ));
    }
    let mut out: Vec<CreditLine> = Vec::new();
    for (position, amount) in asked {
        let line = invoice
            .lines
            .iter()
            .find(|l| l.position == *position && l.amount > Decimal::ZERO)
            .ok_or_else(|| {
                invalid(
                    "lines",
                    format!("line {position} is not a charge that can be credited"),
                )
            })?;
        if out.iter().any(|c| c.position == *position) {
            return Err(invalid("lines", format!("line {position} is named twice")));
        }
        let amount = match amount {
            Some(a) => invoice.money("lines", *a)?,
            None => line.left(),
        };
        if amount > line.left() || line.left() <= Decimal::ZERO {
            return Err(invalid(
                "lines",
                format!(
                    "line {position} has {} left to credit",
                    line.left().max(Decimal::ZERO)
                ),
            ));
        }
        out.push(credit(line, amount));
    }
    Ok(out)
}

/// `amount` over the positive lines in order, each up to what is left of it and of its rate.
fn spread(invoice: &Invoice<'_>, amount: Decimal) -> Result<Vec<CreditLine>, Refusal> {
    let mut left = amount;
    let mut out: Vec<CreditLine> = Vec::new();
    for line in invoice.lines.iter().filter(|l| l.left() > Decimal::ZERO) {
        let taken_at_rate: Decimal = out
            .iter()
            .filter(|c| c.tax == line.tax)
            .map(|c| c.amount)
            .sum();
        let rate_left = invoice.rate_left(line.tax) - taken_at_rate;
        let take = left.min(line.left()).min(rate_left);
        if take > Decimal::ZERO {
            out.push(credit(line, take));
            left -= take;
        }
    }
    if left > Decimal::ZERO {
        return Err(invalid(
            "amount",
            format!("at most {} (before tax) is left to credit", amount - left),
        ));
    }
    Ok(out)
}

/// Sums the lines per rate and taxes each sum cumulatively.
fn totals(invoice: &Invoice<'_>, lines: Vec<CreditLine>) -> Allocation {
    let digits = invoice.minor_digits;
    let mut rates: Vec<RateCredit> = Vec::new();
    for line in &lines {
        match rates.iter_mut().find(|r| r.tax == line.tax) {
            Some(rate) => rate.net += line.amount,
            None => rates.push(RateCredit {
                tax: line.tax,
                net: line.amount,
                tax_amount: Decimal::ZERO,
            }),
        }
    }
    for rate in &mut rates {
        if let Some((_, percent)) = rate.tax {
            let before = invoice.rate_credited(rate.tax);
            rate.tax_amount =
                tax_on(before + rate.net, percent, digits) - tax_on(before, percent, digits);
        }
    }
    let net: Decimal = rates.iter().map(|r| r.net).sum();
    let tax: Decimal = rates.iter().map(|r| r.tax_amount).sum();
    Allocation {
        lines,
        rates,
        net,
        tax,
        total: net + tax,
    }
}

#[cfg(test)]
mod tests;
