//! A credit note as a file, in the invoice export formats: CSV (a row per credited line,
//! then its tax per rate and totals), JSON (everything on it), PDF (the document the
//! customer files) and FOCUS (negative `Credit` rows beside the invoice's).

use neocloud_metering::parties::Parties;
use rust_decimal::Decimal;
use serde_json::json;

use super::credit_notes::CreditNoteView;
use super::einvoice::Document;
use super::export::{Format, e_invoice, missing, row};
use super::pdf::{PdfInvoice, PdfLine, render, render_facturx};
use crate::error::ApiResult;

pub fn file_name(view: &CreditNoteView, format: Format) -> String {
    format!("{}.{}", view.note.number, format.extension())
}

pub fn render_export(
    view: &CreditNoteView,
    format: Format,
    operator: &str,
    tenant: &str,
) -> ApiResult<Vec<u8>> {
    Ok(match format {
        Format::Csv => csv(view).into_bytes(),
        Format::Json => json(view, operator, tenant),
        Format::Pdf => render(&pdf_document(view, operator, tenant)),
        Format::Focus => focus(view, operator, tenant).into_bytes(),
        Format::Ubl | Format::Cii | Format::FacturX => {
            let doc = Document::of_credit_note(view).map_err(missing)?;
            let pdf = |xml: &[u8]| render_facturx(&pdf_document(view, operator, tenant), xml);
            e_invoice(&doc, format, pdf)?
        }
    })
}

const CSV_COLUMNS: [&str; 11] = [
    "credit_note",
    "invoice",
    "issued_at",
    "currency",
    "line",
    "invoice_line",
    "kind",
    "description",
    "amount",
    "tax_category",
    "tax_percent",
];

/// Money in the note's currency's minor units.
fn money(view: &CreditNoteView, amount: Decimal) -> String {
    super::in_minor_units(&view.note.currency)(amount).to_string()
}

fn csv(view: &CreditNoteView) -> String {
    let note = &view.note;
    let mut out = String::new();
    row(&mut out, &CSV_COLUMNS.map(|h| (h, false)));
    let invoice = view.invoice.number.clone().unwrap_or_default();
    let head = [
        note.number.clone(),
        invoice,
        note.issued_at.to_rfc3339(),
        note.currency.clone(),
    ];
    let mut push = |cells: [String; 7]| {
        let all: Vec<String> = head.iter().cloned().chain(cells).collect();
        let cells: Vec<(&str, bool)> = all
            .iter()
            .enumerate()
            .map(|(j, c)| (c.as_str(), j == 7))
            .collect();
        row(&mut out, &cells);
    };
    for (i, line) in view.lines.iter().enumerate() {
        push([
            (i + 1).to_string(),
            line.line_number.to_string(),
            "credit".to_owned(),
            line.description.clone(),
            money(view, line.amount.get()),
            line.tax_category.clone().unwrap_or_default(),
            line.tax_percent
                .map(|p| p.get().normalize().to_string())
                .unwrap_or_default(),
        ]);
    }
    let blank = String::new;
    push([
        blank(),
        blank(),
        "SUBTOTAL".into(),
        blank(),
        money(view, note.subtotal.get()),
        blank(),
        blank(),
    ]);
    for [category, percent, _, tax] in view.rates() {
        push([
            blank(),
            blank(),
            "TAX".into(),
            blank(),
            tax,
            category,
            percent,
        ]);
    }
    push([
        blank(),
        blank(),
        "TOTAL".into(),
        blank(),
        money(view, note.total.get()),
        blank(),
        blank(),
    ]);
    out
}

fn json(view: &CreditNoteView, operator: &str, tenant: &str) -> Vec<u8> {
    let note = &view.note;
    let body = json!({
        "id": note.id,
        "number": note.number,
        "operator": operator,
        "tenant": {"id": note.tenant_id, "name": tenant},
        "invoice": {"id": view.invoice.id, "number": view.invoice.number,
                    "period_start": view.invoice.period_start, "period_end": view.invoice.period_end},
        "parties": view.invoice.parties,
        "issued_at": note.issued_at,
        "currency": note.currency,
        "reason": note.reason,
        "form": note.form,
        "subtotal": money(view, note.subtotal.get()),
        "tax": money(view, note.tax.get()),
        "total": money(view, note.total.get()),
        "taxes": note.taxes,
        "settlement": {
            "applied_to_invoice": money(view, note.applied.get()),
            "to_balance": money(view, note.to_balance.get()),
            "refunded": money(view, note.refunded.get()),
            "refund_state": note.refund_state,
            "credit_grant_id": note.credit_grant_id,
        },
        "lines": view.lines.iter().map(|l| json!({
            "invoice_line": l.line_number,
            "description": l.description,
            "amount": money(view, l.amount.get()),
            "tax_category": l.tax_category,
            "tax_percent": l.tax_percent.map(|p| p.get().normalize().to_string()),
        })).collect::<Vec<_>>(),
        "rounding": "each rate's tax is the tax on everything its notes credited, rounded half away from zero, less what earlier notes took",
    });
    serde_json::to_vec_pretty(&body).unwrap_or_default()
}

