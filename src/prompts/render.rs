//! `{{var}}` substitution (§4.5).
//!
//! - One pass over the template: a substituted value is copied as is and
//!   never scanned again, so a value containing `{{x}}` stays literal
//!   (substitution is deliberately non-recursive — user text can never pull
//!   other variables, or secrets, into a prompt).
//! - A placeholder whose variable is missing, or whose value is empty,
//!   becomes `""`, so optional sections disappear. The whitespace around it
//!   is left exactly as the template has it (the spec asks for no tidying).
//! - A placeholder is `{{` + an identifier (`[A-Za-z0-9_]+`) + `}}`; any
//!   other `{{…` is ordinary text and is copied unchanged.

use std::collections::HashMap;

/// Variables for one render: name → value.
#[derive(Clone, Debug, Default)]
pub struct PromptVars(HashMap<String, String>);

impl PromptVars {
    /// No variables.
    pub fn new() -> Self {
        PromptVars::default()
    }

    /// Set `name` (builder style).
    pub fn with(mut self, name: &str, value: impl Into<String>) -> Self {
        self.set(name, value);
        self
    }

    /// Set `name`.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.0.insert(name.to_string(), value.into());
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for PromptVars {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        PromptVars(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// Substitute every `{{name}}` in `template` from `vars` (missing → `""`).
pub fn render(template: &str, vars: &PromptVars) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match placeholder_len(after) {
            Some(name_len) => {
                let name = &after[..name_len];
                if let Some(value) = vars.get(name) {
                    out.push_str(value);
                }
                rest = &after[name_len + 2..];
            }
            None => {
                // Not a placeholder: keep one `{` and rescan from the next
                // character, so `{{{x}}` still finds `{{x}}`.
                out.push('{');
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The placeholder names `template` refers to, in order of first use.
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        match placeholder_len(after) {
            Some(n) => {
                if !names.contains(&&after[..n]) {
                    names.push(&after[..n]);
                }
                rest = &after[n + 2..];
            }
            None => rest = &rest[start + 1..],
        }
    }
    names
}

/// Length of the identifier at the start of `s` when it is followed by `}}`.
fn placeholder_len(s: &str) -> Option<usize> {
    let n = s
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    (n > 0 && s[n..].starts_with("}}")).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_known_variables() {
        let vars = PromptVars::new().with("name", "Ada").with("tier", "member");
        assert_eq!(render("Hi {{name}} ({{tier}})", &vars), "Hi Ada (member)");
    }

    #[test]
    fn missing_and_empty_values_collapse_to_empty_string() {
        let vars = PromptVars::new().with("empty", "");
        assert_eq!(render("a{{missing}}b{{empty}}c", &vars), "abc");
        // Whitespace around a vanished section is left exactly as written.
        assert_eq!(render("x\n{{missing}}\ny", &vars), "x\n\ny");
    }

    #[test]
    fn substitution_is_not_recursive() {
        let vars = PromptVars::new().with("a", "{{b}}").with("b", "secret");
        assert_eq!(render("{{a}}", &vars), "{{b}}");
    }

    #[test]
    fn text_that_is_not_a_placeholder_is_kept() {
        let vars = PromptVars::new().with("x", "1");
        assert_eq!(
            render("{{ x }} {{}} {{x-y}} {x}", &vars),
            "{{ x }} {{}} {{x-y}} {x}"
        );
        assert_eq!(render("{{{x}}}", &vars), "{1}");
        assert_eq!(render("tail {{x", &vars), "tail {{x");
    }

    #[test]
    fn placeholders_are_listed_once_in_order() {
        assert_eq!(placeholders("{{a}} {{b}} {{a}} {{ c }}"), vec!["a", "b"]);
    }
}
