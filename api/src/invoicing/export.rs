//! Invoice exports: CSV (a row per line, with the usage behind it), JSON (everything
//! needed to recompute the total), PDF (the document a customer files), FOCUS (the
//! FinOps Open Cost and Usage Specification column layout, one row per line), and the
//! EN 16931 e-invoices: UBL 2.1 (Peppol BIS Billing 3.0), CII, and Factur-X (the PDF as
//! PDF/A-3 with its CII embedded).

use neocloud_metering::parties::{Buyer, Parties, Seller};
use neocloud_metering::rating::period::Line;
use neocloud_schema::vocabulary::LineKind;
use serde_json::json;

use super::InvoiceView;
use super::einvoice::{self, Document};
use super::pdf::{PdfInvoice, PdfLine, render, render_facturx};
use crate::error::{ApiError, ApiResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
    Pdf,
    Focus,
    Ubl,
    Cii,
    FacturX,
}

impl Format {
    pub fn parse(text: &str) -> ApiResult<Format> {
        match text {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "pdf" => Ok(Format::Pdf),
            "focus" => Ok(Format::Focus),
            "ubl" => Ok(Format::Ubl),
            "cii" => Ok(Format::Cii),
            "facturx" => Ok(Format::FacturX),
            _ => Err(ApiError::invalid(
                "format",
                "one of csv, json, pdf, focus, ubl, cii, facturx",
            )),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv | Format::Focus => "text/csv; charset=utf-8",
            Format::Json => "application/json",
            Format::Pdf | Format::FacturX => "application/pdf",
            Format::Ubl | Format::Cii => "application/xml",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Focus => "focus.csv",
            Format::Json => "json",
            Format::Pdf => "pdf",
            Format::Ubl => "ubl.xml",
            Format::Cii => "cii.xml",
            Format::FacturX => "facturx.pdf",
        }
    }
}

/// The export's file name: the invoice number, or `draft-<id>`.
pub fn file_name(view: &InvoiceView, format: Format) -> String {
    let stem = view
        .invoice
        .number
        .clone()
        .unwrap_or_else(|| format!("draft-{}", view.invoice.id));
    format!("{stem}.{}", format.extension())
}

/// The invoice as a file. An e-invoice of an invoice that lacks what EN 16931 requires
/// (a draft, no buyer profile, no taxes, no seller VAT id) is `INVALID_STATE`, saying what
/// is missing.
pub fn render_export(
    view: &InvoiceView,
    format: Format,
    operator: &str,
    tenant: &str,
) -> ApiResult<Vec<u8>> {
    Ok(match format {
        Format::Csv => csv(view).into_bytes(),
        Format::Focus => focus(view, operator, tenant).into_bytes(),
        Format::Json => json(view, operator, tenant),
        Format::Pdf => render(&pdf_document(view, operator, tenant)),
        Format::Ubl | Format::Cii | Format::FacturX => {
            let doc = Document::of_invoice(view).map_err(missing)?;
            let pdf = |xml: &[u8]| render_facturx(&pdf_document(view, operator, tenant), xml);
            e_invoice(&doc, format, pdf)?
        }
    })
}

/// `doc` as the e-invoice `format` (UBL, or else CII, which a Factur-X file carries
/// inside the PDF that `pdf` renders around it).
pub(super) fn e_invoice(
    doc: &Document,
    format: Format,
    pdf: impl FnOnce(&[u8]) -> Vec<u8>,
) -> ApiResult<Vec<u8>> {
    let cii = || einvoice::cii::render(doc);
    Ok(match format {
        Format::Ubl => einvoice::ubl::render(doc).map_err(missing)?.into_bytes(),
        Format::FacturX => pdf(cii().as_bytes()),
        _ => cii().into_bytes(),
    })
}

pub(super) fn missing(why: einvoice::Missing) -> ApiError {
    ApiError::InvalidState {
        message: format!("no e-invoice: {why}"),
    }
}

