//! PDF rendering of customer invoices, without any dependency.
//!
//! [`render`] lays out a [`PdfInvoice`] on A4 pages and writes a PDF 1.4 file by
//! hand: uncompressed content streams, an exact cross-reference table and the two
//! standard-14 fonts Helvetica and Helvetica-Bold in WinAnsiEncoding, so no font is
//! embedded. [`render_facturx`] writes the same pages as a Factur-X PDF/A-3B, with
//! metric-compatible fonts embedded and the invoice's XML attached (`pdfa.rs`). Text is measured with the Adobe AFM glyph widths to right-align numbers
//! and wrap descriptions. Writing the format directly keeps the output deterministic
//! and the billing service free of PDF, font and compression crates.

use std::fmt::Write as _;
use std::mem;

/// Everything printed on an invoice, already formatted as text (money as plain decimal strings).
#[derive(Debug, Clone, Default)]
pub struct PdfInvoice {
    pub operator_name: String,       // seller, e.g. "neocloud"
    pub operator_lines: Vec<String>, // seller address / tax id lines, may be empty
    pub tenant_name: String,         // buyer
    pub tenant_lines: Vec<String>,   // buyer address / tax id lines, may be empty
    pub tenant_id: String,
    pub buyer_label: String, // the heading over the buyer: "BILL TO" (default)
    pub buyer_id_label: String, // what the buyer's id is: "Tenant ID" (default)
    pub period_label: String, // what the period is: "Billing period" (default)
    pub title: String,       // "Invoice", "Draft invoice" or "Void invoice"
    pub document: String,    // what the number numbers: "Invoice" (default), "Credit note"
    pub number: Option<String>, // e.g. "NC-2026-000123"; None for drafts
    pub status: String,      // "OPEN", "PAID", "VOID", "DRAFT"
    pub issued_at: Option<String>, // e.g. "2026-12-01 00:00 UTC"
    pub due: Option<String>, // e.g. "2026-12-31 (net 30 days)"; None for drafts
    pub period_start: String,
    pub period_end: String,
    pub currency: String,                  // "USD"
    pub plan: String,                      // e.g. "standard v2"; not printed when empty
    pub references: Vec<(String, String)>, // more labelled details, e.g. the invoice a note credits
    pub lines: Vec<PdfLine>,
    pub subtotal: String,
    pub taxes: Vec<(String, String)>, // per rate: label ("VAT 19% of 100.00") and amount
    pub credits: Option<String>,      // credits applied, as a non-negative amount
    pub total: String,
    pub notes: Vec<String>, // free text lines printed at the bottom
}

/// One table row of an invoice.
#[derive(Debug, Clone, Default)]
pub struct PdfLine {
    pub description: String, // wrapped to three lines, then truncated with "..."
    pub quantity: String,
    pub unit: String, // "GPU-hour", "MIG slice 3g.40gb-hour", "kWh", ""; wrapped
    pub unit_price: String,
    pub amount: String, // may be negative, e.g. "-12.50"
}

const PAGE_W: f32 = 595.0;
const PAGE_H: f32 = 842.0;
const LEFT: f32 = 50.0;
const RIGHT: f32 = 545.0;
/// Lowest baseline / row bottom for body content; the footer lives below it.
const BOTTOM: f32 = 64.0;
const ROW_LEADING: f32 = 11.0;
const MAX_DESC_LINES: usize = 3;
const DESC_W: f32 = 200.0;
const PRICE_RIGHT: f32 = 462.0;
const BILL_TO_X: f32 = 320.0;

/// Table columns (Description, Quantity, Unit, Unit price, Amount): anchor and width.
const COLUMNS: [(At, f32); 5] = [
    (At::Left(LEFT), DESC_W),
    (At::Right(318.0), 60.0),
    (At::Left(328.0), 62.0),
    (At::Right(PRICE_RIGHT), 66.0),
    (At::Right(RIGHT), 75.0),
];

/// Helvetica advance widths (1/1000 em) for WinAnsi codes 32..=126, from the Adobe AFM.
#[rustfmt::skip]
const HELVETICA: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // space../
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, // 0..?
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, // @..O
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, // P.._
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, // `..o
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, // p..~
];

