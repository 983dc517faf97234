//! Provider payouts (docs/providers.md, "Payouts"): what a closed statement left owed to
//! a provider, at or above its agreement's payout minimum, is queued with the statement
//! and paid once. `store` queues and records them with their ledger transfers; this
//! module is pure: the SEPA credit-transfer file (ISO 20022 `pain.001.001.09`) that pays
//! a batch of euro payouts from the operator's account.

pub mod store;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

pub const QUEUED: &str = "queued";
pub const SENT: &str = "sent";
pub const FAILED: &str = "failed";

pub const STRIPE_CONNECT: &str = "stripe_connect";
pub const SEPA: &str = "sepa_credit_transfer";
/// Paid by the operator outside neocloud, then recorded (`recordManualPayout`).
pub const MANUAL: &str = "manual";

/// An account as `IBAN BIC` (how payout accounts are stored), split.
pub fn iban_bic(account: &str) -> Option<(&str, &str)> {
    let (iban, bic) = account.split_once(' ')?;
    (!iban.is_empty() && !bic.is_empty()).then_some((iban, bic))
}

/// Who pays a SEPA file: the operator's name and account.
#[derive(Debug, Clone)]
pub struct Debtor {
    pub name: String,
    pub iban: String,
    pub bic: String,
}

/// One credit transfer of a file.
#[derive(Debug, Clone)]
pub struct Credit {
    /// The payout's number, sent as the end-to-end id the provider's bank shows.
    pub end_to_end_id: String,
    pub amount: Decimal,
    pub creditor: String,
    pub iban: String,
    pub bic: String,
    pub remittance: String,
}

/// Text as XML character data, cut to `max` characters (the schema's MaxNText).
fn text(value: &str, max: usize) -> String {
    let mut out = String::new();
    for c in value.chars().filter(|c| !c.is_control()).take(max) {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

fn agent(bic: &str) -> String {
    format!("<FinInstnId><BICFI>{}</BICFI></FinInstnId>", text(bic, 11))
}

/// The `pain.001.001.09` document paying `credits` in euros from `debtor`'s account on
/// `execution` (a date), identified by `message_id` (at most 35 characters).
pub fn pain001(
    debtor: &Debtor,
    message_id: &str,
    created_at: DateTime<Utc>,
    execution: chrono::NaiveDate,
    credits: &[Credit],
) -> String {
    let count = credits.len();
    let sum: Decimal = credits.iter().map(|c| c.amount).sum();
    let sum = sum.round_dp(2);
    let mut transactions = String::new();
    for c in credits {
        transactions.push_str(&format!(
            "<CdtTrfTxInf><PmtId><EndToEndId>{}</EndToEndId></PmtId>\
             <Amt><InstdAmt Ccy=\"EUR\">{}</InstdAmt></Amt>\
             <CdtrAgt>{}</CdtrAgt><Cdtr><Nm>{}</Nm></Cdtr>\
             <CdtrAcct><Id><IBAN>{}</IBAN></Id></CdtrAcct>\
             <RmtInf><Ustrd>{}</Ustrd></RmtInf></CdtTrfTxInf>",
            text(&c.end_to_end_id, 35),
            c.amount.round_dp(2),
            agent(&c.bic),
            text(&c.creditor, 140),
            text(&c.iban, 34),
            text(&c.remittance, 140),
        ));
    }
    let header = format!(
        "<GrpHdr><MsgId>{id}</MsgId><CreDtTm>{at}</CreDtTm><NbOfTxs>{count}</NbOfTxs>\
         <CtrlSum>{sum}</CtrlSum><InitgPty><Nm>{name}</Nm></InitgPty></GrpHdr>",
        id = text(message_id, 35),
        at = created_at.format("%Y-%m-%dT%H:%M:%SZ"),
        name = text(&debtor.name, 140),
    );
    let instruction = format!(
        "<PmtInf><PmtInfId>{id}</PmtInfId><PmtMtd>TRF</PmtMtd><NbOfTxs>{count}</NbOfTxs>\
         <CtrlSum>{sum}</CtrlSum><PmtTpInf><SvcLvl><Cd>SEPA</Cd></SvcLvl></PmtTpInf>\
         <ReqdExctnDt><Dt>{date}</Dt></ReqdExctnDt><Dbtr><Nm>{name}</Nm></Dbtr>\
         <DbtrAcct><Id><IBAN>{iban}</IBAN></Id></DbtrAcct><DbtrAgt>{agent}</DbtrAgt>\
         <ChrgBr>SLEV</ChrgBr>{transactions}</PmtInf>",
        id = text(message_id, 35),
        date = execution.format("%Y-%m-%d"),
        name = text(&debtor.name, 140),
        iban = text(&debtor.iban, 34),
        agent = agent(&debtor.bic),
    );
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.001.001.09\">\
         <CstmrCdtTrfInitn>{header}{instruction}</CstmrCdtTrfInitn></Document>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_counts_and_sums_its_transfers_and_escapes_text() {
        let debtor = Debtor {
            name: "Operator & Co".into(),
            iban: "DE89370400440532013000".into(),
            bic: "COBADEFFXXX".into(),
        };
        let credit = |n: &str, amount: &str| Credit {
            end_to_end_id: n.into(),
            amount: amount.parse().unwrap(),
            creditor: "Rhein <GPU> GmbH".into(),
            iban: "FR1420041010050500013M02606".into(),
            bic: "PSSTFRPPXXX".into(),
            remittance: "statement PS-RHEIN-0001".into(),
        };
        let at = "2026-12-06T10:00:00Z".parse().unwrap();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 12, 7).unwrap();
        let xml = pain001(
            &debtor,
            "M1",
            at,
            day,
            &[credit("PO-1", "10.5"), credit("PO-2", "0.25")],
        );
        assert!(xml.contains("<NbOfTxs>2</NbOfTxs><CtrlSum>10.75</CtrlSum>"));
        assert!(xml.contains("<InstdAmt Ccy=\"EUR\">10.5</InstdAmt>"));
        assert!(xml.contains("Operator &amp; Co") && xml.contains("Rhein &lt;GPU&gt; GmbH"));
        assert_eq!(iban_bic("DE89 X"), Some(("DE89", "X")));
        assert_eq!(iban_bic("DE89"), None);
    }
}
