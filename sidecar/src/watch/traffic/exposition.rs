//! Prometheus' text exposition format (version 0.0.4), as Envoy's admin endpoint
//! `/stats/prometheus` writes it: one sample a line, `name{label="value",...} value [timestamp]`,
//! with `# HELP` / `# TYPE` comments and blank lines between.
//!
//! Label values are quoted, and `\\`, `\"` and `\n` are the only escapes inside them. A line that
//! does not follow the format fails the whole text, with its line number: the text comes from one
//! Envoy, so a malformed line means the reading cannot be trusted, and the dashboard then says why
//! rather than showing part of the traffic.

use std::fmt;

/// One sample: a metric name, its labels in the order written, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric name (`switchyard_resource_requests_total`).
    pub name: String,
    /// `(name, value)` of each label, values unescaped.
    pub labels: Vec<(String, String)>,
    /// The value (`+Inf`, `-Inf` and `NaN` are values too).
    pub value: f64,
}

impl Sample {
    /// The value of label `name`, if the sample has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A line that does not follow the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The line's number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

/// Every sample of `text`, in order; comments and blank lines are skipped.
pub fn parse(text: &str) -> Result<Vec<Sample>, ParseError> {
    let mut samples = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let sample = sample(line).map_err(|why| ParseError { line: index + 1, why })?;
        samples.push(sample);
    }
    Ok(samples)
}

/// One sample line: name, labels (if any), value, timestamp (if any), nothing after.
fn sample(line: &str) -> Result<Sample, String> {
    let mut cursor = Cursor { rest: line };
    let name = cursor.name().ok_or("expected a metric name")?.to_owned();
    cursor.skip_blanks();
    let labels = if cursor.eat('{') {
        labels(&mut cursor)?
    } else {
        Vec::new()
    };
    cursor.skip_blanks();
    let value = value(cursor.word())?;
    cursor.skip_blanks();
    let timestamp = cursor.word();
    if !timestamp.is_empty() && timestamp.parse::<i64>().is_err() {
        return Err(format!(
            "expected a timestamp (milliseconds) after the value, not {timestamp:?}"
        ));
    }
    cursor.skip_blanks();
    if !cursor.rest.is_empty() {
        return Err(format!("unexpected {:?} after the sample", cursor.rest));
    }
    Ok(Sample { name, labels, value })
}

/// The labels after `{`, up to and including `}`: `name="value"`, separated by commas, a trailing
/// comma allowed; a name given twice is an error.
fn labels(cursor: &mut Cursor<'_>) -> Result<Vec<(String, String)>, String> {
    let mut labels: Vec<(String, String)> = Vec::new();
    loop {
        cursor.skip_blanks();
        if cursor.eat('}') {
            return Ok(labels);
        }
        let name = cursor.name().ok_or("expected a label name or '}'")?.to_owned();
        cursor.skip_blanks();
        if !cursor.eat('=') {
            return Err(format!("expected '=' after label {name}"));
        }
        cursor.skip_blanks();
        let value = cursor.quoted().map_err(|why| format!("label {name}: {why}"))?;
        if labels.iter().any(|(n, _)| *n == name) {
            return Err(format!("label {name} is given twice"));
        }
        labels.push((name, value));
        cursor.skip_blanks();
        if cursor.eat('}') {
            return Ok(labels);
        }
        if !cursor.eat(',') {
            return Err("expected ',' or '}' after a label".to_owned());
        }
    }
}

/// A sample's value: a float, or `+Inf`, `-Inf`, `NaN`.
fn value(word: &str) -> Result<f64, String> {
    if word.is_empty() {
        return Err("expected a value".to_owned());
    }
    word.parse::<f64>().map_err(|_| format!("{word:?} is not a number"))
}

