//! Work bounded before the engine sees a request. The engine's validation walks every
//! fragment spread where it is spread, so a small document whose fragments each spread
//! the next twice costs exponential time; this pass reads the parsed document once,
//! counting fragments, spreads, aliases and the fields the document expands to (each
//! fragment's size computed once), and refuses a request over any bound. It also finds
//! text no field accepts (control characters, in literals and variables alike), whether a
//! request is introspection only (all an anonymous caller may send), and how many
//! mutations it makes (each counts against the caller's rate limit).

use std::collections::HashMap;

use async_graphql::Variables;
use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, FragmentDefinition, OperationDefinition, OperationType,
    Selection, SelectionSet,
};
use async_graphql::{Name, Positioned, Value as ConstValue};

/// Longest accepted query document, in bytes.
pub const MAX_QUERY_BYTES: usize = 32 * 1024;
/// Most fragment definitions in one document.
pub const MAX_FRAGMENTS: usize = 64;
/// Most fragment spreads written in one document.
pub const MAX_SPREADS: usize = 256;
/// Most aliased fields in one document.
pub const MAX_ALIASES: usize = 100;
/// Most fields a document may expand to once every spread is replaced by its fragment.
pub const MAX_EXPANDED_FIELDS: u64 = 5_000;

/// What the engine may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Every selected root field is `__schema`, `__type` or `__typename`.
    pub introspection_only: bool,
    /// Root fields of the mutation to run (aliases included).
    pub mutations: usize,
    /// Those that change more than the caller's own sign-in (all but
    /// [`OWN_SIGN_IN_MUTATIONS`]): what a read-only key may not run.
    pub changing_mutations: usize,
    /// The root fields asked for (`placeOrder`, `orders,usage`; at most three, then `…`),
    /// what a trace of the request names it by.
    pub operation: String,
}

/// Why a request was refused before validation; the message names the bound or the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutOfBounds {
    /// The document asks for more work than any request may.
    Query(String),
    /// A value (a literal or a variable) holds text no field accepts.
    Input(String),
}

impl OutOfBounds {
    pub fn message(&self) -> &str {
        match self {
            OutOfBounds::Query(m) | OutOfBounds::Input(m) => m,
        }
    }
}

/// Checks a parsed document (and the request's variables) against every bound.
pub fn check(
    doc: &ExecutableDocument,
    operation_name: Option<&str>,
    variables: &Variables,
) -> Result<Shape, OutOfBounds> {
    if doc.fragments.len() > MAX_FRAGMENTS {
        return refuse(format!(
            "{} fragments; at most {MAX_FRAGMENTS}",
            doc.fragments.len()
        ));
    }
    let mut tally = Tally::default();
    for fragment in doc.fragments.values() {
        tally.selection_set(&fragment.node.selection_set.node)?;
    }
    for (_, op) in doc.operations.iter() {
        tally.operation(&op.node)?;
    }
    if tally.spreads > MAX_SPREADS {
        return refuse(format!(
            "{} fragment spreads; at most {MAX_SPREADS}",
            tally.spreads
        ));
    }
    if tally.aliases > MAX_ALIASES {
        return refuse(format!("{} aliases; at most {MAX_ALIASES}", tally.aliases));
    }
    let mut sizes = Sizes {
        fragments: &doc.fragments,
        known: HashMap::new(),
    };
    let mut expanded: u64 = 0;
    for (_, op) in doc.operations.iter() {
        expanded = expanded.saturating_add(sizes.of(&op.node.selection_set.node, 0)?);
    }
    if expanded > MAX_EXPANDED_FIELDS {
        return refuse(format!(
            "the query expands to more than {MAX_EXPANDED_FIELDS} fields"
        ));
    }
    for (name, value) in variables.iter() {
        check_const(&format!("${name}"), value)?;
    }
    Ok(shape(doc, operation_name))
}

fn refuse<T>(message: String) -> Result<T, OutOfBounds> {
    Err(OutOfBounds::Query(message))
}

/// Counts of what the document spells out, and its text checked on the way.
#[derive(Default)]
struct Tally {
    spreads: usize,
    aliases: usize,
}

impl Tally {
    fn operation(&mut self, op: &OperationDefinition) -> Result<(), OutOfBounds> {
        for var in &op.variable_definitions {
            if let Some(default) = &var.node.default_value {
                check_const(&format!("${}", var.node.name.node), &default.node)?;
            }
        }
        self.selection_set(&op.selection_set.node)
    }

    fn selection_set(&mut self, set: &SelectionSet) -> Result<(), OutOfBounds> {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    self.aliases += usize::from(field.alias.is_some());
                    for (name, value) in &field.arguments {
                        // Variables are checked on their own; here they read as null.
                        let literal = value
                            .node
                            .clone()
                            .into_const_with(|_| {
                                Ok::<_, std::convert::Infallible>(ConstValue::Null)
                            })
                            .unwrap_or_default();
                        check_const(&name.node, &literal)?;
                    }
                    self.selection_set(&field.selection_set.node)?;
                }
                Selection::FragmentSpread(_) => self.spreads += 1,
                Selection::InlineFragment(inline) => {
                    self.selection_set(&inline.node.selection_set.node)?;
                }
            }
        }
        Ok(())
    }
}