/// One CSV field: quoted when it needs to be; text that a spreadsheet would run as a
/// formula gets a leading apostrophe.
fn field(text: &str, is_text: bool) -> String {
    let guarded = if is_text && text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if guarded.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

pub(crate) fn row(out: &mut String, cells: &[(&str, bool)]) {
    let line: Vec<String> = cells.iter().map(|(c, t)| field(c, *t)).collect();
    out.push_str(&line.join(","));
    out.push_str("\r\n");
}

fn trace_text(line: &Line, key: &str) -> String {
    match line.trace.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// The CSV's columns: the invoice, the line, the usage behind it, its tax.
const CSV_COLUMNS: [&str; 25] = [
    "invoice",
    "status",
    "period_start",
    "period_end",
    "currency",
    "line",
    "kind",
    "description",
    "sku",
    "metric",
    "tier",
    "quantity",
    "unit",
    "unit_price",
    "amount",
    "amount_exact",
    "plan",
    "usage_raw",
    "usage_raw_unit",
    "allocations",
    "minimum_top_up_seconds",
    "adjusts_invoice",
    "tax_category",
    "tax_percent",
    "tax_amount",
];

fn csv(view: &InvoiceView) -> String {
    let mut out = String::new();
    row(&mut out, &CSV_COLUMNS.map(|h| (h, false)));
    let invoice = &view.invoice;
    let number = invoice.number.clone().unwrap_or_else(|| "draft".into());
    for (i, line) in view.lines.iter().enumerate() {
        let cells = [
            number.clone(),
            invoice.status.to_string(),
            invoice.period_start.to_rfc3339(),
            invoice.period_end.to_rfc3339(),
            invoice.currency.clone(),
            (i + 1).to_string(),
            line.kind.to_string(),
            line.description.clone(),
            line.sku_name.clone().unwrap_or_default(),
            opt(line.metric),
            opt(line.tier.map(|t| t + 1)),
            line.quantity.to_string(),
            line.unit.clone(),
            line.unit_price.to_string(),
            line.amount.to_string(),
            line.amount_exact.to_string(),
            trace_text(line, "plan"),
            trace_text(line, "raw"),
            trace_text(line, "raw_unit"),
            trace_text(line, "allocations"),
            trace_text(line, "minimum_top_up_seconds"),
            opt(line.adjusts_invoice),
            opt(line.tax.as_ref().map(|t| t.category.as_str())),
            opt(line.tax.as_ref().map(|t| t.percent.normalize())),
            opt(line.tax.as_ref().map(|t| t.amount)),
        ];
        let text_columns = [7, 8, 16];
        let cells: Vec<(&str, bool)> = cells
            .iter()
            .enumerate()
            .map(|(j, c)| (c.as_str(), text_columns.contains(&j)))
            .collect();
        row(&mut out, &cells);
    }
    totals(&mut out, view, &number);
    out
}

/// The closing rows, marked in the `kind` column with the amount in `amount`: SUBTOTAL,
/// a TAX row per rate (its taxable amount in `quantity`, its category and rate in the tax
/// columns, its note in `description`) and CREDITS (negative: what credits paid) when
/// there are taxes or credits, then TOTAL. SUBTOTAL plus the TAX rows plus CREDITS is the
/// TOTAL.
fn totals(out: &mut String, view: &InvoiceView, number: &str) {
    let invoice = &view.invoice;
    let mut totals = Vec::new();
    if !view.credits.is_zero() || !view.taxes.is_empty() {
        totals.push(("SUBTOTAL", view.subtotal, None));
        for tax in &view.taxes {
            totals.push(("TAX", tax.tax, Some(tax)));
        }
        totals.push(("CREDITS", -view.credits, None));
    }
    totals.push(("TOTAL", view.total, None));
    for (kind, amount, tax) in totals {
        // The invoice's columns, the kind, and the amount; nothing per line.
        let mut cells = vec![String::new(); CSV_COLUMNS.len()];
        cells[0] = number.to_owned();
        cells[1] = invoice.status.to_string();
        cells[2] = invoice.period_start.to_rfc3339();
        cells[3] = invoice.period_end.to_rfc3339();
        cells[4] = invoice.currency.clone();
        cells[6] = kind.to_owned();
        cells[14] = amount.to_string();
        if let Some(tax) = tax {
            cells[7] = tax.note.clone().unwrap_or_default();
            cells[11] = tax.taxable.to_string();
            cells[22] = tax.category.as_str().to_owned();
            cells[23] = tax.percent.normalize().to_string();
        }
        let cells: Vec<(&str, bool)> = cells
            .iter()
            .enumerate()
            .map(|(j, c)| (c.as_str(), j == 7))
            .collect();
        row(out, &cells);
    }
}

fn json(view: &InvoiceView, operator: &str, tenant: &str) -> Vec<u8> {
    let invoice = &view.invoice;
    let body = json!({
        "id": invoice.id,
        "number": invoice.number,
        "status": invoice.status,
        "operator": operator,
        "tenant": {"id": invoice.tenant_id, "name": tenant},
        "currency": invoice.currency,
        "period_start": invoice.period_start,
        "period_end": invoice.period_end,
        "plan": invoice.plan,
        "finalized_at": invoice.finalized_at,
        "parties": invoice.parties,
        "due_at": invoice.due_at,
        "paid_at": invoice.paid_at,
        "voided_at": invoice.voided_at,
        "void_reason": invoice.void_reason,
        "subtotal": view.subtotal.to_string(),
        "tax": view.tax.to_string(),
        "taxes": view.taxes,
        "credits": view.credits.to_string(),
        "total": view.total.to_string(),
        "credit_notes": view.credit_notes.iter().map(|(n, t)| json!({"number": n, "total": t.to_string()})).collect::<Vec<_>>(),
        "amount_due": view.amount_due.to_string(),
        "lines": view.lines,
        "rounding": "each line: quantity × unit_price, rounded half-even to the currency's minor unit; subtotal = the lines before credits; each rate's tax = its taxable amount × rate, rounded half away from zero; total = subtotal + tax − credits",
        "tier_numbering": "lines[].tier and lines[].trace.tier count from 1, as GraphQL and the CSV do",
        "rating": view.rating,
    });
    serde_json::to_vec_pretty(&body).unwrap_or_default()
}

/// FOCUS 1.2 columns, one row per line (`focus.rs`).
fn focus(view: &InvoiceView, operator: &str, tenant: &str) -> String {
    let mut out = String::new();
    row(&mut out, &super::focus::COLUMNS.map(|h| (h, false)));
    for cells in super::focus::rows(view, operator, tenant) {
        let cells: Vec<(&str, bool)> = cells
            .iter()
            .enumerate()
            .map(|(j, c)| (c.as_str(), super::focus::TEXT_COLUMNS.contains(&j)))
            .collect();
        row(&mut out, &cells);
    }
    out
}

/// "2026-12-31 (net 30 days)", or "2026-12-01 (due on receipt)".
fn due_text(invoice: &neocloud_schema::entity::invoice::Model) -> Option<String> {
    let due = invoice.due_at?;
    let days = invoice.finalized_at.map_or(0, |at| (due - at).num_days());
    let terms = match days {
        0 => "due on receipt".to_owned(),
        1 => "net 1 day".to_owned(),
        n => format!("net {n} days"),
    };
    Some(format!("{} ({terms})", due.format("%Y-%m-%d")))
}

/// The seller and buyer frozen on a finalized invoice (none on drafts and on invoices
/// finalized before parties were kept).
fn parties(invoice: &neocloud_schema::entity::invoice::Model) -> Option<Parties> {
    serde_json::from_value(invoice.parties.clone()?).ok()
}

/// The seller's lines under its name: address, country, VAT id, registration, contact,
/// bank.
pub(super) fn seller_lines(seller: &Seller) -> Vec<String> {
    let mut lines = seller.address_lines.clone();
    let labelled = [
        ("", &seller.country),
        ("VAT ID: ", &seller.vat_id),
        ("Registration: ", &seller.registration),
        ("", &seller.email),
        ("Bank: ", &seller.bank),
    ];
    lines.extend(
        labelled
            .iter()
            .filter(|(_, v)| !v.trim().is_empty())
            .map(|(label, v)| format!("{label}{v}")),
    );
    lines
}

/// The buyer's lines under its name: address, VAT id (marked not verified), PO number.
pub(super) fn buyer_lines(buyer: &Buyer) -> Vec<String> {
    let mut lines = buyer.address_lines.clone();
    lines.push(format!("{} {}", buyer.postal_code, buyer.city));
    lines.push(buyer.country.clone());
    if let Some(vat) = &buyer.vat_id {
        lines.push(format!("VAT ID: {vat} (not verified)"));
    }
    if let Some(po) = &buyer.po_number {
        lines.push(format!("PO: {po}"));
    }
    lines
}

/// The notes under an invoice: how it was settled or voided, its legal tax notes, and
/// how its amounts are computed.
fn invoice_notes(view: &InvoiceView) -> Vec<String> {
    let invoice = &view.invoice;
    let mut notes: Vec<String> = view.taxes.iter().filter_map(|t| t.note.clone()).collect();
    notes.dedup();
    notes.extend([
        "Each line is quantity × unit price, rounded half-even to the currency's minor unit; the subtotal is the sum of the rounded lines.".to_owned(),
        "The usage and plan behind every line are in the JSON and CSV exports of this invoice.".to_owned(),
    ]);
    if !view.taxes.is_empty() {
        notes.push("Amounts are before tax; each rate's tax is its taxable amount × rate, rounded half away from zero.".to_owned());
    }
    let credits: Vec<String> = view
        .lines
        .iter()
        .filter(|l| l.kind == LineKind::Credit)
        .map(|l| format!("{} ({})", l.description, l.amount))
        .collect();
    if !credits.is_empty() {
        notes.push(format!(
            "Credits applied after tax: {}.",
            credits.join("; ")
        ));
    }
    if let Some(reason) = &invoice.void_reason {
        notes.insert(0, format!("Voided: {reason}"));
    }
    if !view.credit_notes.is_empty() {
        let listed: Vec<String> = view
            .credit_notes
            .iter()
            .map(|(number, total)| format!("{number} ({total})"))
            .collect();
        notes.insert(
            0,
            format!(
                "Credit notes: {}. Amount due: {} {}.",
                listed.join(", "),
                view.amount_due,
                invoice.currency
            ),
        );
    }
    notes
}

fn pdf_document(view: &InvoiceView, operator: &str, tenant: &str) -> PdfInvoice {
    let parties = parties(&view.invoice);
    let seller = parties.as_ref().map(|p| &p.seller);
    let buyer = parties.as_ref().and_then(|p| p.buyer.as_ref());
    let invoice = &view.invoice;
    let title = match invoice.status {
        neocloud_schema::vocabulary::InvoiceStatus::Draft => "Draft invoice",
        neocloud_schema::vocabulary::InvoiceStatus::Void => "Void invoice",
        _ => "Invoice",
    };
    let notes = invoice_notes(view);
    PdfInvoice {
        operator_name: seller
            .map_or(operator, |s| s.legal_name.as_str())
            .to_owned(),
        operator_lines: seller.map(seller_lines).unwrap_or_default(),
        tenant_name: buyer.map_or(tenant, |b| b.legal_name.as_str()).to_owned(),
        tenant_lines: buyer.map(buyer_lines).unwrap_or_default(),
        tenant_id: invoice.tenant_id.to_string(),
        buyer_label: String::new(),
        buyer_id_label: String::new(),
        period_label: String::new(),
        title: title.to_owned(),
        document: "Invoice".to_owned(),
        number: invoice.number.clone(),
        status: invoice.status.as_str().to_uppercase(),
        issued_at: invoice
            .finalized_at
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string()),
        due: due_text(invoice),
        period_start: invoice
            .period_start
            .format("%Y-%m-%d %H:%M UTC")
            .to_string(),
        period_end: invoice.period_end.format("%Y-%m-%d %H:%M UTC").to_string(),
        currency: invoice.currency.clone(),
        plan: invoice.plan.clone(),
        references: Vec::new(),
        // Credits are paid with, not charged: they come off after tax ("Credits applied"),
        // each named in the notes, so the table's lines add up to the subtotal.
        lines: view
            .lines
            .iter()
            .filter(|l| l.kind != LineKind::Credit)
            .map(|l| PdfLine {
                description: line_description(l, view.taxes.len() > 1),
                quantity: l.quantity.round_dp(4).normalize().to_string(),
                unit: l.unit.clone(),
                unit_price: l.unit_price.to_string(),
                amount: l.amount.to_string(),
            })
            .collect(),
        subtotal: view.subtotal.to_string(),
        taxes: view.taxes.iter().map(tax_row).collect(),
        credits: Some(view.credits.to_string()),
        total: view.total.to_string(),
        notes,
    }
}

/// A line's description, with its tax rate when the invoice has several.
fn line_description(line: &Line, several_rates: bool) -> String {
    match &line.tax {
        Some(tax) if several_rates => {
            format!("{} (tax {}%)", line.description, tax.percent.normalize())
        }
        _ => line.description.clone(),
    }
}

/// A rate's row under the subtotal: "VAT 19% of 100.00", "Reverse charge 0% of 100.00".
fn tax_row(tax: &neocloud_metering::tax::TaxSummary) -> (String, String) {
    use neocloud_metering::tax::TaxCategory;
    let name = match tax.category {
        TaxCategory::Standard => format!("VAT {}", tax.jurisdiction),
        TaxCategory::ReverseCharge => "Reverse charge".to_owned(),
        TaxCategory::Export => "Export".to_owned(),
    };
    let label = format!("{name} {}% of {}", tax.percent.normalize(), tax.taxable);
    (label, tax.tax.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_formulas_defused() {
        assert_eq!(field("plain", true), "plain");
        assert_eq!(field("a,b", true), "\"a,b\"");
        assert_eq!(field("say \"hi\"", true), "\"say \"\"hi\"\"\"");
        assert_eq!(field("=HYPERLINK(1)", true), "'=HYPERLINK(1)");
        assert_eq!(field("-12.50", false), "-12.50");
    }
}