/// What is left of a line.
struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn skip_blanks(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t']);
    }

    /// Takes `c` if it comes next.
    fn eat(&mut self, c: char) -> bool {
        match self.rest.strip_prefix(c) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    /// A metric or label name: `[a-zA-Z_:][a-zA-Z0-9_:]*` (a label name has no `:`, which the
    /// exposition's writers never put there; reading it leniently costs nothing).
    fn name(&mut self) -> Option<&'a str> {
        let first = self.rest.chars().next()?;
        if !(first.is_ascii_alphabetic() || first == '_' || first == ':') {
            return None;
        }
        let end = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(self.rest.len());
        let (name, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(name)
    }

    /// Everything up to the next blank.
    fn word(&mut self) -> &'a str {
        let end = self.rest.find([' ', '\t']).unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        word
    }

    /// A quoted label value, unescaped.
    fn quoted(&mut self) -> Result<String, String> {
        if !self.eat('"') {
            return Err("expected a quoted value".to_owned());
        }
        let mut value = String::new();
        let mut chars = self.rest.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => {
                    self.rest = self.rest.get(at + 1..).unwrap_or_default();
                    return Ok(value);
                }
                '\\' => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => return Err(format!("unknown escape \\{other} in a quoted value")),
                    None => break,
                },
                c => value.push(c),
            }
        }
        Err("the quoted value does not end".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(sample: &Sample) -> Vec<(&str, &str)> {
        sample.labels.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect()
    }

    #[test]
    fn samples_with_and_without_labels_comments_and_blank_lines_skipped() {
        let text = "# HELP switchyard_resources_folded resources counted under folded\n\
                    # TYPE switchyard_resources_folded gauge\n\
                    switchyard_resources_folded 3\n\
                    \n\
                    # TYPE switchyard_resource_requests_total counter\n\
                    switchyard_resource_requests_total{kind=\"Ingress\",namespace=\"shop\",resource=\"api\",backend=\"shop/api_80\",status_class=\"2xx\"} 1234\n";
        let samples = parse(text).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[0].name, "switchyard_resources_folded");
        assert!(samples[0].labels.is_empty());
        assert_eq!(samples[0].value, 3.0);
        assert_eq!(samples[1].name, "switchyard_resource_requests_total");
        assert_eq!(
            labels(&samples[1]),
            [
                ("kind", "Ingress"),
                ("namespace", "shop"),
                ("resource", "api"),
                ("backend", "shop/api_80"),
                ("status_class", "2xx")
            ]
        );
        assert_eq!(samples[1].label("backend"), Some("shop/api_80"));
        assert_eq!(samples[1].label("host"), None);
        assert_eq!(samples[1].value, 1234.0);
    }

    #[test]
    fn label_values_are_unescaped() {
        let text = r#"m{a="say \"hi\"",b="C:\\dir\\",c="two\nlines",d="{},= #"} 1"#;
        let samples = parse(text).unwrap();
        assert_eq!(
            labels(&samples[0]),
            [
                ("a", "say \"hi\""),
                ("b", "C:\\dir\\"),
                ("c", "two\nlines"),
                ("d", "{},= #")
            ]
        );
    }

    #[test]
    fn blanks_a_trailing_comma_special_values_and_a_timestamp_are_read() {
        let text = "m { a = \"1\" , b=\"2\", } 0.5 1700000000000\n\
                    inf{} +Inf\n\
                    nan NaN\n\
                    neg -Inf\n\
                    exp 1.5e3\n";
        let samples = parse(text).unwrap();
        assert_eq!(labels(&samples[0]), [("a", "1"), ("b", "2")]);
        assert_eq!(samples[0].value, 0.5);
        assert_eq!(samples[1].value, f64::INFINITY);
        assert!(samples[2].value.is_nan());
        assert_eq!(samples[3].value, f64::NEG_INFINITY);
        assert_eq!(samples[4].value, 1500.0);
    }

    #[test]
    fn a_malformed_line_fails_with_its_number_and_what_is_wrong() {
        let cases = [
            ("m{a=\"1\"} one", "\"one\" is not a number"),
            ("m{a=\"1\"}", "expected a value"),
            ("m{a=1} 1", "label a: expected a quoted value"),
            ("m{a=\"1} 1", "label a: the quoted value does not end"),
            ("m{a=\"\\t\"} 1", "label a: unknown escape \\t in a quoted value"),
            ("m{a=\"1\",a=\"2\"} 1", "label a is given twice"),
            ("m{a=\"1\" b=\"2\"} 1", "expected ',' or '}' after a label"),
            ("m{a} 1", "expected '=' after label a"),
            ("m{\"a\"=\"1\"} 1", "expected a label name or '}'"),
            ("{a=\"1\"} 1", "expected a metric name"),
            ("m 1 2 3", "unexpected \"3\" after the sample"),
            (
                "m 1 soon",
                "expected a timestamp (milliseconds) after the value, not \"soon\"",
            ),
        ];
        for (line, why) in cases {
            let text = format!("# TYPE m counter\nok 1\n{line}\n");
            assert_eq!(
                parse(&text),
                Err(ParseError {
                    line: 3,
                    why: why.to_owned()
                }),
                "{line}"
            );
        }
    }

    #[test]
    fn the_error_reads_with_its_line() {
        let error = parse("m x").unwrap_err();
        assert_eq!(error.to_string(), "line 1: \"x\" is not a number");
    }
}