/// Helvetica-Bold advance widths (1/1000 em) for WinAnsi codes 32..=126, from the Adobe AFM.
#[rustfmt::skip]
const HELVETICA_BOLD: [u16; 95] = [
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, // space../
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, // 0..?
    975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778, // @..O
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556, // P.._
    333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611, // `..o
    611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584, // p..~
];

/// ASCII glyph of (about) the same width for each Latin-1 letter U+00C0..=U+00FF.
const LATIN1_LIKE: &[u8; 64] = b"AAAAAAWCEEEEIIIIDNOOOOO+OUUUUYPbaaaaaamceeeeIIIIdnooooo+ouuuuypy";

/// Horizontal anchor of a text run: its left or its right edge.
#[derive(Clone, Copy)]
enum At {
    Left(f32),
    Right(f32),
}

/// Font (Helvetica or Helvetica-Bold), size in points and gray level of a text run.
#[derive(Clone, Copy)]
struct Style {
    size: f32,
    bold: bool,
    gray: f32,
}

const fn style(size: f32, bold: bool, gray: f32) -> Style {
    Style { size, bold, gray }
}

const BODY: Style = style(9.0, false, 0.0);
const STRONG: Style = style(9.0, true, 0.0);
const MUTED: Style = style(9.0, false, 0.4);
const LABEL: Style = style(8.0, true, 0.4);
const FOOTER: Style = style(8.0, false, 0.4);
const TITLE: Style = style(20.0, true, 0.0);
const STAMP: Style = style(14.0, true, 0.0);
const LEAD: Style = style(10.0, false, 0.0);
const NAME: Style = style(11.0, true, 0.0);
const TOTAL: Style = style(11.0, true, 0.0);

/// Advance width of one WinAnsi byte in 1/1000 em.
fn glyph_width(byte: u8, bold: bool) -> f32 {
    let table = if bold { &HELVETICA_BOLD } else { &HELVETICA };
    let ascii = match byte {
        0xC0..=0xFF => LATIN1_LIKE.get(usize::from(byte - 0xC0)).copied(),
        _ => Some(byte),
    };
    let units = ascii.and_then(|b| table.get(usize::from(b.checked_sub(32)?)));
    f32::from(units.copied().unwrap_or(556))
}

/// Width in points of WinAnsi-encoded `text`.
fn width(text: &[u8], style: Style) -> f32 {
    let units: f32 = text.iter().map(|&b| glyph_width(b, style.bold)).sum();
    units * style.size / 1000.0
}

/// Encodes to WinAnsi bytes: Latin-1 is kept, whitespace controls become spaces,
/// everything else (C0/C1 controls, non-Latin-1) becomes '?'.
fn encode(text: &str) -> Vec<u8> {
    let byte = |c: char| match c {
        '\t' | '\n' | '\r' => b' ',
        ' '..='~' | '\u{a0}'..='\u{ff}' => u8::try_from(c).unwrap_or(b'?'),
        _ => b'?',
    };
    text.chars().map(byte).collect()
}

/// Appends `text` as a PDF literal string; non-ASCII bytes become octal escapes.
fn push_pdf_string(out: &mut String, text: &[u8]) {
    out.push('(');
    for &b in text {
        match b {
            b'(' | b')' | b'\\' => out.extend(['\\', char::from(b)]),
            32..=126 => out.push(char::from(b)),
            // Writing into a String cannot fail.
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push(')');
}

/// Shortens `text` to `max_w`, ending it with "..." when cut (or always if `force`).
fn ellipsize(text: &[u8], max_w: f32, style: Style, force: bool) -> Vec<u8> {
    if !force && width(text, style) <= max_w {
        return text.to_vec();
    }
    let mut budget = max_w - width(b"...", style);
    let mut out: Vec<u8> = Vec::with_capacity(text.len() + 3);
    for &b in text {
        budget -= width(&[b], style);
        if budget < 0.0 {
            break;
        }
        out.push(b);
    }
    out.truncate(out.trim_ascii_end().len());
    out.extend_from_slice(b"...");
    out
}

/// Word-wraps `text` to `max_w`, breaking over-long words; at most `max_lines`
/// lines, the last one ending in "..." when text was dropped.
fn wrap(text: &[u8], max_w: f32, style: Style, max_lines: usize) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    for word in text.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
        if lines.len() > max_lines {
            break;
        }
        let sep: &[u8] = if cur.is_empty() { b"" } else { b" " };
        if width(&cur, style) + width(sep, style) + width(word, style) <= max_w {
            cur.extend_from_slice(sep);
            cur.extend_from_slice(word);
            continue;
        }
        if !cur.is_empty() {
            lines.push(mem::take(&mut cur));
        }
        for &b in word {
            if !cur.is_empty() && width(&cur, style) + width(&[b], style) > max_w {
                lines.push(mem::take(&mut cur));
            }
            cur.push(b);
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            *last = ellipsize(last, max_w, style, true);
        }
    }
    lines
}

