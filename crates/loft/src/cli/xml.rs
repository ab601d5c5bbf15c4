//! A small element tree for reading SNS Query responses: element names (namespace
//! prefixes dropped), their text and children. Enough for `<TopicArn>`, `<member>` lists
//! and `<Error><Code>`; attributes are ignored.

use quick_xml::events::Event;

/// One element.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Element {
    /// Local name.
    pub name: String,
    /// Text content, unescaped (empty for elements with children).
    pub text: String,
    /// Child elements in document order.
    pub children: Vec<Element>,
}

impl Element {
    /// Parses a document and returns its root element.
    ///
    /// Errors: malformed XML, or no root element (the message says which).
    pub fn parse(xml: &str) -> Result<Element, String> {
        let mut reader = quick_xml::Reader::from_str(xml);
        let mut stack: Vec<Element> = Vec::new();
        let open = |e: &quick_xml::events::BytesStart<'_>| Element {
            name: String::from_utf8_lossy(e.local_name().as_ref()).into_owned(),
            ..Element::default()
        };
        loop {
            match reader.read_event().map_err(|e| e.to_string())? {
                Event::Start(e) => stack.push(open(&e)),
                Event::Empty(e) => {
                    let node = open(&e);
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(node),
                        None => return Ok(node),
                    }
                }
                Event::Text(t) => {
                    let text = t.unescape().map_err(|e| e.to_string())?;
                    if let Some(top) = stack.last_mut() {
                        top.text.push_str(&text);
                    }
                }
                Event::CData(c) => {
                    if let Some(top) = stack.last_mut() {
                        top.text.push_str(&String::from_utf8_lossy(&c));
                    }
                }
                Event::End(_) => {
                    let mut node = stack.pop().ok_or("unbalanced XML")?;
                    if !node.children.is_empty() {
                        node.text.clear();
                    }
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(node),
                        None => return Ok(node),
                    }
                }
                Event::Eof => return Err("no root element".into()),
                _ => {}
            }
        }
    }

    /// The first descendant (or self) named `name`, depth first.
    pub fn find(&self, name: &str) -> Option<&Element> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(name))
    }

    /// Every descendant (or self) named `name`, in document order.
    pub fn find_all(&self, name: &str) -> Vec<&Element> {
        let mut out = Vec::new();
        self.collect(name, &mut out);
        out
    }

    fn collect<'a>(&'a self, name: &str, out: &mut Vec<&'a Element>) {
        if self.name == name {
            out.push(self);
        }
        for c in &self.children {
            c.collect(name, out);
        }
    }

    /// The text of the direct child named `name`, if any.
    pub fn child_text(&self, name: &str) -> Option<&str> {
        self.children
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.text.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lists_and_errors() {
        let doc = Element::parse(
            r#"<?xml version="1.0"?><ListTopicsResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><ListTopicsResult><Topics><member><TopicArn>arn:a</TopicArn></member><member><TopicArn>arn:b&amp;c</TopicArn></member></Topics></ListTopicsResult></ListTopicsResponse>"#,
        )
        .unwrap();
        let arns: Vec<&str> = doc
            .find_all("TopicArn")
            .iter()
            .map(|e| e.text.as_str())
            .collect();
        assert_eq!(arns, ["arn:a", "arn:b&c"]);
        let err = Element::parse(
            "<ErrorResponse><Error><Type>Sender</Type><Code>NotFound</Code><Message>no</Message></Error></ErrorResponse>",
        )
        .unwrap();
        assert_eq!(
            err.find("Error").unwrap().child_text("Code"),
            Some("NotFound")
        );
        assert!(Element::parse("not xml").is_err());
    }
}
