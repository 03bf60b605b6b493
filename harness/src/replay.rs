//! The one command that reproduces just a failing record's case: its op, record and case,
//! and the flags of the run that shape what the case computes (seed, backend, folders, warp
//! size, repeats), quoted for a POSIX shell.

use std::borrow::Cow;

use crate::runner::RecordResult;

/// What every replay command of a run shares; the backend is the one the run resolved.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    /// `contracts`, as a user runs the binary.
    pub program: String,
    pub seed: u64,
    /// `--contracts`, `--controls`, `--kernels`, `--root`, as the run was given them.
    pub folders: Vec<(String, String)>,
    /// Other flags of the run that change results (`--warp-size 64`, `--repeats 5`,
    /// `--strict-limits`), as words.
    pub extra: Vec<String>,
    /// `host`, `cuda`, `hip`, or `static` (then `--arch <arch> --static`).
    pub backend: String,
    pub arch: String,
}

impl Replay {
    /// The command for a record that failed or errored; None for any other. The case is the
    /// first failing case its line names; a record that errored replays whole (the error
    /// names the case in words only).
    pub fn command(&self, r: &RecordResult) -> Option<String> {
        if !r.red() {
            return None;
        }
        let mut words: Vec<String> = vec![self.program.clone(), "--only".into(), r.op.clone(), "--record".into(), r.record.clone()];
        let case = r.failures.first().filter(|_| r.error.is_none() && self.backend != "static").map(|f| f.case_index);
        if let Some(case) = case {
            words.extend(["--case".into(), case.to_string()]);
        }
        words.extend(["--seed".into(), format!("{:#x}", self.seed)]);
        if self.backend == "static" {
            words.extend(["--arch".into(), self.arch.clone(), "--static".into()]);
        } else {
            words.extend(["--backend".into(), self.backend.clone()]);
        }
        words.push("--no-controls".into());
        for (flag, value) in &self.folders {
            words.extend([flag.clone(), value.clone()]);
        }
        words.extend(self.extra.iter().cloned());
        Some(words.iter().map(|w| shell_word(w)).collect::<Vec<_>>().join(" "))
    }
}

/// A word as a POSIX shell reads it back: as it is when it holds only safe characters, else
/// in single quotes; a control character (which would break the printed line) in `$'...'`.
pub fn shell_word(word: &str) -> Cow<'_, str> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return Cow::Borrowed(word);
    }
    if word.chars().any(char::is_control) {
        let mut out = String::from("$'");
        for c in word.chars() {
            match c {
                '\\' | '\'' => {
                    out.push('\\');
                    out.push(c);
                }
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('\'');
        return Cow::Owned(out);
    }
    Cow::Owned(format!("'{}'", word.replace('\'', "'\\''")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_where_a_shell_needs_it() {
        assert_eq!(shell_word("tf_add"), "tf_add");
        assert_eq!(shell_word("/tmp/a-b/kernels"), "/tmp/a-b/kernels");
        assert_eq!(shell_word("bf16 table, bf16 out"), "'bf16 table, bf16 out'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a\nb"), "$'a\\x0ab'");
    }

    #[test]
    fn a_shell_reads_each_word_back_as_it_was() {
        for word in ["bf16 table, bf16 out", "it's", "$HOME `x` \"q\"", "a\nb\\c'd", "*"] {
            let out = std::process::Command::new("bash").arg("-c").arg(format!("printf %s {}", shell_word(word))).output().unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), word);
        }
    }
}
