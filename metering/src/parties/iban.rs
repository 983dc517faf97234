//! International bank account numbers (ISO 13616): the check that a provider's payout
//! account and the operator's payout account must pass, and finding the IBAN in the
//! seller's free-text bank line for an e-invoice's payment instructions.

/// Two letters, two check digits, up to 30 uppercase letters and digits; the number
/// formed by moving the first four characters to the end (letters as 10–35) is 1 modulo
/// 97.
pub fn valid(iban: &str) -> bool {
    let b = iban.as_bytes();
    let shaped = (15..=34).contains(&b.len())
        && b[..2].iter().all(u8::is_ascii_uppercase)
        && b[2..4].iter().all(u8::is_ascii_digit)
        && b[4..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if !shaped {
        return false;
    }
    let mut rest = 0u32;
    for &c in b[4..].iter().chain(&b[..4]) {
        let value = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else {
            u32::from(c - b'A') + 10
        };
        rest = if value >= 10 {
            (rest * 100 + value) % 97
        } else {
            (rest * 10 + value) % 97
        };
    }
    rest == 1
}

/// The IBAN in a bank line ("IBAN DE89 3704 0044 0532 0130 00, BIC …"): the first comma-,
/// semicolon- or line-separated part that, without spaces and an "IBAN" label, is
/// [`valid`].
pub fn find_in(bank: &str) -> Option<String> {
    bank.split([',', ';', '\n']).find_map(|part| {
        let compact: String = part
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_uppercase();
        let compact = compact
            .strip_prefix("IBAN:")
            .or_else(|| compact.strip_prefix("IBAN"))
            .unwrap_or(&compact)
            .to_owned();
        valid(&compact).then_some(compact)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibans_are_checked_by_their_check_digits() {
        assert!(valid("DE89370400440532013000"));
        assert!(valid("FR1420041010050500013M02606"));
        assert!(!valid("DE89370400440532013001"));
        assert!(!valid("DE8937040044"));
    }

    #[test]
    fn ibans_are_found_in_a_bank_line_by_their_check_digits() {
        let bank = "Rhein Bank, IBAN DE89 3704 0044 0532 0130 00, BIC COBADEFFXXX";
        assert_eq!(find_in(bank).as_deref(), Some("DE89370400440532013000"));
        assert_eq!(
            find_in("IBAN: GB82WEST12345698765432").as_deref(),
            Some("GB82WEST12345698765432")
        );
        // One digit changed: the check fails.
        assert_eq!(find_in("DE89 3704 0044 0532 0130 01"), None);
        assert_eq!(find_in(""), None);
    }
}
