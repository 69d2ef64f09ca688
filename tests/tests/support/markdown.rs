//! What the book's and the packages' tests read of Markdown.

/// `(target, line)` of every inline link `](target)` outside code blocks and code spans.
pub fn links(markdown: &str) -> Vec<(String, usize)> {
    let mut in_code = false;
    let mut found = Vec::new();
    for (number, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Drop code spans, whose brackets are not links.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = plain.as_str();
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            found.push((after[..end].to_string(), number + 1));
            rest = &after[end..];
        }
    }
    found
}
