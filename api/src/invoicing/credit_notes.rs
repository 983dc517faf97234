//! Credit notes as the API serves them: `issueCreditNote` (operators, audited), a tenant's
//! notes and one note with its lines (tenant-scoped in the store), and their exports. The
//! rules live in `neocloud_metering::credit_notes`.

use chrono::{DateTime, Utc};
use neocloud_metering::credit_notes::{self, NewCreditNote, store};
use neocloud_schema::entity::{credit_note, credit_note_line, invoice};
use neocloud_schema::ids::TenantId;
use sea_orm::DatabaseConnection;
use serde_json::json;
use uuid::Uuid;

use super::Billing;
use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// A note with its lines and the invoice it credits.
#[derive(Debug, Clone)]
pub struct CreditNoteView {
    pub note: credit_note::Model,
    pub lines: Vec<credit_note_line::Model>,
    pub invoice: invoice::Model,
}

impl CreditNoteView {
    /// (category, percent, net, tax) per rate, as the note stores them.
    pub fn rates(&self) -> Vec<[String; 4]> {
        let text = |r: &serde_json::Value, k: &str| {
            r.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        self.note
            .taxes
            .as_array()
            .map(|all| {
                all.iter()
                    .filter(|r| r.get("category").is_some_and(|c| !c.is_null()))
                    .map(|r| {
                        [
                            text(r, "category"),
                            text(r, "percent"),
                            text(r, "net"),
                            text(r, "tax"),
                        ]
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `issueCreditNote` (operator).
pub async fn issue(
    db: &DatabaseConnection,
    actor: &Principal,
    billing: &Billing,
    new: NewCreditNote,
    now: DateTime<Utc>,
) -> ApiResult<CreditNoteView> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let prefix = &billing.policy.invoice_prefix;
    let issued = credit_notes::issue(&txn, None, new, prefix, now).await?;
    let note = &issued.note;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(note.tenant_id),
            action: "credit_note.issue",
            object_type: "credit_note",
            object_id: note.id.to_string(),
            before: None,
            after: Some(json!({
                "number": note.number,
                "invoice_id": note.invoice_id,
                "form": note.form,
                "reason": note.reason,
                "total": note.total.get().to_string(),
                "applied": note.applied.get().to_string(),
                "to_balance": note.to_balance.get().to_string(),
                "refunded": note.refunded.get().to_string(),
            })),
        },
    )
    .await?;
    let invoice = neocloud_metering::invoicing::store::find(&txn, None, note.invoice_id.into())
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    txn.commit().await?;
    Ok(CreditNoteView {
        note: issued.note,
        lines: issued.lines,
        invoice,
    })
}

/// `creditNotes(tenantId)`: the tenant's notes, newest first.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
) -> ApiResult<Vec<credit_note::Model>> {
    let tenant = actor.acting_tenant(asked)?;
    Ok(store::list(db, Some(tenant)).await?)
}

/// `creditNote(id)`: one of the caller's notes (any, for operators).
pub async fn get(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
) -> ApiResult<CreditNoteView> {
    actor.require_user()?;
    let scope = actor.tenant_scope_or_all();
    let note = store::find(db, scope, id)
        .await?
        .ok_or_else(|| ApiError::not_found("credit note"))?;
    let lines = store::lines(db, note.tenant_id, note.id).await?;
    let invoice =
        neocloud_metering::invoicing::store::find(db, Some(note.tenant_id), note.invoice_id.into())
            .await?
            .ok_or_else(|| ApiError::not_found("invoice"))?;
    Ok(CreditNoteView {
        note,
        lines,
        invoice,
    })
}

/// What an invoice's notes came to: the notes and what is still due.
#[derive(Debug, Clone, Default)]
pub struct Credited {
    pub notes: Vec<credit_note::Model>,
    pub amount_due: rust_decimal::Decimal,
}

pub async fn of_invoice(db: &DatabaseConnection, invoice: &invoice::Model) -> ApiResult<Credited> {
    let notes = store::of_invoice(db, invoice.tenant_id, invoice.id.into()).await?;
    let amount_due = store::due_after(invoice, &notes);
    Ok(Credited { notes, amount_due })
}