/// Text shown for credits: negated when it is a non-zero amount.
fn credits_text(credits: &str) -> String {
    let c = credits.trim();
    if c.is_empty() {
        "0.00".to_owned()
    } else if c.bytes().any(|b| (b'1'..=b'9').contains(&b)) && !c.starts_with('-') {
        format!("-{c}")
    } else {
        c.to_owned()
    }
}

/// `s`, or `fallback` when `s` is blank.
fn or<'a>(s: &'a str, fallback: &'a str) -> &'a str {
    if s.trim().is_empty() { fallback } else { s }
}

/// Title plus number, e.g. "Invoice NC-2026-000123".
fn doc_title(inv: &PdfInvoice) -> String {
    let title = or(&inv.title, "Invoice");
    match &inv.number {
        Some(n) if !n.trim().is_empty() => format!("{title} {n}"),
        _ => title.to_owned(),
    }
}

/// Lays out pages as content streams; `y` is the vertical cursor on the current page.
struct Layout<'a> {
    inv: &'a PdfInvoice,
    pages: Vec<String>,
    cur: String,
    y: f32,
}

impl Layout<'_> {
    /// Draws `text`, shortened to `max_w`, anchored at `at` on baseline `y`.
    fn text(&mut self, at: At, y: f32, style: Style, text: &str, max_w: f32) {
        let bytes = ellipsize(&encode(text), max_w, style, false);
        self.raw_text(at, y, style, &bytes);
    }

    /// A party's address and identity lines from baseline `y` down, each wrapped to two
    /// lines of `max_w` at most; the baseline after them.
    fn party_lines(&mut self, at: At, mut y: f32, lines: &[String], max_w: f32) -> f32 {
        for line in lines.iter().take(11) {
            for part in wrap(&encode(line), max_w, BODY, 2) {
                self.raw_text(at, y, BODY, &part);
                y -= 11.0;
            }
        }
        y
    }

    fn raw_text(&mut self, at: At, y: f32, style: Style, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let x = match at {
            At::Left(x) => x,
            At::Right(x) => x - width(bytes, style),
        };
        let (font, size, gray) = (if style.bold { 2 } else { 1 }, style.size, style.gray);
        // Writing into a String cannot fail.
        let _ = write!(self.cur, "BT {gray} g /F{font} {size} Tf {x:.2} {y:.2} Td ");
        push_pdf_string(&mut self.cur, bytes);
        self.cur.push_str(" Tj ET\n");
    }

    /// Horizontal rule from `x1` to the right margin; heavy rules are black.
    fn rule(&mut self, y: f32, x1: f32, heavy: bool) {
        let (w, gray) = if heavy { (0.8, 0.0) } else { (0.3, 0.7) };
        let _ = writeln!(
            self.cur,
            "{gray} G {w} w {x1:.2} {y:.2} m {RIGHT:.2} {y:.2} l S"
        );
    }

    /// "operator - Invoice NC-..." as used in running headers and footers.
    fn reference(&self) -> String {
        match self.inv.operator_name.trim() {
            "" => doc_title(self.inv),
            operator => format!("{operator} - {}", doc_title(self.inv)),
        }
    }

    fn header(&mut self) {
        let inv = self.inv;
        let top = PAGE_H - 56.0;
        let title = or(&inv.title, "Invoice");
        self.text(At::Left(LEFT), top, TITLE, title, 300.0);
        self.text(At::Right(RIGHT), top, STAMP, &inv.status, 180.0);
        let number = match &inv.number {
            Some(n) if !n.trim().is_empty() => format!("{} no. {n}", or(&inv.document, "Invoice")),
            _ => "No invoice number (draft)".to_owned(),
        };
        self.text(At::Left(LEFT), top - 20.0, LEAD, &number, 300.0);

        let y = top - 52.0;
        let (bill, bill_w) = (At::Left(BILL_TO_X), RIGHT - BILL_TO_X);
        self.text(At::Left(LEFT), y, LABEL, "FROM", 100.0);
        self.text(At::Left(LEFT), y - 14.0, NAME, &inv.operator_name, 250.0);
        let left = self.party_lines(At::Left(LEFT), y - 27.0, &inv.operator_lines, 250.0);
        self.text(bill, y, LABEL, or(&inv.buyer_label, "BILL TO"), 100.0);
        self.text(bill, y - 14.0, NAME, &inv.tenant_name, bill_w);
        let right = self.party_lines(bill, y - 27.0, &inv.tenant_lines, bill_w);
        let tenant = format!(
            "{}: {}",
            or(&inv.buyer_id_label, "Tenant ID"),
            inv.tenant_id
        );
        self.text(bill, right, BODY, &tenant, bill_w);

        let mut y = left.min(right - 11.0).min(y - 38.0) - 14.0;
        let period = format!("{} to {}", inv.period_start, inv.period_end);
        let issued = inv.issued_at.as_deref().unwrap_or("not issued");
        let mut details = vec![("Issue date", issued)];
        if let Some(due) = &inv.due {
            details.push(("Due date", due.as_str()));
        }
        details.extend([
            (or(&inv.period_label, "Billing period"), period.as_str()),
            ("Currency", inv.currency.as_str()),
        ]);
        if !inv.plan.is_empty() {
            details.push(("Plan", inv.plan.as_str()));
        }
        details.extend(inv.references.iter().map(|(l, v)| (l.as_str(), v.as_str())));
        for (label, value) in details {
            self.text(At::Left(LEFT), y, STRONG, label, 80.0);
            self.text(At::Left(LEFT + 85.0), y, BODY, value, RIGHT - LEFT - 85.0);
            y -= 12.0;
        }
        self.y = y - 8.0;
    }

    fn table_header(&mut self) {
        let amount = match self.inv.currency.trim() {
            "" => "Amount".to_owned(),
            c => format!("Amount ({c})"),
        };
        self.rule(self.y, LEFT, true);
        self.y -= 12.0;
        let labels = ["Description", "Quantity", "Unit", "Unit price", &amount];
        for ((at, max_w), label) in COLUMNS.into_iter().zip(labels) {
            self.text(at, self.y, STRONG, label, max_w);
        }
        self.y -= 5.0;
        self.rule(self.y, LEFT, true);
    }

    /// Closes the current page and starts a continuation page.
    fn new_page(&mut self, with_table_header: bool) {
        self.pages.push(mem::take(&mut self.cur));
        let y = PAGE_H - 50.0;
        self.text(At::Left(LEFT), y, MUTED, &self.reference(), 380.0);
        self.text(At::Right(RIGHT), y, MUTED, "(continued)", 100.0);
        self.rule(y - 6.0, LEFT, false);
        self.y = y - 14.0;
        if with_table_header {
            self.table_header();
        }
    }

    fn row(&mut self, line: &PdfLine) {
        let desc = wrap(&encode(&line.description), DESC_W, BODY, MAX_DESC_LINES);
        // A unit names its SKU's unit (`MIG slice 3g.40gb-hour`): wrapped like the
        // description rather than cut.
        let (unit_at, unit_w) = COLUMNS[2];
        let unit = wrap(&encode(&line.unit), unit_w, BODY, MAX_DESC_LINES);
        let height = desc.len().max(unit.len()) as f32 * ROW_LEADING + 5.0;
        if self.y - height < BOTTOM {
            self.new_page(true);
        }
        let base = self.y - 11.0;
        for (at, texts) in [(At::Left(LEFT), &desc), (unit_at, &unit)] {
            for (i, text) in texts.iter().enumerate() {
                self.raw_text(at, base - i as f32 * ROW_LEADING, BODY, text);
            }
        }
        let cells = [
            (COLUMNS[1], &line.quantity),
            (COLUMNS[3], &line.unit_price),
            (COLUMNS[4], &line.amount),
        ];
        for ((at, max_w), cell) in cells {
            self.text(at, base, BODY, cell, max_w);
        }
        self.y -= height;
        self.rule(self.y, LEFT, false);
    }

    fn totals(&mut self) {
        let inv = self.inv;
        let rows = inv.taxes.len() as f32;
        if self.y - 70.0 - 13.0 * rows < BOTTOM {
            self.new_page(false);
        }
        let mut y = self.y - 16.0;
        let credits = inv.credits.as_deref().map(credits_text);
        let subtotal = [("Subtotal", inv.subtotal.as_str())];
        let taxes = inv.taxes.iter().map(|(l, v)| (l.as_str(), v.as_str()));
        let credits = credits.iter().map(|c| ("Credits applied", c.as_str()));
        for (label, value) in subtotal.into_iter().chain(taxes).chain(credits) {
            self.text(At::Right(PRICE_RIGHT), y, BODY, label, 200.0);
            self.text(At::Right(RIGHT), y, BODY, value, 75.0);
            y -= 13.0;
        }
        self.rule(y + 6.0, BILL_TO_X, true);
        y -= 8.0;
        let label = match inv.currency.trim() {
            "" => "Total".to_owned(),
            c => format!("Total ({c})"),
        };
        self.text(At::Right(PRICE_RIGHT), y, TOTAL, &label, 150.0);
        self.text(At::Right(RIGHT), y, TOTAL, &inv.total, 80.0);
        self.y = y - 6.0;
        self.rule(self.y, BILL_TO_X, true);
    }

    fn notes(&mut self) {
        if self.inv.notes.is_empty() {
            return;
        }
        if self.y - 50.0 < BOTTOM {
            self.new_page(false);
        }
        self.y -= 28.0;
        self.text(At::Left(LEFT), self.y, STRONG, "Notes", 100.0);
        for note in &self.inv.notes {
            for line in wrap(&encode(note), RIGHT - LEFT, BODY, usize::MAX) {
                self.y -= 12.0;
                if self.y < BOTTOM {
                    self.new_page(false);
                    self.y -= 10.0;
                }
                self.raw_text(At::Left(LEFT), self.y, BODY, &line);
            }
        }
    }

    /// Adds "Page n of m" footers and returns the page content streams.
    fn finish(mut self) -> Vec<String> {
        self.pages.push(mem::take(&mut self.cur));
        let pages = mem::take(&mut self.pages);
        let (count, reference) = (pages.len(), self.reference());
        let mut done = Vec::with_capacity(count);
        for (i, page) in pages.into_iter().enumerate() {
            self.cur = page;
            self.rule(44.0, LEFT, false);
            self.text(At::Left(LEFT), 32.0, FOOTER, &reference, 380.0);
            let label = format!("Page {} of {count}", i + 1);
            self.text(At::Right(RIGHT), 32.0, FOOTER, &label, 100.0);
            done.push(mem::take(&mut self.cur));
        }
        done
    }
}

