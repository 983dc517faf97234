//! What each business event posts (docs/ledger.md, "Postings"): pure functions from the
//! rows the event wrote to the transfer that records it.

use neocloud_schema::entity::{
    credit_grant, credit_note, invoice, provider_payout, provider_statement,
};
use neocloud_schema::vocabulary::CreditKind;
use rust_decimal::Decimal;

use super::{Account, AccountKind, Transfer};

pub const INVOICE_FINALIZED: &str = "invoice.finalized";
pub const INVOICE_PAID: &str = "invoice.paid";
pub const INVOICE_VOIDED: &str = "invoice.voided";
pub const CREDIT_GRANTED: &str = "credit.granted";
pub const CREDIT_NOTE_ISSUED: &str = "credit_note.issued";
pub const REFUND_SENT: &str = "refund.sent";
pub const PROVIDER_STATEMENT_CLOSED: &str = "provider_statement.closed";
pub const PROVIDER_PAYOUT_QUEUED: &str = "provider_payout.queued";
pub const PROVIDER_PAYOUT_SENT: &str = "provider_payout.sent";
pub const PROVIDER_PAYOUT_FAILED: &str = "provider_payout.failed";

/// Where the money of a credit grant comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Funding {
    /// The operator's: promotional credit given away, or prepaid credit it was paid for
    /// outside Stripe (by the grant's kind).
    Operator,
    /// A top-up paid through Stripe.
    StripeTopUp,
    /// A credit note's part that goes to the balance: the note's transfer posts it.
    CreditNote,
}

fn platform(kind: AccountKind) -> Account {
    Account::platform(kind)
}

/// A finalized invoice: the tenant owes its total and its applied credits leave the
/// wallet; revenue is its subtotal and the tax is owed onwards.
pub fn invoice_finalized(inv: &invoice::Model) -> Transfer {
    let tenant = inv.tenant_id;
    let number = inv.number.clone().unwrap_or_default();
    Transfer::new(
        INVOICE_FINALIZED,
        inv.id,
        &inv.currency,
        Some(tenant),
        format!("invoice {number} finalized"),
    )
    .debit(
        Account::tenant(AccountKind::Receivable, tenant),
        inv.total.get(),
    )
    .debit(
        Account::tenant(AccountKind::Wallet, tenant),
        inv.credits.get(),
    )
    .credit(platform(AccountKind::Revenue), inv.subtotal.get())
    .credit(platform(AccountKind::TaxPayable), inv.tax.get())
}

/// Where an invoice's payment was collected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collected {
    /// Through Stripe: it is in Stripe's balance.
    ThroughStripe,
    /// Outside Stripe (a transfer an operator recorded with `markInvoicePaid`).
    Outside,
}

/// An invoice paid: `amount` (what was due) collected, into Stripe's balance or the
/// operator's external cash.
pub fn invoice_paid(inv: &invoice::Model, amount: Decimal, via: Collected) -> Transfer {
    let number = inv.number.clone().unwrap_or_default();
    let (cash, how) = match via {
        Collected::ThroughStripe => (AccountKind::StripeCash, "through"),
        Collected::Outside => (AccountKind::ExternalCash, "outside"),
    };
    Transfer::new(
        INVOICE_PAID,
        inv.id,
        &inv.currency,
        Some(inv.tenant_id),
        format!("invoice {number} paid {how} Stripe"),
    )
    .debit(platform(cash), amount)
    .credit(
        Account::tenant(AccountKind::Receivable, inv.tenant_id),
        amount,
    )
}

/// A credit grant: the wallet gains it, from the account that pays for it. `None` for a
/// credit note's grant (its note posts it).
pub fn credit_granted(grant: &credit_grant::Model, funding: Funding) -> Option<Transfer> {
    let source = match (funding, grant.kind) {
        (Funding::CreditNote, _) => return None,
        (Funding::StripeTopUp, _) => AccountKind::StripeCash,
        (Funding::Operator, CreditKind::Promotional) => AccountKind::Promotions,
        (Funding::Operator, CreditKind::Prepaid) => AccountKind::ExternalCash,
    };
    let transfer = Transfer::new(
        CREDIT_GRANTED,
        grant.id,
        &grant.currency,
        Some(grant.tenant_id),
        format!("{} credit granted: {}", grant.kind, grant.reason),
    )
    .debit(platform(source), grant.amount.get())
    .credit(
        Account::tenant(AccountKind::Wallet, grant.tenant_id),
        grant.amount.get(),
    );
    Some(transfer)
}

