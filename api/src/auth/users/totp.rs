//! Time-based one-time passwords (RFC 6238 over RFC 4226): HMAC-SHA-1 of the 30-second
//! time step, truncated to six digits — what authenticator apps compute from the secret
//! in an `otpauth://` URI.

use chrono::{DateTime, Utc};
use sha1::Sha1;
use totp_hmac::{KeyInit, Mac};

/// Seconds per time step.
pub const STEP_SECONDS: i64 = 30;
/// Steps either side of now a code is still taken at (clock drift of the phone).
pub const DRIFT_STEPS: i64 = 1;
const DIGITS: u32 = 6;
/// Bytes of a new secret (160 bits, RFC 4226's recommendation).
const SECRET_BYTES: usize = 20;

/// A new random secret, as the base32 an authenticator app takes.
pub fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    data_encoding::BASE32_NOPAD.encode(&bytes)
}

/// The `otpauth://` URI of a secret (what a QR code carries), for `account` at `issuer`.
pub fn uri(secret: &str, issuer: &str, account: &str) -> String {
    let label = format!("{issuer}:{account}");
    format!(
        "otpauth://totp/{}?secret={secret}&issuer={}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}",
        percent(&label),
        percent(issuer)
    )
}

/// `uri` as a QR code an authenticator app scans: an SVG, black modules on white with
/// the standard quiet zone, at least 200 px wide.
pub fn qr_code_svg(uri: &str) -> Result<String, qrcode::types::QrError> {
    let code = qrcode::QrCode::with_error_correction_level(uri.as_bytes(), qrcode::EcLevel::M)?;
    Ok(code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(200, 200)
        .quiet_zone(true)
        .build())
}

/// Percent-encodes all but unreserved characters (RFC 3986).
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The time step of `at`.
pub fn step_of(at: DateTime<Utc>) -> i64 {
    at.timestamp().div_euclid(STEP_SECONDS)
}

/// The code of `step` for the raw secret `key` (RFC 4226 dynamic truncation).
pub fn code(key: &[u8], step: i64) -> u32 {
    let Ok(mut mac) = <totp_hmac::Hmac<Sha1> as KeyInit>::new_from_slice(key) else {
        // HMAC takes keys of any length; unreachable.
        return u32::MAX;
    };
    mac.update(&step.to_be_bytes());
    let digest = mac.finalize().into_bytes();
    let offset = usize::from(digest[digest.len() - 1] & 0x0f);
    let word = u32::from_be_bytes([
        digest[offset] & 0x7f,
        digest[offset + 1],
        digest[offset + 2],
        digest[offset + 3],
    ]);
    word % 10u32.pow(DIGITS)
}

/// The step a presented code matches within the drift window around `now`, if any and
/// later than `last_used` (a code counts once). `secret` is base32.
pub fn matching_step(
    secret: &str,
    presented: &str,
    now: DateTime<Utc>,
    last_used: Option<i64>,
) -> Option<i64> {
    let presented = presented.trim();
    if presented.len() != DIGITS as usize || !presented.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let wanted: u32 = presented.parse().ok()?;
    let key = data_encoding::BASE32_NOPAD.decode(secret.as_bytes()).ok()?;
    let now = step_of(now);
    (now - DRIFT_STEPS..=now + DRIFT_STEPS)
        .filter(|step| last_used.is_none_or(|last| *step > last))
        .find(|step| {
            let expected = code(&key, *step);
            subtle::ConstantTimeEq::ct_eq(&expected.to_be_bytes()[..], &wanted.to_be_bytes()[..])
                .into()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 Appendix B, SHA-1: the 8-digit codes' last six digits.
    #[test]
    fn the_rfc_6238_vectors_hold() {
        let key = b"12345678901234567890";
        for (time, eight) in [
            (59, 94_287_082),
            (1_111_111_109, 7_081_804),
            (1_111_111_111, 14_050_471),
            (1_234_567_890, 89_005_924),
            (2_000_000_000, 69_279_037),
            (20_000_000_000, 65_353_130),
        ] {
            assert_eq!(code(key, time / STEP_SECONDS), eight % 1_000_000, "{time}");
        }
    }

    #[test]
    fn the_qr_code_is_an_svg_of_at_least_200_px_that_follows_the_uri() {
        let uri = uri(&new_secret(), "neocloud", "ada@example.com");
        let svg = qr_code_svg(&uri).expect("encodes");
        assert!(
            svg.contains("<svg") && svg.contains("fill=\"#000\""),
            "{svg}"
        );
        let width: u32 = svg
            .split("width=\"")
            .nth(1)
            .and_then(|w| w.split('"').next())
            .and_then(|w| w.parse().ok())
            .expect("a width");
        assert!(width >= 200, "{width}");
        assert_ne!(svg, qr_code_svg(&format!("{uri}x")).expect("encodes"));
    }

    #[test]
    fn a_code_counts_once_and_only_near_now() {
        let secret = new_secret();
        let key = data_encoding::BASE32_NOPAD
            .decode(secret.as_bytes())
            .expect("base32");
        let now: DateTime<Utc> = "2026-12-06T12:00:10Z".parse().expect("time");
        let step = step_of(now);
        let current = format!("{:06}", code(&key, step));
        assert_eq!(matching_step(&secret, &current, now, None), Some(step));
        assert_eq!(
            matching_step(&secret, &current, now, Some(step)),
            None,
            "replayed"
        );
        let previous = format!("{:06}", code(&key, step - 1));
        assert_eq!(matching_step(&secret, &previous, now, None), Some(step - 1));
        let old = format!("{:06}", code(&key, step - 3));
        if old != current && old != previous {
            assert_eq!(matching_step(&secret, &old, now, None), None, "too old");
        }
        assert_eq!(matching_step(&secret, "12345", now, None), None);
        assert_eq!(matching_step(&secret, "abcdef", now, None), None);
    }

    #[test]
    fn the_uri_names_issuer_and_account() {
        assert_eq!(
            uri("JBSWY3DPEHPK3PXP", "neocloud", "ada@example.com"),
            "otpauth://totp/neocloud%3Aada%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=neocloud&algorithm=SHA1&digits=6&period=30"
        );
    }
}
