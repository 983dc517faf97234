//! A small XML writer: elements opened and closed in order, text and attributes escaped,
//! characters XML 1.0 cannot carry dropped. Enough for documents whose element order a
//! schema fixes, which is what the serializers spell out.

pub struct Xml {
    out: String,
    open: Vec<&'static str>,
}

fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
}

impl Xml {
    pub fn new() -> Xml {
        Xml {
            out: String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
            open: Vec::new(),
        }
    }

    fn start(&mut self, tag: &str, attributes: &[(&str, &str)]) {
        self.out.push_str(&"  ".repeat(self.open.len()));
        self.out.push('<');
        self.out.push_str(tag);
        for (name, value) in attributes {
            self.out.push(' ');
            self.out.push_str(name);
            self.out.push_str("=\"");
            escape(value, &mut self.out);
            self.out.push('"');
        }
        self.out.push('>');
    }

    /// Opens `tag`; [`Xml::close`] closes it.
    pub fn open(&mut self, tag: &'static str, attributes: &[(&str, &str)]) -> &mut Xml {
        self.start(tag, attributes);
        self.out.push('\n');
        self.open.push(tag);
        self
    }

    pub fn close(&mut self) -> &mut Xml {
        if let Some(tag) = self.open.pop() {
            self.out.push_str(&"  ".repeat(self.open.len()));
            self.out.push_str("</");
            self.out.push_str(tag);
            self.out.push_str(">\n");
        }
        self
    }

    /// `<tag attributes>text</tag>`.
    pub fn leaf_with(&mut self, tag: &str, attributes: &[(&str, &str)], text: &str) -> &mut Xml {
        self.start(tag, attributes);
        escape(text, &mut self.out);
        self.out.push_str("</");
        self.out.push_str(tag);
        self.out.push_str(">\n");
        self
    }

    pub fn leaf(&mut self, tag: &str, text: &str) -> &mut Xml {
        self.leaf_with(tag, &[], text)
    }

    /// A leaf when there is a value.
    pub fn maybe(&mut self, tag: &str, text: Option<&str>) -> &mut Xml {
        if let Some(text) = text {
            self.leaf(tag, text);
        }
        self
    }

    pub fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_are_escaped_and_elements_nest() {
        let mut xml = Xml::new();
        xml.open("a", &[("x", "1 \"2\"")])
            .leaf("b", "R&D <GmbH>\u{1}")
            .close();
        let out = xml.finish();
        assert!(
            out.contains("<a x=\"1 &quot;2&quot;\">\n  <b>R&amp;D &lt;GmbH&gt;</b>\n</a>\n"),
            "{out}"
        );
    }
}