/// Fields each fragment expands to, each computed once; a cycle (which the engine
/// refuses anyway) is cut at the nesting bound.
struct Sizes<'a> {
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
    known: HashMap<&'a str, u64>,
}

impl<'a> Sizes<'a> {
    fn of(&mut self, set: &'a SelectionSet, depth: usize) -> Result<u64, OutOfBounds> {
        if depth > MAX_FRAGMENTS {
            return refuse("fragments spread one another in a cycle".into());
        }
        let mut total: u64 = 0;
        for item in &set.items {
            let size = match &item.node {
                Selection::Field(field) => 1 + self.of(&field.node.selection_set.node, depth)?,
                Selection::InlineFragment(inline) => {
                    self.of(&inline.node.selection_set.node, depth)?
                }
                Selection::FragmentSpread(spread) => {
                    self.fragment(spread.node.fragment_name.node.as_str(), depth)?
                }
            };
            total = total.saturating_add(size);
            if total > MAX_EXPANDED_FIELDS {
                return Ok(total);
            }
        }
        Ok(total)
    }

    fn fragment(&mut self, name: &str, depth: usize) -> Result<u64, OutOfBounds> {
        if let Some(size) = self.known.get(name) {
            return Ok(*size);
        }
        // An unknown fragment is the engine's error to report.
        let Some((key, fragment)) = self.fragments.get_key_value(name) else {
            return Ok(0);
        };
        let size = self.of(&fragment.node.selection_set.node, depth + 1)?;
        self.known.insert(key.as_str(), size);
        Ok(size)
    }
}

/// Mutations that change only the signed-in person's own way of signing in: a read-only
/// (finance) user still sets up its second factor.
pub const OWN_SIGN_IN_MUTATIONS: [&str; 3] = [
    "startSecondFactor",
    "confirmSecondFactor",
    "disableSecondFactor",
];

/// Whether the request only introspects, and how many mutations it would run.
fn shape(doc: &ExecutableDocument, operation_name: Option<&str>) -> Shape {
    let roots: Vec<&Positioned<OperationDefinition>> = match (&doc.operations, operation_name) {
        (DocumentOperations::Single(op), _) => vec![op],
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name).into_iter().collect(),
        (DocumentOperations::Multiple(ops), None) => ops.values().collect(),
    };
    let mut shape = Shape {
        introspection_only: true,
        mutations: 0,
        changing_mutations: 0,
        operation: String::new(),
    };
    let mut named: Vec<&str> = Vec::new();
    for op in roots {
        let fields = root_fields(&op.node.selection_set.node, doc, 0);
        for field in &fields {
            if !named.contains(field) {
                named.push(field);
            }
        }
        if op.node.ty == OperationType::Mutation {
            shape.mutations += fields.len();
            shape.changing_mutations += fields
                .iter()
                .filter(|f| !OWN_SIGN_IN_MUTATIONS.contains(f))
                .count();
        }
        shape.introspection_only &= fields
            .iter()
            .all(|name| matches!(*name, "__schema" | "__type" | "__typename"));
    }
    shape.operation = named.iter().take(3).copied().collect::<Vec<_>>().join(",");
    if named.len() > 3 {
        shape.operation.push_str(",…");
    }
    shape
}

/// Root field names, through fragments spread at the root.
fn root_fields<'a>(
    set: &'a SelectionSet,
    doc: &'a ExecutableDocument,
    depth: usize,
) -> Vec<&'a str> {
    let mut names = Vec::new();
    for item in &set.items {
        match &item.node {
            Selection::Field(field) => names.push(field.node.name.node.as_str()),
            Selection::InlineFragment(inline) => {
                names.extend(root_fields(&inline.node.selection_set.node, doc, depth));
            }
            Selection::FragmentSpread(spread) if depth < MAX_FRAGMENTS => {
                if let Some(fragment) = doc.fragments.get(&spread.node.fragment_name.node) {
                    names.extend(root_fields(
                        &fragment.node.selection_set.node,
                        doc,
                        depth + 1,
                    ));
                }
            }
            Selection::FragmentSpread(_) => {}
        }
    }
    names
}

fn check_text(at: &str, text: &str) -> Result<(), OutOfBounds> {
    // Line breaks and tabs are text (descriptions, notes); no other control character is.
    match text
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        Some(c) => Err(OutOfBounds::Input(format!(
            "{at} contains the control character U+{:04X}",
            u32::from(c)
        ))),
        None => Ok(()),
    }
}

