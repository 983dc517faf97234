//! `Slug`: the names operators give SKUs, plans, regions, zones, racks and NVLink domains —
//! 1 to 64 characters of ASCII letters, digits, `-`, `_` and `.`, surrounding blanks
//! trimmed — so they are safe in URLs, file names, exports and metric labels.

use std::fmt;

/// What a slug may hold, as an error message says it.
pub const SLUG_RULE: &str = "1 to 64 characters of letters, digits, '-', '_' or '.'";

/// Most characters in a slug.
pub const MAX_SLUG_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slug(String);

impl Slug {
    /// The trimmed text, if it is a slug; else `SLUG_RULE`.
    pub fn parse(text: &str) -> Result<Slug, &'static str> {
        let text = text.trim();
        let ok = !text.is_empty()
            && text.len() <= MAX_SLUG_LEN
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if ok {
            Ok(Slug(text.to_owned()))
        } else {
            Err(SLUG_RULE)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_held_to_the_rule() {
        assert_eq!(
            Slug::parse("  h100-eu_west.1 ").map(Slug::into_string),
            Ok("h100-eu_west.1".to_owned())
        );
        for bad in ["", "   ", "a b", "h100/eu", "é", &"x".repeat(65)] {
            assert_eq!(Slug::parse(bad), Err(SLUG_RULE), "{bad:?}");
        }
        assert!(Slug::parse(&"x".repeat(64)).is_ok());
    }
}
