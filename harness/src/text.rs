//! Plain text: what a contract or control says ends up in record lines, error lines, the
//! JSON report and the README's table, so none of its strings or keys may hold a control
//! character (a line break, a terminal escape, NUL) or a bidirectional override, which would
//! make a line read as something it is not.

use std::borrow::Cow;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The first string or key of a TOML file that is not plain text.
#[derive(Clone, Debug, PartialEq)]
pub struct Unprintable {
    /// Where the value (or the key) starts in the file.
    pub offset: usize,
    /// `record[1].name`, as errors name keys.
    pub key: String,
    pub character: char,
    /// The key itself holds the character, not its value.
    pub in_key: bool,
}

impl Unprintable {
    pub fn message(&self) -> String {
        let what = if self.in_key { "the key holds" } else { "holds" };
        format!("{what} {}: names and texts are plain printable text in one line", describe(self.character))
    }
}

/// Whether `c` may not appear in a name or a text: Unicode's control characters (C0, DEL,
/// C1) and the bidirectional embeddings, overrides and isolates.
pub fn is_unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn describe(c: char) -> String {
    let code = format!("U+{:04X}", c as u32);
    match c {
        '\n' => format!("a line break ({code})"),
        '\r' => format!("a carriage return ({code})"),
        '\t' => format!("a tab ({code})"),
        '\0' => format!("NUL ({code})"),
        '\u{1b}' => format!("an escape ({code}, as a terminal colour or cursor code starts)"),
        c if !c.is_control() => format!("a bidirectional control ({code})"),
        _ => format!("a control character ({code})"),
    }
}

/// `text` with every unprintable character written as an escape (`\n`, `\u{1b}`), for a
/// message that must stay one line whatever a file name holds.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unprintable) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if is_unprintable(c) { c.escape_default().to_string() } else { c.to_string() }).collect())
}

/// The first (by place in the file) string or key that is not plain text; none when every
/// one is, or when the text is not TOML at all (its parser then names the syntax error).
pub fn first_unprintable(text: &str) -> Option<Unprintable> {
    let root = DeTable::parse(text).ok()?;
    let mut found = Vec::new();
    table(root.get_ref(), "", &mut found);
    found.into_iter().min_by_key(|u| u.offset)
}

fn joined(path: &str, key: &str) -> String {
    let key = escaped(key);
    if path.is_empty() { key.into_owned() } else { format!("{path}.{key}") }
}

fn table(t: &DeTable, path: &str, found: &mut Vec<Unprintable>) {
    for (key, value) in t {
        let path = joined(path, key.get_ref());
        if let Some(character) = key.get_ref().chars().find(|c| is_unprintable(*c)) {
            found.push(Unprintable { offset: key.span().start, key: path.clone(), character, in_key: true });
        }
        self::value(value, &path, found);
    }
}

fn value(v: &Spanned<DeValue>, path: &str, found: &mut Vec<Unprintable>) {
    match v.get_ref() {
        DeValue::String(s) => {
            if let Some(character) = s.chars().find(|c| is_unprintable(*c)) {
                found.push(Unprintable { offset: v.span().start, key: path.to_string(), character, in_key: false });
            }
        }
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                value(item, &format!("{path}[{i}]"), found);
            }
        }
        DeValue::Table(t) => table(t, path, found),
        DeValue::Integer(_) | DeValue::Float(_) | DeValue::Boolean(_) | DeValue::Datetime(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(text: &str) -> Option<(String, char, bool)> {
        first_unprintable(text).map(|u| (u.key, u.character, u.in_key))
    }

    #[test]
    fn every_string_and_key_is_plain_text_wherever_it_sits() {
        assert_eq!(first("op = \"tf_add\"\n[[record]]\nname = \"f32\"\n"), None);
        assert_eq!(first("bug = \"a\\nb\""), Some(("bug".into(), '\n', false)));
        assert_eq!(first("op = \"tf_add\\u001b[2J\""), Some(("op".into(), '\u{1b}', false)));
        assert_eq!(first("[[record]]\nname = \"a\"\n[[record]]\nname = \"f\\u0000\""), Some(("record[1].name".into(), '\0', false)));
        assert_eq!(
            first("[shapes]\ncases = [{ k = 1 }, { gpu_only = \"x\\ty\" }]"),
            Some(("shapes.cases[1].gpu_only".into(), '\t', false))
        );
        assert_eq!(first("dtypes = { \"o\\u0007ut\" = \"f32\" }"), Some(("dtypes.o\\u{7}ut".into(), '\u{7}', true)));
        assert_eq!(first("about = \"\"\"one\ntwo\"\"\""), Some(("about".into(), '\n', false)));
        assert_eq!(first("bug = \"admin\u{202e}gnp.exe\""), Some(("bug".into(), '\u{202e}', false)));
        // a line continuation inside a multi-line string leaves no line break in the value
        assert_eq!(first("about = \"\"\"one \\\n  two\"\"\""), None);
        // not TOML: the parser names that
        assert_eq!(first("op = ["), None);
    }

    #[test]
    fn the_first_in_the_file_is_named() {
        let u = first_unprintable("a = \"x\"\nb = \"\\u0001\"\nc = \"\\u0002\"").unwrap();
        assert_eq!((u.key.as_str(), u.offset), ("b", 12));
        assert!(u.message().contains("a control character (U+0001)"), "{}", u.message());
    }

    #[test]
    fn escaping_keeps_a_name_on_one_line() {
        assert_eq!(escaped("controls/a b.toml"), "controls/a b.toml");
        assert_eq!(escaped("controls/a\nb\u{1b}.toml"), "controls/a\\nb\\u{1b}.toml");
    }
}
