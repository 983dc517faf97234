//! Credit notes: `creditNotes` and `creditNote` (tenants see their own), and for operators
//! `issueCreditNote`. Money is a decimal string.

use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_metering::credit_notes::NewCreditNote;
use neocloud_metering::credit_notes::allocate::Request;
use neocloud_schema::entity::{credit_note, credit_note_line};
use neocloud_schema::ids::InvoiceId;
use neocloud_schema::money::parse_plain_decimal;

use super::scalars::{parse_id, tenant_arg, to_id};
use crate::error::ApiError;
use crate::invoicing::credit_notes::{self, CreditNoteView};

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum CreditNoteForm {
    /// Everything left to credit on the invoice (it reverses the invoice exactly).
    Full,
    /// Named lines: all that is left of each, or a given amount.
    Lines,
    /// A net amount, over the invoice's lines in order.
    Amount,
}

#[derive(InputObject)]
pub struct CreditLineInput {
    /// The line's number on the invoice (from 1).
    pub line: u32,
    /// Net amount; default: all that is left of the line.
    pub amount: Option<String>,
}

#[derive(InputObject)]
pub struct IssueCreditNoteInput {
    pub invoice_id: ID,
    pub form: CreditNoteForm,
    /// For `LINES`.
    pub lines: Option<Vec<CreditLineInput>>,
    /// For `AMOUNT`: net, before tax.
    pub amount: Option<String>,
    /// Why (printed on the note): 1 to 500 characters.
    pub reason: String,
    /// Refund a paid invoice's credit to the card it was charged to (else it goes to the
    /// tenant's balance as prepaid credit). An unpaid invoice's amount due is always
    /// reduced first.
    #[graphql(default)]
    pub refund: bool,
}

fn money(field: &'static str, text: &str) -> Result<rust_decimal::Decimal, ApiError> {
    parse_plain_decimal(text.trim()).map_err(|e| ApiError::invalid(field, e))
}

impl IssueCreditNoteInput {
    fn into_new(self) -> Result<NewCreditNote, ApiError> {
        let request = match (self.form, self.lines, self.amount) {
            (CreditNoteForm::Full, None, None) => Request::Full,
            (CreditNoteForm::Lines, Some(lines), None) => Request::Lines(
                lines
                    .into_iter()
                    .map(|l| Ok((l.line, l.amount.map(|a| money("lines", &a)).transpose()?)))
                    .collect::<Result<_, ApiError>>()?,
            ),
            (CreditNoteForm::Amount, None, Some(amount)) => {
                Request::Amount(money("amount", &amount)?)
            }
            _ => {
                return Err(ApiError::invalid(
                    "form",
                    "FULL takes neither lines nor amount, LINES takes lines, AMOUNT takes amount",
                ));
            }
        };
        Ok(NewCreditNote {
            invoice: parse_id::<InvoiceId>("invoiceId", &self.invoice_id)?,
            request,
            reason: self.reason,
            refund: self.refund,
        })
    }
}

/// The tax a note credits at one rate.
#[derive(SimpleObject)]
pub struct CreditNoteTax {
    pub category: Option<String>,
    pub percent: Option<String>,
    pub net: String,
    pub tax: String,
}

#[derive(SimpleObject)]
pub struct CreditNoteLine {
    /// The credited line's number on the invoice (from 1).
    pub invoice_line: i32,
    pub description: String,
    /// Net amount credited.
    pub amount: String,
    pub tax_category: Option<String>,
    pub tax_percent: Option<String>,
}

impl From<&credit_note_line::Model> for CreditNoteLine {
    fn from(l: &credit_note_line::Model) -> Self {
        CreditNoteLine {
            invoice_line: l.line_number,
            description: l.description.clone(),
            amount: l.amount.get().to_string(),
            tax_category: l.tax_category.clone(),
            tax_percent: l.tax_percent.map(|p| p.get().normalize().to_string()),
        }
    }
}