/// Lays the invoice out: its title and each page's content stream.
fn lay_out(invoice: &PdfInvoice) -> (String, Vec<String>) {
    let mut layout = Layout {
        inv: invoice,
        pages: Vec::new(),
        cur: String::new(),
        y: 0.0,
    };
    layout.header();
    layout.table_header();
    for line in &invoice.lines {
        layout.row(line);
    }
    if invoice.lines.is_empty() {
        let (y, none) = (layout.y - 11.0, "No charges for this period.");
        layout.text(At::Left(LEFT), y, MUTED, none, DESC_W);
        layout.y -= 16.0;
        layout.rule(layout.y, LEFT, false);
    }
    layout.totals();
    layout.notes();
    let title = doc_title(invoice);
    (title, layout.finish())
}

/// Renders the invoice as PDF bytes (A4 portrait). Never panics; many lines flow onto
/// further pages, with the table header repeated and "Page n of m" on each page.
pub fn render(invoice: &PdfInvoice) -> Vec<u8> {
    let (title, pages) = lay_out(invoice);
    assemble(&title, &invoice.operator_name, &pages, None)
}

/// The same document as a Factur-X PDF/A-3B carrying `xml` (the invoice's CII), its
/// fonts embedded (`pdfa.rs`).
pub fn render_facturx(invoice: &PdfInvoice, xml: &[u8]) -> Vec<u8> {
    let (title, pages) = lay_out(invoice);
    assemble(&title, &invoice.operator_name, &pages, Some(xml))
}

