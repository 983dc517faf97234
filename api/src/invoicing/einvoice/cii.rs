//! UN/CEFACT Cross Industry Invoice (D16B) in the Factur-X / ZUGFeRD EN 16931 profile:
//! the XML a Factur-X PDF embeds as `factur-x.xml`.

use chrono::NaiveDate;

use super::xml::Xml;
use super::{Document, Party};

const GUIDELINE: &str = "urn:cen.eu:en16931:2017";
const RSM: &str = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100";
const RAM: &str =
    "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100";
const UDT: &str = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100";
const QDT: &str = "urn:un:unece:uncefact:data:standard:QualifiedDataType:100";

/// The document as CII XML.
pub fn render(doc: &Document) -> String {
    let mut xml = Xml::new();
    xml.open(
        "rsm:CrossIndustryInvoice",
        &[
            ("xmlns:rsm", RSM),
            ("xmlns:ram", RAM),
            ("xmlns:udt", UDT),
            ("xmlns:qdt", QDT),
        ],
    );
    xml.open("rsm:ExchangedDocumentContext", &[])
        .open("ram:GuidelineSpecifiedDocumentContextParameter", &[])
        .leaf("ram:ID", GUIDELINE)
        .close()
        .close();
    xml.open("rsm:ExchangedDocument", &[])
        .leaf("ram:ID", &doc.number)
        .leaf("ram:TypeCode", doc.kind.type_code());
    date(
        &mut xml,
        "ram:IssueDateTime",
        "udt:DateTimeString",
        doc.issued,
    );
    for note in &doc.notes {
        xml.open("ram:IncludedNote", &[])
            .leaf("ram:Content", note)
            .close();
    }
    xml.close();
    xml.open("rsm:SupplyChainTradeTransaction", &[]);
    for line in &doc.lines {
        trade_line(&mut xml, doc, line);
    }
    agreement(&mut xml, doc);
    xml.open("ram:ApplicableHeaderTradeDelivery", &[]).close();
    settlement(&mut xml, doc);
    xml.finish()
}

/// `<outer><inner format="102">YYYYMMDD</inner></outer>`.
fn date(xml: &mut Xml, outer: &'static str, inner: &str, day: NaiveDate) {
    xml.open(outer, &[])
        .leaf_with(
            inner,
            &[("format", "102")],
            &day.format("%Y%m%d").to_string(),
        )
        .close();
}

fn trade_line(xml: &mut Xml, doc: &Document, line: &super::DocLine) {
    xml.open("ram:IncludedSupplyChainTradeLineItem", &[])
        .open("ram:AssociatedDocumentLineDocument", &[])
        .leaf("ram:LineID", &line.id)
        .close()
        .open("ram:SpecifiedTradeProduct", &[])
        .maybe("ram:SellerAssignedID", line.sku.as_deref())
        .leaf("ram:Name", &line.name)
        .close()
        .open("ram:SpecifiedLineTradeAgreement", &[])
        .open("ram:NetPriceProductTradePrice", &[])
        .leaf("ram:ChargeAmount", &line.price.to_string())
        .close()
        .close()
        .open("ram:SpecifiedLineTradeDelivery", &[])
        .leaf_with(
            "ram:BilledQuantity",
            &[("unitCode", line.unit_code)],
            &line.quantity.to_string(),
        )
        .close()
        .open("ram:SpecifiedLineTradeSettlement", &[])
        .open("ram:ApplicableTradeTax", &[])
        .leaf("ram:TypeCode", "VAT")
        .leaf("ram:CategoryCode", line.category.code())
        .leaf(
            "ram:RateApplicablePercent",
            &line.percent.normalize().to_string(),
        )
        .close()
        .open("ram:SpecifiedTradeSettlementLineMonetarySummation", &[])
        .leaf("ram:LineTotalAmount", &doc.money(line.amount))
        .close()
        .close()
        .close();
}

fn agreement(xml: &mut Xml, doc: &Document) {
    xml.open("ram:ApplicableHeaderTradeAgreement", &[])
        .leaf("ram:BuyerReference", &doc.buyer_reference);
    party(xml, "ram:SellerTradeParty", &doc.seller);
    party(xml, "ram:BuyerTradeParty", &doc.buyer);
    if let Some(order) = &doc.order_reference {
        xml.open("ram:BuyerOrderReferencedDocument", &[])
            .leaf("ram:IssuerAssignedID", order)
            .close();
    }
    xml.close();
}

