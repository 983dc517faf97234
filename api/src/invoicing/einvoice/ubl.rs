//! UBL 2.1 following Peppol BIS Billing 3.0: an `Invoice` or a `CreditNote`, its
//! elements in the order the UBL 2.1 schema fixes.

use super::xml::Xml;
use super::{Document, Kind, Missing, Party};

const CUSTOMIZATION: &str =
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0";
const PROFILE: &str = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0";
const CAC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2";
const CBC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2";

/// What Peppol needs beyond EN 16931: both parties' electronic addresses, on which it
/// routes (PEPPOL-EN16931-R010, R020), here their e-mail addresses.
pub fn peppol_gap(doc: &Document) -> Option<Missing> {
    if doc.seller.email.is_none() {
        return Some(Missing(
            "Peppol needs the seller's electronic address (billing.seller_email)".into(),
        ));
    }
    doc.buyer.email.is_none().then(|| {
        Missing(
            "Peppol needs the buyer's electronic address: set billingEmail in the billing profile"
                .into(),
        )
    })
}

/// The document as UBL 2.1 XML.
pub fn render(doc: &Document) -> Result<String, Missing> {
    if let Some(gap) = peppol_gap(doc) {
        return Err(gap);
    }
    let (root, namespace) = match doc.kind {
        Kind::Invoice => (
            "Invoice",
            "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
        ),
        Kind::CreditNote => (
            "CreditNote",
            "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
        ),
    };
    let mut xml = Xml::new();
    xml.open(
        root,
        &[("xmlns", namespace), ("xmlns:cac", CAC), ("xmlns:cbc", CBC)],
    );
    header(&mut xml, doc);
    party(&mut xml, "cac:AccountingSupplierParty", &doc.seller);
    party(&mut xml, "cac:AccountingCustomerParty", &doc.buyer);
    payment(&mut xml, doc);
    taxes(&mut xml, doc);
    totals(&mut xml, doc);
    for line in &doc.lines {
        invoice_line(&mut xml, doc, line);
    }
    Ok(xml.finish())
}

fn header(xml: &mut Xml, doc: &Document) {
    xml.leaf("cbc:CustomizationID", CUSTOMIZATION)
        .leaf("cbc:ProfileID", PROFILE)
        .leaf("cbc:ID", &doc.number)
        .leaf("cbc:IssueDate", &doc.issued.to_string());
    if doc.kind == Kind::Invoice {
        xml.maybe("cbc:DueDate", doc.due.map(|d| d.to_string()).as_deref());
        xml.leaf("cbc:InvoiceTypeCode", doc.kind.type_code());
    } else {
        xml.leaf("cbc:CreditNoteTypeCode", doc.kind.type_code());
    }
    for note in &doc.notes {
        xml.leaf("cbc:Note", note);
    }
    xml.leaf("cbc:DocumentCurrencyCode", &doc.currency)
        .leaf("cbc:BuyerReference", &doc.buyer_reference);
    if let Some((start, end)) = doc.period {
        xml.open("cac:InvoicePeriod", &[])
            .leaf("cbc:StartDate", &start.to_string())
            .leaf("cbc:EndDate", &end.to_string())
            .close();
    }
    if let Some(order) = &doc.order_reference {
        xml.open("cac:OrderReference", &[])
            .leaf("cbc:ID", order)
            .close();
    }
    if let Some((number, date)) = &doc.preceding {
        xml.open("cac:BillingReference", &[])
            .open("cac:InvoiceDocumentReference", &[])
            .leaf("cbc:ID", number)
            .leaf("cbc:IssueDate", &date.to_string())
            .close()
            .close();
    }
}

/// The Peppol electronic address: the party's e-mail (scheme EM).
fn party(xml: &mut Xml, role: &'static str, p: &Party) {
    xml.open(role, &[]).open("cac:Party", &[]);
    if let Some(email) = &p.email {
        xml.leaf_with("cbc:EndpointID", &[("schemeID", "EM")], email);
    }
    xml.open("cac:PostalAddress", &[]);
    let mut street = p.address.lines.iter();
    xml.maybe("cbc:StreetName", street.next().map(String::as_str))
        .maybe(
            "cbc:AdditionalStreetName",
            street.next().map(String::as_str),
        )
        .maybe("cbc:CityName", p.address.city.as_deref())
        .maybe("cbc:PostalZone", p.address.postal_code.as_deref());
    let rest: Vec<&str> = street.map(String::as_str).collect();
    if !rest.is_empty() {
        xml.open("cac:AddressLine", &[])
            .leaf("cbc:Line", &rest.join(", "))
            .close();
    }
    xml.open("cac:Country", &[])
        .leaf("cbc:IdentificationCode", &p.address.country)
        .close()
        .close();
    if let Some(vat) = &p.vat_id {
        xml.open("cac:PartyTaxScheme", &[])
            .leaf("cbc:CompanyID", vat)
            .open("cac:TaxScheme", &[])
            .leaf("cbc:ID", "VAT")
            .close()
            .close();
    }
    xml.open("cac:PartyLegalEntity", &[])
        .leaf("cbc:RegistrationName", &p.name)
        .maybe("cbc:CompanyID", p.registration.as_deref())
        .close();
    if let Some(email) = &p.email {
        xml.open("cac:Contact", &[])
            .leaf("cbc:ElectronicMail", email)
            .close();
    }
    xml.close().close();
}