/// The notes under a credit note: its reason, how it was settled, the legal tax note.
fn note_notes(view: &CreditNoteView) -> Vec<String> {
    let note = &view.note;
    let invoice_number = view.invoice.number.clone().unwrap_or_default();
    let mut notes = vec![format!("Reason: {}", note.reason)];
    let settled = [
        (
            note.applied.get(),
            format!("Applied to invoice {invoice_number}"),
        ),
        (note.to_balance.get(), "Credited to your balance".to_owned()),
        (
            note.refunded.get(),
            "Refunded to the card that paid the invoice".to_owned(),
        ),
    ];
    for (amount, what) in settled {
        if amount > Decimal::ZERO {
            notes.push(format!("{what}: {} {}", money(view, amount), note.currency));
        }
    }
    if view.rates().iter().any(|r| r[0] == "reverse_charge") {
        notes.push(neocloud_metering::tax::REVERSE_CHARGE_NOTE.to_owned());
    }
    notes
}

fn pdf_document(view: &CreditNoteView, operator: &str, tenant: &str) -> PdfInvoice {
    let note = &view.note;
    let invoice = &view.invoice;
    let parties: Option<Parties> = invoice
        .parties
        .clone()
        .and_then(|p| serde_json::from_value(p).ok());
    let seller = parties.as_ref().map(|p| &p.seller);
    let buyer = parties.as_ref().and_then(|p| p.buyer.as_ref());
    let invoice_number = invoice.number.clone().unwrap_or_default();
    let notes = note_notes(view);
    PdfInvoice {
        operator_name: seller
            .map_or(operator, |s| s.legal_name.as_str())
            .to_owned(),
        operator_lines: seller.map(super::export::seller_lines).unwrap_or_default(),
        tenant_name: buyer.map_or(tenant, |b| b.legal_name.as_str()).to_owned(),
        tenant_lines: buyer.map(super::export::buyer_lines).unwrap_or_default(),
        tenant_id: note.tenant_id.to_string(),
        buyer_label: String::new(),
        buyer_id_label: String::new(),
        period_label: String::new(),
        title: "Credit note".to_owned(),
        document: "Credit note".to_owned(),
        number: Some(note.number.clone()),
        status: "ISSUED".to_owned(),
        issued_at: Some(note.issued_at.format("%Y-%m-%d %H:%M UTC").to_string()),
        due: None,
        period_start: invoice
            .period_start
            .format("%Y-%m-%d %H:%M UTC")
            .to_string(),
        period_end: invoice.period_end.format("%Y-%m-%d %H:%M UTC").to_string(),
        currency: note.currency.clone(),
        plan: String::new(),
        references: vec![("Credits invoice".to_owned(), invoice_number)],
        lines: view
            .lines
            .iter()
            .map(|l| PdfLine {
                description: format!("Line {}: {}", l.line_number, l.description),
                quantity: "1".to_owned(),
                unit: String::new(),
                unit_price: money(view, l.amount.get()),
                amount: money(view, l.amount.get()),
            })
            .collect(),
        subtotal: money(view, note.subtotal.get()),
        taxes: view
            .rates()
            .into_iter()
            .map(|[category, percent, net, tax]| {
                (format!("{} {percent}% of {net}", tax_name(&category)), tax)
            })
            .collect(),
        credits: None,
        total: money(view, note.total.get()),
        notes,
    }
}

fn tax_name(category: &str) -> &'static str {
    match category {
        "reverse_charge" => "Reverse charge",
        "export" => "Export",
        _ => "VAT",
    }
}

/// FOCUS rows: each credited line as a negative `Credit` correction, then its tax.
fn focus(view: &CreditNoteView, operator: &str, tenant: &str) -> String {
    let mut out = String::new();
    row(&mut out, &super::focus::COLUMNS.map(|h| (h, false)));
    let note = &view.note;
    let credits = view.lines.iter().map(|l| {
        (
            "Credit",
            format!("Credit note {}: {}", note.number, l.description),
            -l.amount.get(),
        )
    });
    let taxes = view
        .rates()
        .into_iter()
        .filter_map(|[_, percent, net, tax]| {
            let tax: Decimal = tax.parse().ok()?;
            Some((
                "Tax",
                format!("Credit note {}: tax {percent}% of {net}", note.number),
                -tax,
            ))
        });
    for (category, description, amount) in credits.chain(taxes).collect::<Vec<_>>() {
        let cells = super::focus::correction(
            &view.invoice,
            &note.number,
            category,
            &description,
            &money(view, amount),
            operator,
            tenant,
        );
        let cells: Vec<(&str, bool)> = cells
            .iter()
            .enumerate()
            .map(|(j, c)| (c.as_str(), super::focus::TEXT_COLUMNS.contains(&j)))
            .collect();
        row(&mut out, &cells);
    }
    out
}