fn party(xml: &mut Xml, role: &'static str, p: &Party) {
    xml.open(role, &[]).leaf("ram:Name", &p.name);
    if let Some(registration) = &p.registration {
        xml.open("ram:SpecifiedLegalOrganization", &[])
            .leaf("ram:ID", registration)
            .close();
    }
    if let Some(email) = &p.email {
        xml.open("ram:DefinedTradeContact", &[])
            .open("ram:EmailURIUniversalCommunication", &[])
            .leaf("ram:URIID", email)
            .close()
            .close();
    }
    let mut street = p.address.lines.iter().map(String::as_str);
    xml.open("ram:PostalTradeAddress", &[])
        .maybe("ram:PostcodeCode", p.address.postal_code.as_deref())
        .maybe("ram:LineOne", street.next())
        .maybe("ram:LineTwo", street.next());
    let rest: Vec<&str> = street.collect();
    if !rest.is_empty() {
        xml.leaf("ram:LineThree", &rest.join(", "));
    }
    xml.maybe("ram:CityName", p.address.city.as_deref())
        .leaf("ram:CountryID", &p.address.country)
        .close();
    if let Some(email) = &p.email {
        xml.open("ram:URIUniversalCommunication", &[])
            .leaf_with("ram:URIID", &[("schemeID", "EM")], email)
            .close();
    }
    if let Some(vat) = &p.vat_id {
        xml.open("ram:SpecifiedTaxRegistration", &[])
            .leaf_with("ram:ID", &[("schemeID", "VA")], vat)
            .close();
    }
    xml.close();
}

fn settlement(xml: &mut Xml, doc: &Document) {
    xml.open("ram:ApplicableHeaderTradeSettlement", &[])
        .leaf("ram:InvoiceCurrencyCode", &doc.currency);
    xml.open("ram:SpecifiedTradeSettlementPaymentMeans", &[]);
    match &doc.iban {
        Some(iban) => {
            xml.leaf("ram:TypeCode", "58")
                .open("ram:PayeePartyCreditorFinancialAccount", &[])
                .leaf("ram:IBANID", iban)
                .close();
        }
        None => {
            xml.leaf("ram:TypeCode", "1");
        }
    }
    xml.close();
    for b in &doc.breakdown {
        xml.open("ram:ApplicableTradeTax", &[])
            .leaf("ram:CalculatedAmount", &doc.money(b.tax))
            .leaf("ram:TypeCode", "VAT")
            .maybe("ram:ExemptionReason", b.reason.as_deref())
            .leaf("ram:BasisAmount", &doc.money(b.taxable))
            .leaf("ram:CategoryCode", b.category.code())
            .maybe("ram:ExemptionReasonCode", b.category.exemption_code())
            .leaf(
                "ram:RateApplicablePercent",
                &b.percent.normalize().to_string(),
            )
            .close();
    }
    if let Some((start, end)) = doc.period {
        xml.open("ram:BillingSpecifiedPeriod", &[]);
        date(xml, "ram:StartDateTime", "udt:DateTimeString", start);
        date(xml, "ram:EndDateTime", "udt:DateTimeString", end);
        xml.close();
    }
    if doc.terms.is_some() || doc.due.is_some() {
        xml.open("ram:SpecifiedTradePaymentTerms", &[])
            .maybe("ram:Description", doc.terms.as_deref());
        if let Some(due) = doc.due {
            date(xml, "ram:DueDateDateTime", "udt:DateTimeString", due);
        }
        xml.close();
    }
    summation(xml, doc);
    if let Some((number, issued)) = &doc.preceding {
        xml.open("ram:InvoiceReferencedDocument", &[])
            .leaf("ram:IssuerAssignedID", number);
        date(
            xml,
            "ram:FormattedIssueDateTime",
            "qdt:DateTimeString",
            *issued,
        );
        xml.close();
    }
    xml.close();
}

fn summation(xml: &mut Xml, doc: &Document) {
    let t = &doc.totals;
    let currency = [("currencyID", doc.currency.as_str())];
    xml.open("ram:SpecifiedTradeSettlementHeaderMonetarySummation", &[])
        .leaf("ram:LineTotalAmount", &doc.money(t.lines))
        .leaf("ram:TaxBasisTotalAmount", &doc.money(t.lines))
        .leaf_with("ram:TaxTotalAmount", &currency, &doc.money(t.tax))
        .leaf("ram:GrandTotalAmount", &doc.money(t.with_tax));
    if !t.prepaid.is_zero() {
        xml.leaf("ram:TotalPrepaidAmount", &doc.money(t.prepaid));
    }
    xml.leaf("ram:DuePayableAmount", &doc.money(t.payable))
        .close();
}