/// A PDF literal string of `text`, as the Info dictionary and the XMP share it.
fn info_text(text: &str) -> (String, String) {
    let bytes = encode(text);
    let mut literal = String::new();
    push_pdf_string(&mut literal, &bytes);
    (literal, bytes.iter().map(|&b| char::from(b)).collect())
}

/// Serializes catalog, page tree, fonts, info and pages with an exact xref table; with
/// `archive` (a Factur-X XML), as PDF/A-3B with its fonts embedded and the XML attached.
fn assemble(title: &str, author: &str, pages: &[String], archive: Option<&[u8]>) -> Vec<u8> {
    let count = pages.len();
    let kids: Vec<String> = (0..count).map(|i| format!("{} 0 R", 6 + 2 * i)).collect();
    let kids = kids.join(" ");
    let (title, title_text) = info_text(title);
    let (author, author_text) = info_text(author);
    let archive =
        archive.map(|xml| super::pdfa::archive(6 + 2 * count, &title_text, &author_text, xml));
    let catalog = archive.as_ref().map_or("", |a| a.catalog.as_str());
    let mut objects: Vec<Vec<u8>> = vec![
        format!("<< /Type /Catalog /Pages 2 0 R {catalog}>>").into_bytes(),
        format!("<< /Type /Pages /Kids [{kids}] /Count {count} >>").into_bytes(),
    ];
    for (i, name) in ["Helvetica", "Helvetica-Bold"].iter().enumerate() {
        let font = match &archive {
            Some(a) => a.fonts[i].clone(),
            None => format!(
                "<< /Type /Font /Subtype /Type1 /BaseFont /{name} /Encoding /WinAnsiEncoding >>"
            ),
        };
        objects.push(font.into_bytes());
    }
    objects
        .push(format!("<< /Title {title} /Author {author} /Producer (neocloud) >>").into_bytes());
    for (i, content) in pages.iter().enumerate() {
        let (fonts, contents) = ("<< /F1 3 0 R /F2 4 0 R >>", 7 + 2 * i);
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_W} {PAGE_H}] \
                 /Resources << /Font {fonts} >> /Contents {contents} 0 R >>"
            )
            .into_bytes(),
        );
        let length = content.len();
        objects.push(format!("<< /Length {length} >>\nstream\n{content}\nendstream").into_bytes());
    }
    let id = archive.as_ref().map(|a| a.id.clone());
    if let Some(a) = archive {
        objects.extend(a.objects);
    }

    let version = if id.is_some() { "1.7" } else { "1.4" };
    let mut out = format!("%PDF-{version}\n").into_bytes();
    out.extend_from_slice(b"%\xE2\xE3\xCF\xD3\n");
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let (xref_at, size) = (out.len(), objects.len() + 1);
    let mut tail = format!("xref\n0 {size}\n0000000000 65535 f \n");
    for offset in offsets {
        // Each entry is exactly 20 bytes, including the space before the newline.
        let _ = writeln!(tail, "{offset:010} 00000 n ");
    }
    let id = id.map(|id| format!(" /ID {id}")).unwrap_or_default();
    let trailer = format!("<< /Size {size} /Root 1 0 R /Info 5 0 R{id} >>");
    let _ = write!(tail, "trailer\n{trailer}\nstartxref\n{xref_at}\n%%EOF\n");
    out.extend_from_slice(tail.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(lines: usize) -> PdfInvoice {
        let line = |i| PdfLine {
            description: format!("H100 80GB on-demand, cluster eu-{i}"),
            quantity: "720.000".into(),
            unit: "GPU-hour".into(),
            unit_price: "2.4900".into(),
            amount: "1792.80".into(),
        };
        PdfInvoice {
            operator_name: "neocloud".into(),
            operator_lines: vec!["1 Example Street, Berlin".into(), "VAT DE123456789".into()],
            tenant_name: "Acme Research".into(),
            tenant_lines: vec!["Invalidenstraße 1".into(), "10115 Berlin".into()],
            tenant_id: "tn_42".into(),
            buyer_label: String::new(),
            buyer_id_label: String::new(),
            period_label: String::new(),
            title: "Invoice".into(),
            document: String::new(),
            number: Some("NC-2026-000123".into()),
            status: "OPEN".into(),
            issued_at: Some("2026-12-01 00:00 UTC".into()),
            due: Some("2026-12-31 (net 30 days)".into()),
            period_start: "2026-11-01".into(),
            period_end: "2026-12-01".into(),
            currency: "USD".into(),
            plan: "standard v2".into(),
            references: Vec::new(),
            lines: (0..lines).map(line).collect(),
            subtotal: "1792.80".into(),
            taxes: vec![("VAT 19% of 1792.80".into(), "340.63".into())],
            credits: Some("100.00".into()),
            total: "2033.43".into(),
            notes: vec!["Amounts are rounded half-even to the cent.".into()],
        }
    }

    fn find(hay: &[u8], needle: &str) -> Option<usize> {
        let needle = needle.as_bytes();
        hay.windows(needle.len()).position(|w| w == needle)
    }

    fn count(hay: &[u8], needle: &str) -> usize {
        let needle = needle.as_bytes();
        hay.windows(needle.len()).filter(|w| *w == needle).count()
    }

    fn number_at(pdf: &[u8], at: usize) -> usize {
        let digits = pdf[at..].iter().take_while(|b| b.is_ascii_digit()).count();
        let text = std::str::from_utf8(&pdf[at..at + digits]).unwrap();
        text.parse().unwrap()
    }

    /// Checks header, xref offsets, startxref, stream lengths, string balance and
    /// the page tree; returns the number of pages.
    fn check(pdf: &[u8]) -> usize {
        assert!(pdf.starts_with(b"%PDF-1.4\n") || pdf.starts_with(b"%PDF-1.7\n"));
        assert!(pdf.trim_ascii_end().ends_with(b"%%EOF"));
        let startxref = pdf.windows(9).rposition(|w| w == b"startxref").unwrap();
        let xref = number_at(pdf, startxref + 10);
        assert!(pdf[xref..].starts_with(b"xref\n0 "));
        let size = number_at(pdf, xref + 7);
        let first = xref + find(&pdf[xref + 5..], "\n").unwrap() + 6;
        assert_eq!(&pdf[first..first + 20], b"0000000000 65535 f \n");
        for obj in 1..size {
            let entry = &pdf[first + 20 * obj..first + 20 * (obj + 1)];
            assert!(entry.ends_with(b" 00000 n \n"));
            let offset = number_at(entry, 0);
            assert!(pdf[offset..].starts_with(format!("{obj} 0 obj\n").as_bytes()));
        }
        let trailer = format!("trailer\n<< /Size {size} /Root 1 0 R");
        assert!(pdf[first + 20 * size..].starts_with(trailer.as_bytes()));
        let (mut at, mut outside) = (0, Vec::new());
        while let Some(pos) = find(&pdf[at..], "/Length ") {
            let len = number_at(pdf, at + pos + 8);
            let start = at + pos + find(&pdf[at + pos..], "stream\n").unwrap() + 7;
            assert!(pdf[start + len..].starts_with(b"\nendstream\nendobj\n"));
            // Strings are balanced outside binary (font) streams.
            let binary = pdf[start..start + len].iter().any(|&b| b < 9);
            outside.extend_from_slice(&pdf[at..if binary { start } else { start + len }]);
            at = start + len;
        }
        outside.extend_from_slice(&pdf[at..]);
        let (mut depth, mut escaped) = (0, false);
        for &b in &outside {
            match b {
                _ if escaped => escaped = false,
                b'\\' if depth > 0 => escaped = true,
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            assert!(depth >= 0, "unbalanced ')'");
        }
        assert_eq!(depth, 0, "unbalanced '('");
        let pages = count(pdf, "/Type /Page /");
        assert!(find(pdf, &format!("/Count {pages} ")).is_some());
        pages
    }

    #[test]
    fn the_embedded_fonts_have_the_widths_the_layout_measures_with() {
        let [regular, bold] = crate::invoicing::pdfa::embedded_widths();
        for (embedded, afm) in [(regular, &HELVETICA), (bold, &HELVETICA_BOLD)] {
            for (code, (&e, &a)) in (32..).zip(embedded.iter().zip(afm.iter())) {
                assert!(e.abs_diff(u32::from(a)) <= 1, "code {code}: {e} vs {a}");
            }
        }
    }

    #[test]
    fn facturx_is_the_same_pages_as_pdfa_with_the_xml_attached() {
        let xml = b"<?xml version=\"1.0\"?><rsm:CrossIndustryInvoice/>";
        let plain = render(&sample(60));
        let pdf = render_facturx(&sample(60), xml);
        assert_eq!(check(&pdf), check(&plain));
        assert!(pdf.starts_with(b"%PDF-1.7\n"));
        for needed in [
            "/Subtype /TrueType /BaseFont /LiberationSans ",
            "/BaseFont /LiberationSans-Bold ",
            "/FontFile2 ",
            "/OutputIntents [",
            "/AFRelationship /Data",
            "/EmbeddedFiles << /Names [(factur-x.xml)",
            "<pdfaid:part>3</pdfaid:part>",
            "<dc:title><rdf:Alt><rdf:li xml:lang=\"x-default\">Invoice NC-2026-000123</rdf:li>",
            " /ID [<",
        ] {
            assert!(find(&pdf, needed).is_some(), "{needed}");
        }
        assert!(pdf.windows(xml.len()).any(|w| w == xml));
        assert_eq!(count(&pdf, "/Helvetica"), 0);
    }

    #[test]
    fn renders_valid_single_page() {
        let pdf = render(&sample(5));
        assert_eq!(check(&pdf), 1);
        let expected = [
            "(Page 1 of 1)",
            "NC-2026-000123)",
            "(Due date)",
            "(2026-12-31 \\(net 30 days\\))",
            "(Subtotal)",
            "(VAT 19% of 1792.80)",
            "(340.63)",
            "(-100.00)",
        ];
        for text in expected {
            assert!(find(&pdf, text).is_some(), "{text}");
        }
    }

    #[test]
    fn many_lines_flow_onto_pages() {
        let few = check(&render(&sample(5)));
        let pdf = render(&sample(300));
        let pages = check(&pdf);
        assert!(pages >= 3 && pages > few, "{pages}");
        for page in 1..=pages {
            assert!(find(&pdf, &format!("(Page {page} of {pages})")).is_some());
        }
        assert_eq!(count(&pdf, "(Description)"), pages);
    }

    #[test]
    fn escapes_parentheses_and_backslashes() {
        let mut inv = sample(1);
        inv.lines[0].description = r"GPU (H100) \ odd )( parens (".into();
        let pdf = render(&inv);
        check(&pdf);
        assert!(find(&pdf, r"(GPU \(H100\) \\ odd \)\( parens \() Tj").is_some());
    }

    #[test]
    fn non_latin1_is_replaced() {
        let mut inv = sample(2);
        inv.tenant_name = "Zürich ☃".into();
        inv.notes.push("tab\there — 東京".into());
        let pdf = render(&inv);
        check(&pdf);
        assert!(find(&pdf, r"(Z\374rich ?)").is_some());
        assert!(find(&pdf, "(tab here ? ??)").is_some());
        assert!(
            pdf[15..].is_ascii(),
            "only the binary marker line is non-ASCII"
        );
    }

    #[test]
    fn empty_invoice_renders() {
        let pdf = render(&PdfInvoice::default());
        assert_eq!(check(&pdf), 1);
        assert!(find(&pdf, "(Page 1 of 1)").is_some());
    }

    #[test]
    fn long_text_wraps_and_truncates() {
        let long = "word ".repeat(400) + &"x".repeat(500);
        let lines = wrap(long.as_bytes(), DESC_W, BODY, MAX_DESC_LINES);
        assert_eq!(lines.len(), MAX_DESC_LINES);
        assert!(lines.iter().all(|l| width(l, BODY) <= DESC_W));
        assert!(lines[2].ends_with(b"..."));
        let unbroken = wrap("y".repeat(300).as_bytes(), 100.0, STRONG, usize::MAX);
        assert!(unbroken.len() > 1 && unbroken.iter().all(|l| width(l, STRONG) <= 100.0));
        let mut inv = sample(3);
        inv.lines[1].description = long;
        inv.lines[2].amount = "-123456789012345678901234567890.00".into();
        inv.notes = (0..150).map(|i| format!("Note {i}: ").repeat(20)).collect();
        assert!(check(&render(&inv)) > 1);
    }

    #[test]
    fn widths_follow_afm() {
        assert!((width(b"Helvetica", style(10.0, false, 0.0)) - 41.12).abs() < 1e-3);
        assert!((width(b"Total", style(1000.0, true, 0.0)) - 2389.0).abs() < 1e-3);
        assert_eq!(width(&encode("Zürich"), BODY), width(b"Zurich", BODY));
        assert_eq!(credits_text("0.00"), "0.00");
        assert_eq!(credits_text("-3.10"), "-3.10");
    }
}