fn payment(xml: &mut Xml, doc: &Document) {
    xml.open("cac:PaymentMeans", &[]);
    match &doc.iban {
        Some(iban) => {
            xml.leaf_with("cbc:PaymentMeansCode", &[("name", "Credit transfer")], "58")
                .leaf("cbc:PaymentID", &doc.number)
                .open("cac:PayeeFinancialAccount", &[])
                .leaf("cbc:ID", iban)
                .close();
        }
        None => {
            xml.leaf("cbc:PaymentMeansCode", "1");
        }
    }
    xml.close();
    if let Some(terms) = &doc.terms {
        xml.open("cac:PaymentTerms", &[])
            .leaf("cbc:Note", terms)
            .close();
    }
}

fn taxes(xml: &mut Xml, doc: &Document) {
    let currency = [("currencyID", doc.currency.as_str())];
    xml.open("cac:TaxTotal", &[])
        .leaf_with("cbc:TaxAmount", &currency, &doc.money(doc.totals.tax));
    for b in &doc.breakdown {
        xml.open("cac:TaxSubtotal", &[])
            .leaf_with("cbc:TaxableAmount", &currency, &doc.money(b.taxable))
            .leaf_with("cbc:TaxAmount", &currency, &doc.money(b.tax))
            .open("cac:TaxCategory", &[])
            .leaf("cbc:ID", b.category.code())
            .leaf("cbc:Percent", &b.percent.normalize().to_string())
            .maybe("cbc:TaxExemptionReasonCode", b.category.exemption_code())
            .maybe("cbc:TaxExemptionReason", b.reason.as_deref());
        xml.open("cac:TaxScheme", &[])
            .leaf("cbc:ID", "VAT")
            .close()
            .close()
            .close();
    }
    xml.close();
}

fn totals(xml: &mut Xml, doc: &Document) {
    let currency = [("currencyID", doc.currency.as_str())];
    let t = &doc.totals;
    xml.open("cac:LegalMonetaryTotal", &[])
        .leaf_with("cbc:LineExtensionAmount", &currency, &doc.money(t.lines))
        .leaf_with("cbc:TaxExclusiveAmount", &currency, &doc.money(t.lines))
        .leaf_with("cbc:TaxInclusiveAmount", &currency, &doc.money(t.with_tax));
    if !t.prepaid.is_zero() {
        xml.leaf_with("cbc:PrepaidAmount", &currency, &doc.money(t.prepaid));
    }
    xml.leaf_with("cbc:PayableAmount", &currency, &doc.money(t.payable))
        .close();
}

fn invoice_line(xml: &mut Xml, doc: &Document, line: &super::DocLine) {
    let currency = [("currencyID", doc.currency.as_str())];
    let (element, quantity) = match doc.kind {
        Kind::Invoice => ("cac:InvoiceLine", "cbc:InvoicedQuantity"),
        Kind::CreditNote => ("cac:CreditNoteLine", "cbc:CreditedQuantity"),
    };
    xml.open(element, &[])
        .leaf("cbc:ID", &line.id)
        .leaf_with(
            quantity,
            &[("unitCode", line.unit_code)],
            &line.quantity.to_string(),
        )
        .leaf_with(
            "cbc:LineExtensionAmount",
            &currency,
            &doc.money(line.amount),
        )
        .open("cac:Item", &[])
        .leaf("cbc:Name", &line.name);
    if let Some(sku) = &line.sku {
        xml.open("cac:SellersItemIdentification", &[])
            .leaf("cbc:ID", sku)
            .close();
    }
    xml.open("cac:ClassifiedTaxCategory", &[])
        .leaf("cbc:ID", line.category.code())
        .leaf("cbc:Percent", &line.percent.normalize().to_string())
        .open("cac:TaxScheme", &[])
        .leaf("cbc:ID", "VAT")
        .close()
        .close()
        .close();
    xml.open("cac:Price", &[])
        .leaf_with("cbc:PriceAmount", &currency, &line.price.to_string())
        .close()
        .close();
}
