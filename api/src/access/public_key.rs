//! OpenSSH public keys (`<type> <base64> [comment]`, one line of `authorized_keys`
//! without options), checked all the way into the key blob: the type inside must be the
//! type named, the fields must be whole and nothing may follow them, and RSA keys must
//! have at least 2048 bits. DSA keys are refused (OpenSSH itself no longer takes them).
//! The fingerprint is the one `ssh-keygen -l` prints: `SHA256:` and the unpadded base64
//! of the SHA-256 of the blob.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use sha2::{Digest, Sha256};

/// Longest key line taken (a 16384-bit RSA key is about 2.8 KiB).
pub const MAX_LINE_BYTES: usize = 8 * 1024;
pub const MAX_COMMENT_CHARS: usize = 256;
const MIN_RSA_BITS: u64 = 2048;
const MAX_RSA_BITS: u64 = 16384;

/// The key types taken.
pub const TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub key_type: String,
    /// `<type> <base64>`.
    pub normalized: String,
    pub comment: String,
    pub fingerprint: String,
}

/// Parses and checks one public key line.
pub fn parse(line: &str) -> Result<PublicKey, String> {
    if line.len() > MAX_LINE_BYTES {
        return Err(format!("longer than {MAX_LINE_BYTES} bytes"));
    }
    let line = line.trim();
    if line.chars().any(|c| c.is_control()) {
        return Err("must be one line, without control characters".into());
    }
    let mut parts = line.splitn(3, ' ');
    let key_type = parts.next().unwrap_or_default();
    let encoded = parts.next().unwrap_or_default();
    let comment = parts.next().unwrap_or_default().trim();
    if !TYPES.contains(&key_type) {
        return Err(format!(
            "not an OpenSSH public key of a type taken ({}): it must start with its type",
            TYPES.join(", ")
        ));
    }
    if comment.chars().count() > MAX_COMMENT_CHARS {
        return Err(format!(
            "the comment is longer than {MAX_COMMENT_CHARS} characters"
        ));
    }
    let blob = STANDARD
        .decode(encoded)
        .map_err(|_| "the key is not valid base64".to_owned())?;
    check_blob(key_type, &blob)?;
    Ok(PublicKey {
        key_type: key_type.to_owned(),
        normalized: format!("{key_type} {encoded}"),
        comment: comment.to_owned(),
        fingerprint: format!("SHA256:{}", STANDARD_NO_PAD.encode(Sha256::digest(&blob))),
    })
}

/// The fields of the blob, in the order its type defines.
fn check_blob(key_type: &str, blob: &[u8]) -> Result<(), String> {
    let mut reader = Reader(blob);
    if reader.string()? != key_type.as_bytes() {
        return Err("the key's data is of another type than its name says".into());
    }
    match key_type {
        "ssh-ed25519" => exact_len(reader.string()?, 32)?,
        "sk-ssh-ed25519@openssh.com" => {
            exact_len(reader.string()?, 32)?;
            reader.string()?;
        }
        "ssh-rsa" => {
            let exponent = reader.string()?;
            let bits = mpint_bits(reader.string()?);
            if exponent.is_empty() || exponent.last().is_some_and(|b| b % 2 == 0) {
                return Err("the RSA exponent is not a valid odd number".into());
            }
            if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
                return Err(format!(
                    "RSA keys need {MIN_RSA_BITS} to {MAX_RSA_BITS} bits; this one has {bits}"
                ));
            }
        }
        ecdsa => {
            let curve = ecdsa
                .trim_start_matches("sk-")
                .trim_end_matches("@openssh.com")
                .trim_start_matches("ecdsa-sha2-");
            if reader.string()? != curve.as_bytes() {
                return Err("the ECDSA curve does not match the key's type".into());
            }
            let point_len = match curve {
                "nistp256" => 65,
                "nistp384" => 97,
                _ => 133,
            };
            let point = reader.string()?;
            exact_len(point, point_len)?;
            if point.first() != Some(&4) {
                return Err("the ECDSA point is not uncompressed".into());
            }
            if ecdsa.starts_with("sk-") {
                reader.string()?;
            }
        }
    }
    if reader.0.is_empty() {
        Ok(())
    } else {
        Err("the key's data goes on past its last field".into())
    }
}