/// A credit note: money given back against a finalized invoice.
#[derive(SimpleObject)]
pub struct CreditNote {
    pub id: ID,
    /// `NC-CN-2026-000001`, gapless.
    pub number: String,
    pub tenant_id: ID,
    pub invoice_id: ID,
    pub currency: String,
    pub reason: String,
    pub form: String,
    /// Net amount credited.
    pub subtotal: String,
    pub tax: String,
    /// `subtotal + tax`.
    pub total: String,
    pub taxes: Vec<CreditNoteTax>,
    /// Of `total`: what reduced the invoice's amount due.
    pub applied: String,
    /// Of `total`: what went to the tenant's balance as prepaid credit.
    pub to_balance: String,
    /// Of `total`: what is refunded to the card.
    pub refunded: String,
    /// `pending`, `done` or `failed` for a refund.
    pub refund_state: Option<String>,
    pub issued_at: DateTime<Utc>,
    /// Empty in lists; filled by `creditNote(id)` and `issueCreditNote`.
    pub lines: Vec<CreditNoteLine>,
}

impl From<&credit_note::Model> for CreditNote {
    fn from(n: &credit_note::Model) -> Self {
        let money = crate::invoicing::in_minor_units(&n.currency);
        let text = |d: neocloud_schema::entity::Exact| money(d.get()).to_string();
        let taxes = n
            .taxes
            .as_array()
            .map(|rates| {
                rates
                    .iter()
                    .map(|r| {
                        let s = |k: &str| r.get(k).and_then(|v| v.as_str()).map(str::to_owned);
                        CreditNoteTax {
                            category: s("category"),
                            percent: s("percent"),
                            net: s("net").unwrap_or_default(),
                            tax: s("tax").unwrap_or_default(),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        CreditNote {
            id: to_id(n.id),
            number: n.number.clone(),
            tenant_id: to_id(n.tenant_id),
            invoice_id: to_id(n.invoice_id),
            currency: n.currency.clone(),
            reason: n.reason.clone(),
            form: n.form.clone(),
            subtotal: text(n.subtotal),
            tax: text(n.tax),
            total: text(n.total),
            taxes,
            applied: text(n.applied),
            to_balance: text(n.to_balance),
            refunded: text(n.refunded),
            refund_state: n.refund_state.clone(),
            issued_at: n.issued_at,
            lines: Vec::new(),
        }
    }
}

impl From<CreditNoteView> for CreditNote {
    fn from(v: CreditNoteView) -> Self {
        let mut note = CreditNote::from(&v.note);
        note.lines = v.lines.iter().map(CreditNoteLine::from).collect();
        note
    }
}

#[derive(Default)]
pub struct CreditNoteQuery;

#[Object]
impl CreditNoteQuery {
    /// The tenant's credit notes, newest first.
    async fn credit_notes(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
    ) -> Result<Vec<CreditNote>> {
        let notes = credit_notes::list(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
        )
        .await?;
        Ok(notes.iter().map(CreditNote::from).collect())
    }

    /// One credit note with its lines.
    async fn credit_note(&self, ctx: &Context<'_>, id: ID) -> Result<CreditNote> {
        let id: uuid::Uuid = parse_id("id", &id)?;
        let view = credit_notes::get(super::db(ctx)?, super::principal(ctx)?, id).await?;
        Ok(view.into())
    }
}

#[derive(Default)]
pub struct CreditNoteMutation;

#[Object]
impl CreditNoteMutation {
    /// Issues a credit note against a finalized invoice that is not void (operator): the
    /// whole of what is left, named lines, or an amount, with a reason. An unpaid
    /// invoice's amount due is reduced first; the rest goes to the tenant's balance, or
    /// with `refund` back to the card.
    async fn issue_credit_note(
        &self,
        ctx: &Context<'_>,
        input: IssueCreditNoteInput,
    ) -> Result<CreditNote> {
        let new = input.into_new()?;
        let view = credit_notes::issue(
            super::db(ctx)?,
            super::principal(ctx)?,
            super::billing(ctx)?,
            new,
            super::now(ctx)?,
        )
        .await?;
        Ok(view.into())
    }
}