fn check_const(at: &str, value: &ConstValue) -> Result<(), OutOfBounds> {
    match value {
        ConstValue::String(text) => check_text(at, text),
        ConstValue::List(items) => items.iter().try_for_each(|v| check_const(at, v)),
        ConstValue::Object(fields) => fields.iter().try_for_each(|(name, v)| {
            check_text(at, name)?;
            check_const(&format!("{at}.{name}"), v)
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_graphql::parser::parse_query;

    fn run(query: &str, variables: serde_json::Value) -> Result<Shape, OutOfBounds> {
        let doc = parse_query(query).expect("parses");
        check(&doc, None, &Variables::from_json(variables))
    }

    /// `query{...F0} fragment F0 on Query{...F1 ...F1} …`: each fragment spreads the next
    /// twice, so the document expands to 2^k fields.
    fn fragment_bomb(k: usize) -> String {
        let mut q = String::from("query{...F0}");
        for i in 0..k {
            q.push_str(&format!(
                " fragment F{i} on Query{{...F{n} ...F{n}}}",
                n = i + 1
            ));
        }
        q.push_str(&format!(" fragment F{k} on Query{{__typename}}"));
        q
    }

    #[test]
    fn a_fragment_bomb_is_refused_by_counting_not_expanding() {
        assert!(run(&fragment_bomb(8), serde_json::json!({})).is_ok());
        let err = run(&fragment_bomb(30), serde_json::json!({})).expect_err("refused");
        assert!(err.message().contains("expands"), "{err:?}");
        // Far past any count a u64 holds: the sum saturates, the check still refuses.
        assert!(run(&fragment_bomb(63), serde_json::json!({})).is_err());
    }

    #[test]
    fn too_many_fragments_spreads_or_aliases_are_refused() {
        let fragments: String = (0..=MAX_FRAGMENTS)
            .map(|i| format!(" fragment F{i} on Query{{__typename}}"))
            .collect();
        assert!(run(&format!("{{__typename}}{fragments}"), serde_json::json!({})).is_err());
        let aliases: String = (0..=MAX_ALIASES)
            .map(|i| format!(" a{i}: __typename"))
            .collect();
        let err = run(&format!("{{{aliases}}}"), serde_json::json!({})).expect_err("refused");
        assert!(err.message().contains("aliases"), "{err:?}");
        let spreads: String = (0..=MAX_SPREADS).map(|_| " ...F").collect();
        let q = format!("{{{spreads}}} fragment F on Query{{__typename}}");
        assert!(run(&q, serde_json::json!({})).is_err());
    }

    #[test]
    fn control_characters_are_refused_in_literals_and_variables() {
        let literal =
            "mutation { placeOrder(input: {labels: {team: \"a\\u0000b\"}}) { order { id } } }";
        let err = run(literal, serde_json::json!({})).expect_err("refused");
        assert!(err.message().contains("U+0000"), "{err:?}");
        let q = "mutation($k: String) { placeOrder(idempotencyKey: $k) { order { id } } }";
        let err = run(q, serde_json::json!({"k": "x\u{0}"})).expect_err("refused");
        assert!(err.message().starts_with("$k"), "{err:?}");
        let nested = serde_json::json!({"input": {"labels": {"team\u{7}": "a"}}});
        assert!(run(q, nested).is_err());
        assert!(run(q, serde_json::json!({"k": "line one\nline two\ttab"})).is_ok());
    }

    #[test]
    fn the_shape_names_introspection_and_counts_aliased_mutations() {
        let intro = run(
            "{ __schema { types { name } } __typename }",
            serde_json::json!({}),
        );
        assert!(intro.expect("ok").introspection_only);
        let data = run("{ viewer { role } }", serde_json::json!({})).expect("ok");
        assert!(!data.introspection_only);
        let through_fragment = run(
            "{ ...F } fragment F on Query { viewer { role } }",
            serde_json::json!({}),
        );
        assert!(!through_fragment.expect("ok").introspection_only);
        let many: String = (0..30)
            .map(|i| format!(" k{i}: createApiKey(name: \"k{i}\") {{ id }}"))
            .collect();
        let shape = run(&format!("mutation {{{many}}}"), serde_json::json!({})).expect("ok");
        assert_eq!(shape.mutations, 30);
        assert_eq!(shape.operation, "createApiKey");
    }

    #[test]
    fn the_shape_names_the_operation_by_its_root_fields() {
        let name = |q: &str| run(q, serde_json::json!({})).expect("ok").operation;
        assert_eq!(
            name("mutation { placeOrder(input: {}) { order { id } } }"),
            "placeOrder"
        );
        assert_eq!(
            name("{ orders { nodes { id } } viewer { role } }"),
            "orders,viewer"
        );
        assert_eq!(name("{ a: viewer { role } b: viewer { role } }"), "viewer");
        assert_eq!(
            name(
                "{ viewer { role } orders { nodes { id } } catalog { skus { id } } usage { rows { key } } }"
            ),
            "viewer,orders,catalog,…"
        );
    }
}