fn exact_len(field: &[u8], len: usize) -> Result<(), String> {
    if field.len() == len {
        Ok(())
    } else {
        Err(format!("a key field has {} bytes, not {len}", field.len()))
    }
}

/// Bits of a non-negative SSH `mpint` (big-endian, maybe a leading zero byte).
fn mpint_bits(bytes: &[u8]) -> u64 {
    let Some(start) = bytes.iter().position(|b| *b != 0) else {
        return 0;
    };
    let whole = u64::try_from(bytes.len() - start - 1).unwrap_or(u64::MAX / 16);
    whole * 8 + u64::from(8 - bytes[start].leading_zeros())
}

/// Reads SSH wire `string`s: a big-endian u32 length, then that many bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn string(&mut self) -> Result<&'a [u8], String> {
        let cut = || "the key's data is cut short".to_owned();
        let (len, rest) = self.0.split_first_chunk::<4>().ok_or_else(cut)?;
        let len = usize::try_from(u32::from_be_bytes(*len)).map_err(|_| cut())?;
        if rest.len() < len {
            return Err(cut());
        }
        let (field, rest) = rest.split_at(len);
        self.0 = rest;
        Ok(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(fields: &[&[u8]]) -> String {
        let mut blob = Vec::new();
        for field in fields {
            blob.extend_from_slice(&u32::try_from(field.len()).unwrap().to_be_bytes());
            blob.extend_from_slice(field);
        }
        STANDARD.encode(blob)
    }

    #[test]
    fn keys_ssh_keygen_made_parse_with_its_fingerprints() {
        // Made with `ssh-keygen -t <type>`; fingerprints from `ssh-keygen -l -f`.
        for (line, fingerprint) in fixtures::KEYS {
            let key = parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(key.fingerprint, *fingerprint, "{line}");
            assert_eq!(key.comment, "user@example");
            assert!(line.starts_with(&key.normalized));
        }
    }

    #[test]
    fn lies_inside_the_blob_are_refused() {
        let ed = |pk: &[u8]| format!("ssh-ed25519 {}", wire(&[b"ssh-ed25519", pk]));
        assert!(parse(&ed(&[7; 32])).is_ok());
        assert!(parse(&ed(&[7; 31])).unwrap_err().contains("31 bytes"));
        let other = format!("ssh-ed25519 {}", wire(&[b"ssh-rsa", &[7; 32]]));
        assert!(parse(&other).unwrap_err().contains("another type"));
        let trailing = format!("ssh-ed25519 {}", wire(&[b"ssh-ed25519", &[7; 32], b"x"]));
        assert!(parse(&trailing).unwrap_err().contains("goes on"));
        let short = format!("ssh-ed25519 {}", STANDARD.encode([0, 0, 0, 11, b's']));
        assert!(parse(&short).unwrap_err().contains("cut short"));
        let mut modulus = vec![0u8; 128];
        modulus[0] = 0xc1;
        let small_rsa = format!("ssh-rsa {}", wire(&[b"ssh-rsa", &[1, 0, 1], &modulus]));
        assert!(parse(&small_rsa).unwrap_err().contains("has 1024"));
    }

    #[test]
    fn what_is_not_a_key_line_is_refused() {
        for line in [
            "",
            "ssh-dss AAAAB3NzaC1kc3M=",
            "command=\"x\" ssh-ed25519 AAAA",
            "ssh-ed25519 not*base64",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5\nssh-ed25519 AAAA",
        ] {
            assert!(parse(line).is_err(), "{line:?}");
        }
    }

    #[test]
    fn mpint_bits_skip_the_sign_byte() {
        assert_eq!(mpint_bits(&[0x00, 0x80, 0x00]), 16);
        assert_eq!(mpint_bits(&[0x01]), 1);
        assert_eq!(mpint_bits(&[]), 0);
    }

    mod fixtures {
        include!("../../tests/fixtures/ssh_keys.rs");
    }
}
