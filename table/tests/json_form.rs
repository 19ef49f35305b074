//! The JSON form of the table, read straight into the document tree (`switchyard_table::json`):
//! escapes spell the strings they stand for, and malformed, hostile or truncated text is refused
//! with an error, never a panic. Cases are data: the text and a piece of the message it must give.

use switchyard_table::{RouteTable, TableError};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const TABLE: &str = r#"{"version":1,"generation":"g1","rules":[
    {"name":"Ingress/p/a#0","host":"example.net","path":{"type":"prefix","value":"/"},
     "conditions":[{"on":"header","name":"x-team","match":"exact","value":"blue"}],
     "action":{"route":{"backends":[{"cluster":"p/a:80","weight":1}]}}}]}"#;

fn error_of(text: &str) -> String {
    match RouteTable::from_json(text.as_bytes()) {
        Ok(_) => "accepted".to_owned(),
        Err(e) => e.to_string(),
    }
}

/// `\u` escapes (in keys too), `\/` and the short escapes read as the characters they spell.
#[test]
fn escaped_strings_read_as_the_strings_they_spell() {
    let escaped = TABLE
        .replace(r#""name":"Ingress/p/a#0""#, r#""n\u0061me":"Ingress\/p\/a\u00230""#)
        .replace(r#""example.net""#, r#""\u0065xample.net""#)
        .replace(r#""p/a:80""#, r#""p\/a:\u0038\u0030""#)
        .replace(r#""blue""#, r#""bl\u0075e""#);
    let plain = RouteTable::from_json(TABLE.as_bytes()).unwrap();
    let read = RouteTable::from_json(escaped.as_bytes()).unwrap();
    assert_eq!(format!("{:?}", read.rules()), format!("{:?}", plain.rules()));
    assert_eq!(read.rules()[0].name(), "Ingress/p/a#0");
    // An escape that spells a control character is read, then refused by validation where the
    // filter would write it into a header.
    let error = error_of(&TABLE.replace("p/a:80", r"p/a:80\r\nx-evil: 1"));
    assert!(error.contains("action.route.backends[0].cluster"), "{error}");
}

/// Malformed and hostile documents: each is refused, and the message says why.
#[test]
fn malformed_and_hostile_json_is_refused_with_the_reason() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_in_table = TABLE.replace(r#""generation":"g1""#, &format!(r#""generation":{deep}"#));
    let cases: Vec<(String, &str)> = vec![
        // A key written twice: serde_json's `Value` would have kept the last one silently.
        (r#"{"version":1,"version":1}"#.into(), "field `version` written twice"),
        (
            TABLE.replace(r#""weight":1"#, r#""weight":1,"weight":5"#),
            "field `weight` written twice",
        ),
        (
            TABLE.replace(r#""version":1"#, r#""version":1,"ver\u0073ion":1"#),
            "written twice",
        ),
        // Nesting: refused at the bound, long before the stack is at risk.
        (deep.clone(), "nested too deep"),
        (deep_in_table, "nested too deep"),
        // Numbers: too large for JSON's doubles, too large for the field, not whole.
        (
            TABLE.replace(r#""version":1"#, r#""version":1e400"#),
            "number out of range",
        ),
        (
            TABLE.replace(r#""weight":1"#, r#""weight":18446744073709551616"#),
            "expected a whole number",
        ),
        (
            TABLE.replace(r#""weight":1"#, r#""weight":4294967296"#),
            "4294967296 is over 4294967295",
        ),
        (
            TABLE.replace(r#""weight":1"#, r#""weight":1.5"#),
            "expected a whole number",
        ),
        (
            TABLE.replace(r#""weight":1"#, r#""weight":-1"#),
            "expected a whole number",
        ),
        // Strings: a lone surrogate, a bad escape, a raw control character.
        (TABLE.replace("blue", r"\ud800"), "hex escape"),
        (TABLE.replace("blue", r"\x41"), "invalid escape"),
        (TABLE.replace("blue", "bl\u{1}ue"), "control character"),
        // Not one document.
        (format!("{TABLE} {TABLE}"), "trailing characters"),
        (String::new(), "EOF"),
    ];
    for (text, expected) in cases {
        let error = error_of(&text);
        assert!(error.contains(expected), "{:.80}: {error}", text);
    }
}

/// Every prefix of a table's text is refused (a JSON error), never accepted nor a panic.
#[test]
fn every_truncation_of_a_json_table_is_refused() {
    for len in 0..TABLE.len() {
        let Some(prefix) = TABLE.get(..len) else { continue };
        match RouteTable::from_json(prefix.as_bytes()) {
            Err(TableError::Json(_)) => {}
            other => panic!("truncated at {len}: {:?}", other.map(|t| t.rules().len())),
        }
    }
    assert!(RouteTable::from_json(TABLE.as_bytes()).is_ok());
}
