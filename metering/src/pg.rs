//! Helpers for statements written for PostgreSQL alone (where it sums exactly what SQLite
//! cannot): rows sent as a few array parameters rather than many parameters a row.

/// A PostgreSQL array literal of text elements (`NULL` for none), every element quoted.
pub(crate) fn text_array(items: impl Iterator<Item = Option<String>>) -> String {
    let mut out = String::from("{");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(text) => {
                out.push('"');
                for c in text.chars() {
                    if c == '"' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            }
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::text_array;

    #[test]
    fn array_literals_quote_every_element_and_keep_nulls() {
        let items = [
            Some("team=a,b".to_owned()),
            None,
            Some(r#"say "hi" \ {x}"#.to_owned()),
            Some(String::new()),
        ];
        assert_eq!(
            text_array(items.into_iter()),
            r#"{"team=a,b",NULL,"say \"hi\" \\ {x}",""}"#
        );
        assert_eq!(text_array(std::iter::empty()), "{}");
    }
}
