//! Every relative link of the repository's Markdown resolves: `](path)` names an existing file or
//! folder, and `](path#anchor)` (or `](#anchor)`) a heading of that Markdown file, with the anchor
//! GitHub derives from it. External links (`http:`, `https:`, `mailto:`) are not followed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The workspace root (this crate is `tests/cases`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Folders never searched: build output, tools, git, and fuzzing corpora.
const SKIPPED: &[&str] = &["target", "build", "node_modules", "corpus", "artifacts"];

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || SKIPPED.contains(&name.as_str()) {
            continue;
        }
        if path.is_dir() {
            markdown_files(&path, out);
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The lines outside fenced code blocks, with inline code spans blanked out.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut out = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                out.push(' ');
            } else {
                out.push(if in_code { ' ' } else { c });
            }
        }
        lines.push((i + 1, out));
    }
    lines
}

/// GitHub's anchor for a heading: lower case, only letters, digits, `-`, `_` and spaces kept,
/// spaces made `-`; a repeated anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

/// The destinations of `[text](dest)` links on one line.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let dest = after[..end].split_whitespace().next().unwrap_or("").to_owned();
        targets.push(dest);
        rest = &after[end..];
    }
    targets
}

#[test]
fn every_markdown_link_resolves() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("README.md")),
        "no Markdown found under {}",
        root.display()
    );
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        for (line_no, line) in prose_lines(&text) {
            for dest in link_targets(&line) {
                if dest.is_empty() || dest.contains("://") || dest.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match dest.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (dest.as_str(), None),
                };
                let target = match path {
                    "" => file.clone(),
                    p => file.parent().unwrap_or(&root).join(p),
                };
                if !target.exists() {
                    broken.push(format!("{shown}:{line_no}: {dest}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if target.extension().is_some_and(|e| e == "md") {
                    let headings = anchors(&std::fs::read_to_string(&target).unwrap_or_default());
                    if !headings.contains(anchor) {
                        broken.push(format!("{shown}:{line_no}: {dest}: no heading with that anchor"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken Markdown links:\n{}", broken.join("\n"));
}