/// A credit note: revenue and tax given back; the invoice's amount due reduced by what
/// was applied, the rest to the wallet or owed back to the card.
pub fn credit_note_issued(note: &credit_note::Model) -> Transfer {
    let tenant = note.tenant_id;
    Transfer::new(
        CREDIT_NOTE_ISSUED,
        note.id,
        &note.currency,
        Some(tenant),
        format!("credit note {}", note.number),
    )
    .debit(platform(AccountKind::Revenue), note.subtotal.get())
    .debit(platform(AccountKind::TaxPayable), note.tax.get())
    .credit(
        Account::tenant(AccountKind::Receivable, tenant),
        note.applied.get(),
    )
    .credit(
        Account::tenant(AccountKind::Wallet, tenant),
        note.to_balance.get(),
    )
    .credit(
        Account::tenant(AccountKind::RefundsPayable, tenant),
        note.refunded.get(),
    )
}

/// A credit note's refund, sent through Stripe.
pub fn refund_sent(note: &credit_note::Model) -> Transfer {
    Transfer::new(
        REFUND_SENT,
        note.id,
        &note.currency,
        Some(note.tenant_id),
        format!("refund of credit note {} sent", note.number),
    )
    .debit(
        Account::tenant(AccountKind::RefundsPayable, note.tenant_id),
        note.refunded.get(),
    )
    .credit(platform(AccountKind::StripeCash), note.refunded.get())
}

/// A provider statement closed: the providers' earnings are a cost, of which the fees and
/// the SLA chargebacks come back to the platform, and the net is owed to the provider.
pub fn provider_statement_closed(statement: &provider_statement::Model) -> Transfer {
    Transfer::new(
        PROVIDER_STATEMENT_CLOSED,
        statement.id,
        &statement.currency,
        None,
        format!("provider statement {} closed", statement.number),
    )
    .debit(
        platform(AccountKind::ProviderEarnings),
        statement.gross.get(),
    )
    .credit(platform(AccountKind::PlatformFees), statement.fees.get())
    .credit(
        platform(AccountKind::SlaChargebacks),
        statement.sla_chargebacks.get(),
    )
    .credit(
        Account::provider(AccountKind::ProviderPayable, statement.provider_id),
        statement.net.get(),
    )
}

/// A payout queued: what it pays leaves the provider's payable and is in transit.
pub fn provider_payout_queued(payout: &provider_payout::Model) -> Transfer {
    Transfer::new(
        PROVIDER_PAYOUT_QUEUED,
        payout.id,
        &payout.currency,
        None,
        format!("payout {} queued", payout.number),
    )
    .debit(
        Account::provider(AccountKind::ProviderPayable, payout.provider_id),
        payout.amount.get(),
    )
    .credit(platform(AccountKind::PayoutsInTransit), payout.amount.get())
}

/// A payout sent: paid out of Stripe's balance (a Connect transfer) or the operator's
/// bank account (a SEPA file).
pub fn provider_payout_sent(payout: &provider_payout::Model) -> Transfer {
    let source = if payout.method == "stripe_connect" {
        AccountKind::StripeCash
    } else {
        AccountKind::BankCash
    };
    Transfer::new(
        PROVIDER_PAYOUT_SENT,
        payout.id,
        &payout.currency,
        None,
        format!("payout {} sent", payout.number),
    )
    .debit(platform(AccountKind::PayoutsInTransit), payout.amount.get())
    .credit(platform(source), payout.amount.get())
}

/// A payout refused for good: what it was to pay is owed to the provider again.
pub fn provider_payout_failed(payout: &provider_payout::Model) -> Transfer {
    Transfer::new(
        PROVIDER_PAYOUT_FAILED,
        payout.id,
        &payout.currency,
        None,
        format!("payout {} failed", payout.number),
    )
    .debit(platform(AccountKind::PayoutsInTransit), payout.amount.get())
    .credit(
        Account::provider(AccountKind::ProviderPayable, payout.provider_id),
        payout.amount.get(),
    )
}
